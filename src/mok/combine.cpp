// mok/combine.cpp — expert outputs back to each token's home rank, push or pull, then
// the gate-weighted sum over the top-k slots.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/cpu/ops.h"
#include "mok/dispatcher.h"

namespace squeeze::mok {

// Owner puts each output row into slot (token, k) of its home rank, then signals it.
void Dispatcher::combine_push(const DispatchHandle& h) {
  const uint64_t epoch = ++cpush_epoch_;
  const int K = cfg_.K();
  for (int64_t i = 0; i < h.n_rows(); ++i)
    put_counted(h.src_rank[size_t(i)], comb_recv_, size_t(h.src_index[size_t(i)] * K + h.src_slot[size_t(i)]) * rb_,
                staging_.data() + (size_t(i) * rb_), rb_, true);
  t_.flush();
  for (int i = 0; i < R_; ++i) signal((me_ + i) % R_, f_comb_push_, me_);
  for (int s = 0; s < R_; ++s) t_.wait_round(me_, f_comb_push_, s, epoch, s, "push combine: rows");
  const std::byte* landed = t_.local(comb_recv_);
  slot_rows_.resize(size_t(h.tokens * K));
  for (size_t i = 0; i < slot_rows_.size(); ++i) slot_rows_[i] = landed + i * rb_;
}

// Owner publishes its output rows in place (expert order) and raises one flag. Each home
// rank finds its rows there: it reads them in place when this process can address the
// owner's memory (in-process ranks, MPI shared-memory windows: no copy at all), else gets
// its segments, one get per (owner, expert), and scatters them to its slots.
void Dispatcher::combine_pull(const DispatchHandle& h) {
  std::memcpy(t_.local(seg_pub_), h.seg_start.data(), h.seg_start.size() * 8);
  const uint64_t epoch = ++cpub_epoch_;
  t_.flag_add(me_, f_out_rows_, 0, kRowRound);  // keeps the streamed combine's count in step
  t_.flag_add(me_, f_comb_pub_, 0, 1);

  const int K = cfg_.K();
  slot_rows_.assign(size_t(h.tokens * K), nullptr);
  std::vector<int64_t> seg(size_t(EL_ * R_ + 1));
  for (int i = 0; i < R_; ++i) {
    const int d = (me_ + i) % R_;
    const int64_t b = h.send_begin[size_t(d * EL_)], n = h.send_begin[size_t((d + 1) * EL_)] - b;
    if (n == 0) continue;  // nothing to read from d: its credit (below) still orders reuse
    t_.wait_round(d, f_comb_pub_, 0, epoch, d, "pull combine: outputs published");
    bool known = true;
    for (int e = 0; e < EL_; ++e) known = known && h.dest_seg[size_t(d * EL_ + e)] >= 0;
    if (!known) {
      get_counted(seg.data(), d, seg_pub_, 0, seg.size() * 8, false);
      t_.flush();
    }
    const auto start_of = [&](int e) { return known ? h.dest_seg[size_t(d * EL_ + e)] : seg[size_t(e * R_ + me_)]; };
    if (const std::byte* owner = t_.peer(d, out_pub_)) {
      for (int e = 0; e < EL_; ++e) {
        const int g = d * EL_ + e;
        for (int64_t j = 0; j < h.send_count[size_t(g)]; ++j)
          slot_rows_[size_t(h.send_rows[size_t(h.send_begin[size_t(g)] + j)])] = owner + size_t(start_of(e) + j) * rb_;
      }
      if (d != me_) traffic_.payload_bytes += uint64_t(n) * rb_;  // read across, though not by get
      continue;
    }
    staging_.resize(size_t(n) * rb_);
    for (int e = 0; e < EL_; ++e) {
      const int g = d * EL_ + e;
      get_counted(staging_.data() + (size_t(h.send_begin[size_t(g)] - b) * rb_), d, out_pub_, size_t(start_of(e)) * rb_,
                  size_t(h.send_count[size_t(g)]) * rb_, true);
    }
    t_.flush();
    if (slots_.size() < size_t(h.tokens * K) * rb_) slots_.resize(size_t(h.tokens * K) * rb_);
    for (int64_t j = 0; j < n; ++j) {
      std::byte* slot = slots_.data() + (size_t(h.send_rows[size_t(b + j)]) * rb_);
      std::memcpy(slot, staging_.data() + (size_t(j) * rb_), rb_);
      slot_rows_[size_t(h.send_rows[size_t(b + j)])] = slot;
    }
  }
}

void Dispatcher::combine(CombineStyle style, const DispatchHandle& h, const float* rows, const CombineOut& out) {
  SQZ_CHECK(h.seg_start.size() == size_t(EL_ * R_ + 1), "combine: the handle is not from a dispatch");
  SQZ_CHECK(!outputs_open_, "combine: the published outputs are open (open_outputs without close_outputs)");
  begin_round(f_combine_credit_, combine_round_, "combine: previous round consumed");
  if (style == CombineStyle::Push) {
    staging_.resize(size_t(h.n_rows()) * rb_);
    to_payload(rows, staging_.data(), h.n_rows());
    combine_push(h);
  } else if (style == CombineStyle::Alltoallv) {
    combine_alltoallv(h, rows);
  } else {
    to_payload(rows, t_.local(out_pub_), h.n_rows());
    combine_pull(h);
  }
  sum_slots(h, out);
}

std::byte* Dispatcher::open_outputs() {
  SQZ_CHECK(!outputs_open_, "combine: the published outputs are already open");
  begin_round(f_combine_credit_, combine_round_, "combine: previous round consumed");
  outputs_open_ = true;
  return t_.local(out_pub_);
}

void Dispatcher::add_slot(const DispatchHandle& h, const CombineOut& out, int64_t slot, const std::byte* row,
                          float* tmp) const {
  const int64_t H = cfg_.H();
  float* f = out.slot_rows ? out.slot_rows + slot * H : tmp;
  from_payload(row, f, 1);
  if (out.out) kernels::cpu::ops().axpy(out.weighted ? h.gate[size_t(slot)] : 1.0f, f, out.out + (slot / h.K) * H, H);
}

void Dispatcher::sum_slots(const DispatchHandle& h, const CombineOut& out) {
  // The sum reads the rows where they are (push: the receive buffer; pull: possibly the
  // owners' published outputs), so this round's buffers are released only after it.
  const int64_t H = cfg_.H();
  const int K = cfg_.K();
  std::vector<float> tmp(static_cast<size_t>(H));
  std::vector<int> order(static_cast<size_t>(K));
  if (out.out) std::memset(out.out, 0, size_t(h.tokens * H) * 4);
  for (int64_t t = 0; t < h.tokens; ++t) {
    const int32_t* expert = h.expert.data() + t * K;
    for (int k = 0; k < K; ++k) order[size_t(k)] = k;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return expert[a] < expert[b]; });
    for (int k : order) add_slot(h, out, t * K + k, slot_rows_[size_t(t * K + k)], tmp.data());
  }
  end_round(f_combine_credit_);
}

}  // namespace squeeze::mok
