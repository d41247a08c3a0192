// mok/dispatch_push.cpp — the two push dispatches (negotiated offsets; private regions)
// and the cached dispatch used by the backward.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "mok/dispatcher.h"

namespace squeeze::mok {

// DeepEP-style: all-gather per-expert counts, prefix sums give write offsets, put rows
// (and their metadata) in final place, then one "done" signal per destination.
void Dispatcher::dispatch_push_negotiated(DispatchHandle& h, const float* x, const Routing& r) {
  const int E = cfg_.E();
  const uint64_t epoch = ++pn_epoch_;
  // 1. Count exchange: this rank's per-expert counts into row `me` of every count matrix.
  std::vector<int32_t> mine(static_cast<size_t>(E));
  for (int e = 0; e < E; ++e) mine[size_t(e)] = int32_t(h.send_count[size_t(e)]);
  for (int i = 0; i < R_; ++i) {
    const int d = (me_ + i) % R_;
    put_counted(d, cnt_mat_, size_t(me_ * E) * 4, mine.data(), size_t(E) * 4, false);
  }
  t_.flush();
  for (int d = 0; d < R_; ++d) signal(d, f_cnt_, me_);
  for (int s = 0; s < R_; ++s) t_.wait_round(me_, f_cnt_, s, epoch, s, "push dispatch: counts");
  const int32_t* C = reinterpret_cast<const int32_t*>(t_.local(cnt_mat_));  // [s][e]
  mark_known();

  // 2. Prefix sums: where each (source, expert) segment starts at its owner.
  for (int d = 0; d < R_; ++d) {
    int64_t base = 0;
    for (int e = 0; e < EL_; ++e) {
      const int g = d * EL_ + e;
      int64_t before = 0;
      for (int s = 0; s < me_; ++s) before += C[s * E + g];
      h.dest_seg[size_t(g)] = base + before;
      for (int s = 0; s < R_; ++s) base += C[s * E + g];
    }
  }
  std::vector<int64_t> counts(size_t(EL_ * R_));
  for (int e = 0; e < EL_; ++e)
    for (int s = 0; s < R_; ++s) counts[size_t(e * R_ + s)] = C[s * E + me_ * EL_ + e];
  finish_owner_layout(h, counts);

  // 3. Write rows and metadata straight into their final place at each owner.
  std::vector<RowMeta> meta;
  for (int i = 0; i < R_; ++i) {
    const int d = (me_ + i) % R_;
    const int64_t b = h.send_begin[size_t(d * EL_)], n = h.send_begin[size_t((d + 1) * EL_)] - b;
    staging_.resize(size_t(n) * rb_);
    pack_send_rows(h, x, d, staging_.data());
    meta.resize(size_t(n));
    for (int64_t j = 0; j < n; ++j) {
      const int32_t tk = h.send_rows[size_t(b + j)];
      meta[size_t(j)] = {tk / h.K, tk % h.K, h.gate[size_t(tk)]};
    }
    for (int e = 0; e < EL_; ++e) {
      const int g = d * EL_ + e;
      const int64_t off = h.send_begin[size_t(g)] - b, cnt = h.send_count[size_t(g)];
      put_counted(d, recv_, size_t(h.dest_seg[size_t(g)]) * rb_, staging_.data() + (size_t(off) * rb_), size_t(cnt) * rb_,
                  true);
      put_counted(d, recv_meta_, size_t(h.dest_seg[size_t(g)]) * sizeof(RowMeta), meta.data() + (size_t(off)),
                  size_t(cnt) * sizeof(RowMeta), false);
    }
    t_.flush();  // staging is reused for the next destination
  }
  for (int d = 0; d < R_; ++d) signal(d, f_pn_done_, me_);
  for (int s = 0; s < R_; ++s) t_.wait_round(me_, f_pn_done_, s, epoch, s, "push dispatch: rows");

  // 4. Rows are already in expert order in the receive buffer. One local copy still:
  // the dispatch's credit hands the buffer back to the senders (a push-private or
  // cached dispatch may write it as soon as every rank has credited this round).
  const RowMeta* m = reinterpret_cast<const RowMeta*>(t_.local(recv_meta_));
  for (int64_t i = 0; i < h.n_rows(); ++i) {
    h.src_index[size_t(i)] = m[i].index;
    h.src_slot[size_t(i)] = m[i].slot;
    h.row_gate[size_t(i)] = m[i].gate;
  }
  h.owned_rows_.assign(t_.local(recv_), t_.local(recv_) + size_t(h.n_rows()) * rb_);
  h.rows_ = h.owned_rows_.data();
}

// pplx-style: source s owns region s (max_rows_per_pair rows) in every receiver, writes
// its rows there grouped by expert (with metadata and per-expert counts unless the
// receiver already knows them), then raises one flag per receiver. Returns the epoch.
uint64_t Dispatcher::send_private(const DispatchHandle& h, const float* x, bool with_meta) {
  const uint64_t epoch = ++pp_epoch_;
  const size_t region = size_t(cfg_.max_rows_per_pair());
  std::vector<RowMeta> meta;
  std::vector<int32_t> cnt(static_cast<size_t>(EL_));
  for (int i = 0; i < R_; ++i) {
    const int d = (me_ + i) % R_;
    const int64_t b = h.send_begin[size_t(d * EL_)], n = h.send_begin[size_t((d + 1) * EL_)] - b;
    staging_.resize(size_t(n) * rb_);
    pack_send_rows(h, x, d, staging_.data());
    put_counted(d, recv_, size_t(me_) * region * rb_, staging_.data(), size_t(n) * rb_, true);
    if (with_meta) {
      meta.resize(size_t(n));
      for (int64_t j = 0; j < n; ++j) {
        const int32_t tk = h.send_rows[size_t(b + j)];
        meta[size_t(j)] = {tk / h.K, tk % h.K, h.gate[size_t(tk)]};
      }
      put_counted(d, recv_meta_, size_t(me_) * region * sizeof(RowMeta), meta.data(), size_t(n) * sizeof(RowMeta),
                  false);
      for (int e = 0; e < EL_; ++e) cnt[size_t(e)] = int32_t(h.send_count[size_t(d * EL_ + e)]);
      put_counted(d, priv_cnt_, size_t(me_ * EL_) * 4, cnt.data(), size_t(EL_) * 4, false);
    }
    t_.flush();
    signal(d, f_pp_done_, me_);
  }
  return epoch;
}

void Dispatcher::dispatch_push_private(DispatchHandle& h, const float* x) {
  const uint64_t epoch = send_private(h, x, true);
  const size_t region = size_t(cfg_.max_rows_per_pair());
  for (int s = 0; s < R_; ++s) t_.wait_round(me_, f_pp_done_, s, epoch, s, "push-private dispatch: rows");
  mark_known();
  const int32_t* pc = reinterpret_cast<const int32_t*>(t_.local(priv_cnt_));  // [s][e]
  std::vector<int64_t> counts(size_t(EL_ * R_));
  for (int s = 0; s < R_; ++s) {
    int64_t total = 0;
    for (int e = 0; e < EL_; ++e) {
      SQZ_CHECK(pc[s * EL_ + e] >= 0, "push-private dispatch: rank ", s, " posted count ", pc[s * EL_ + e]);
      counts[size_t(e * R_ + s)] = pc[s * EL_ + e];
      total += pc[s * EL_ + e];
    }
    SQZ_CHECK(size_t(total) <= region, "push-private dispatch: rank ", s, " posted ", total, " rows (region ", region,
              ")");
  }
  finish_owner_layout(h, counts);
  h.owned_rows_.resize(size_t(h.n_rows()) * rb_);
  h.rows_ = h.owned_rows_.data();
  collect_private(h, h.owned_rows_.data(), &h);
}

// Compacts the private regions into expert-contiguous rows (dst) and, when meta_out,
// the per-row metadata into that handle.
void Dispatcher::collect_private(const DispatchHandle& h, std::byte* dst, DispatchHandle* meta_out) {
  const size_t region = size_t(cfg_.max_rows_per_pair());
  const std::byte* rows = t_.local(recv_);
  const RowMeta* meta = reinterpret_cast<const RowMeta*>(t_.local(recv_meta_));
  for (int s = 0; s < R_; ++s) {
    size_t in_region = 0;  // source s wrote its rows for experts 0..EL-1 back to back
    for (int e = 0; e < EL_; ++e) {
      const int64_t b = h.seg_start[size_t(e * R_ + s)], n = h.seg_start[size_t(e * R_ + s + 1)] - b;
      if (n > 0) std::memcpy(dst + size_t(b) * rb_, rows + (size_t(s) * region + in_region) * rb_, size_t(n) * rb_);
      if (meta_out)
        for (int64_t j = 0; j < n; ++j) {
          const RowMeta& m = meta[size_t(s) * region + in_region + size_t(j)];
          meta_out->src_index[size_t(b + j)] = m.index;
          meta_out->src_slot[size_t(b + j)] = m.slot;
          meta_out->row_gate[size_t(b + j)] = m.gate;
        }
      in_region += size_t(n);
    }
  }
}

// Pull: new rows in place of the tokens, one flag; the rows are then read like a dispatch's.
void Dispatcher::publish_cached(const DispatchHandle& h, const float* x) {
  to_payload(x, t_.local(tok_pub_), h.tokens);
  const uint64_t epoch = ++pub_epoch_;
  t_.flag_add(me_, f_pub_, 0, 1);
  for (int i = 0; i < R_; ++i) {
    const int s = (me_ + i) % R_;
    t_.wait_round(s, f_pub_, 0, epoch, s, "pull dispatch (cached): rows published");
  }
}

void Dispatcher::begin_cached_pull(const DispatchHandle& h, const float* x) {
  SQZ_CHECK(h.seg_start.size() == size_t(EL_ * R_ + 1), "cached dispatch: the handle is not from a dispatch");
  begin_round(f_dispatch_credit_, dispatch_round_, "cached dispatch: previous round consumed");
  publish_cached(h, x);
}

void Dispatcher::dispatch_cached(DispatchStyle style, const DispatchHandle& h, const float* x, float* out) {
  SQZ_CHECK(h.seg_start.size() == size_t(EL_ * R_ + 1), "cached dispatch: the handle is not from a dispatch");
  begin_round(f_dispatch_credit_, dispatch_round_, "cached dispatch: previous round consumed");
  if (style == DispatchStyle::Alltoallv) {
    dispatch_cached_alltoallv(h, x, out);
    end_round(f_dispatch_credit_);
    return;
  }
  if (style == DispatchStyle::Pull) {
    publish_cached(h, x);
    std::vector<std::byte> rows(size_t(h.n_rows()) * rb_);
    fetch_rows(h, 0, h.n_rows(), rows.data());
    end_round(f_dispatch_credit_);
    from_payload(rows.data(), out, h.n_rows());
    return;
  }
  // Both push styles: the owner already knows every count, so private regions suffice.
  const uint64_t epoch = send_private(h, x, false);
  for (int s = 0; s < R_; ++s) t_.wait_round(me_, f_pp_done_, s, epoch, s, "push dispatch (cached): rows");
  std::vector<std::byte> rows(size_t(h.n_rows()) * rb_);
  collect_private(h, rows.data(), nullptr);
  end_round(f_dispatch_credit_);
  from_payload(rows.data(), out, h.n_rows());
}

}  // namespace squeeze::mok
