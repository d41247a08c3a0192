// mok/dispatcher.cpp — Dispatcher set-up, the layout bookkeeping shared by every style,
// and the pull dispatch.
#include "mok/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/ops.h"
#include "mok/grouping.h"
#include "mok/payload.h"

namespace squeeze::mok {

const char* dispatch_style_name(DispatchStyle s) {
  switch (s) {
    case DispatchStyle::PushNegotiated: return "push-negotiated";
    case DispatchStyle::PushPrivate: return "push-private";
    case DispatchStyle::Pull: return "pull";
    case DispatchStyle::Alltoallv: return "alltoallv";
  }
  return "?";
}
const char* combine_style_name(CombineStyle s) {
  return s == CombineStyle::Push ? "push" : s == CombineStyle::Pull ? "pull" : "alltoallv";
}
DispatchStyle parse_dispatch_style(const std::string& s) {
  for (auto d : {DispatchStyle::PushNegotiated, DispatchStyle::PushPrivate, DispatchStyle::Pull, DispatchStyle::Alltoallv})
    if (s == dispatch_style_name(d)) return d;
  fail("unknown dispatch style '", s, "' (expected push-negotiated, push-private, pull or alltoallv)");
}
CombineStyle parse_combine_style(const std::string& s) {
  if (s == "push") return CombineStyle::Push;
  if (s == "pull") return CombineStyle::Pull;
  if (s == "alltoallv") return CombineStyle::Alltoallv;
  fail("unknown combine style '", s, "' (expected push, pull or alltoallv)");
}

void DispatchHandle::rows_to_f32(const MoeConfig& cfg, float* out) const { decode_rows(cfg, rows_, out, n_rows()); }

Dispatcher::Dispatcher(const MoeConfig& cfg, Transport& t)
    : cfg_(cfg), t_(t), me_(t.rank()), R_(t.size()), EL_(cfg.experts_per_rank()), rb_(cfg.row_bytes()) {
  SQZ_CHECK(t.size() == cfg.R(), "dispatcher: the transport has ", t.size(), " ranks but the config says R=", cfg.R());
  const size_t T = size_t(cfg.T()), K = size_t(cfg.K()), R = size_t(R_), EL = size_t(EL_);
  const size_t cap = size_t(cfg.max_recv_rows());
  tok_pub_ = t.alloc(T * rb_);
  route_pub_ = t.alloc(8 + T * K * 8);
  cnt_mat_ = t.alloc(R * size_t(cfg.E()) * 4);
  priv_cnt_ = t.alloc(R * EL * 4);
  recv_ = t.alloc(cap * rb_);
  recv_meta_ = t.alloc(cap * sizeof(RowMeta));
  seg_pub_ = t.alloc((EL * R + 1) * 8);
  out_pub_ = t.alloc(cap * rb_);
  comb_recv_ = t.alloc(T * K * rb_);
  size_t total = 0;
  for (auto b : {tok_pub_, route_pub_, cnt_mat_, priv_cnt_, recv_, recv_meta_, seg_pub_, out_pub_, comb_recv_})
    total += b.bytes;
  SQZ_CHECK(total == cfg.dispatcher_bytes(), "dispatcher: layout (", total, " B) disagrees with the config (",
            cfg.dispatcher_bytes(), " B)");
  f_pub_ = t.alloc_flags(1);
  f_cnt_ = t.alloc_flags(R_);
  f_pn_done_ = t.alloc_flags(R_);
  f_pp_done_ = t.alloc_flags(R_);
  f_comb_push_ = t.alloc_flags(R_);
  f_comb_pub_ = t.alloc_flags(1);
  f_out_rows_ = t.alloc_flags(1);
  f_dispatch_credit_ = t.alloc_flags(R_);
  f_combine_credit_ = t.alloc_flags(R_);
}

void Dispatcher::begin_round(FlagId credits, uint64_t& round, const char* what) {
  for (int i = 0; i < R_; ++i) {
    const int p = (me_ + i) % R_;
    t_.wait_flag(me_, credits, p, round, p, what);  // >=: a fast peer may already have consumed the next one
  }
  ++round;
}
void Dispatcher::end_round(FlagId credits) {
  for (int i = 0; i < R_; ++i) signal((me_ + i) % R_, credits, me_);
}

void Dispatcher::get_counted(void* dst, int rank, SymBuffer b, size_t off, size_t n, bool payload) {
  if (n == 0) return;
  t_.get(dst, rank, b, off, n);
  if (rank != me_) (payload ? traffic_.payload_bytes : traffic_.meta_bytes) += n;
}
void Dispatcher::put_counted(int rank, SymBuffer b, size_t off, const void* src, size_t n, bool payload) {
  if (n == 0) return;
  t_.put(rank, b, off, src, n);
  if (rank != me_) (payload ? traffic_.payload_bytes : traffic_.meta_bytes) += n;
}
void Dispatcher::signal(int rank, FlagId f, int64_t index) {
  t_.flag_add(rank, f, index, 1);
  if (rank != me_) ++traffic_.signals;
}

void Dispatcher::mark_known() {
  timing_.known_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
}

void Dispatcher::to_payload(const float* src, std::byte* dst, int64_t rows) const { encode_rows(cfg_, src, dst, rows); }
void Dispatcher::from_payload(const std::byte* src, float* dst, int64_t rows) const { decode_rows(cfg_, src, dst, rows); }

void Dispatcher::prepare_home(DispatchHandle& h, const Routing& r) const {
  r.validate(cfg_);
  h.tokens = r.tokens;
  h.K = r.K;
  h.expert = r.expert;
  h.gate = r.gate;
  // Global expert id e = d*EL + local: bucket index equals the expert id.
  const int64_t buckets = int64_t(R_) * EL_;
  ExpertGrouping g = group_by_expert(r.expert, int(buckets));
  h.send_count = std::move(g.count);
  h.send_begin = std::move(g.begin);
  h.send_rows = std::move(g.slots);
  h.dest_seg.assign(size_t(buckets), -1);
}

void Dispatcher::finish_owner_layout(DispatchHandle& h, const std::vector<int64_t>& counts) const {
  // counts[e*R + s]: rows from source s for local expert e.
  h.seg_start.assign(size_t(EL_ * R_ + 1), 0);
  for (size_t i = 0; i < counts.size(); ++i) h.seg_start[i + 1] = h.seg_start[i] + counts[i];
  const size_t n = size_t(h.seg_start.back());
  h.src_rank.resize(n);
  for (int e = 0; e < EL_; ++e)
    for (int s = 0; s < R_; ++s)
      std::fill(h.src_rank.begin() + h.seg_start[size_t(e * R_ + s)],
                h.src_rank.begin() + h.seg_start[size_t(e * R_ + s + 1)], s);
  h.src_index.resize(n);
  h.src_slot.resize(n);
  h.row_gate.resize(n);
}

void Dispatcher::pack_send_rows(const DispatchHandle& h, const float* x, int d, std::byte* dst) const {
  const int64_t b = h.send_begin[size_t(d * EL_)], e = h.send_begin[size_t((d + 1) * EL_)];
  const int64_t H = cfg_.H();
  for (int64_t i = b; i < e; ++i) to_payload(x + (h.send_rows[size_t(i)] / h.K) * H, dst + size_t(i - b) * rb_, 1);
}

DispatchHandle Dispatcher::dispatch(DispatchStyle style, const float* x, const Routing& routing) {
  t_start_ = std::chrono::steady_clock::now();
  timing_ = {};
  DispatchHandle h;
  prepare_home(h, routing);
  begin_round(f_dispatch_credit_, dispatch_round_, "dispatch: previous round consumed");
  switch (style) {
    case DispatchStyle::Pull: dispatch_pull(h, x, routing); break;
    case DispatchStyle::PushNegotiated: dispatch_push_negotiated(h, x, routing); break;
    case DispatchStyle::PushPrivate: dispatch_push_private(h, x); break;
    case DispatchStyle::Alltoallv: dispatch_alltoallv(h, x); break;
  }
  end_round(f_dispatch_credit_);  // every style has copied out all it received
  timing_.done_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
  return h;
}

// --- pull ------------------------------------------------------------------------------

void Dispatcher::dispatch_pull(DispatchHandle& h, const float* x, const Routing& r) {
  plan_pull(h, x, r);
  // 4. Fetch exactly the needed rows into expert order; consecutive tokens in one get.
  h.owned_rows_.resize(size_t(h.n_rows()) * rb_);
  h.rows_ = h.owned_rows_.data();
  for (int64_t row = 0; row < h.n_rows();) {
    int64_t end = row + 1;
    while (end < h.n_rows() && h.src_rank[size_t(end)] == h.src_rank[size_t(row)] &&
           h.src_index[size_t(end)] == h.src_index[size_t(end - 1)] + 1)
      ++end;
    get_counted(h.owned_rows_.data() + (size_t(row) * rb_), h.src_rank[size_t(row)], tok_pub_,
                size_t(h.src_index[size_t(row)]) * rb_, size_t(end - row) * rb_, true);
    row = end;
  }
  t_.flush();
}

void Dispatcher::plan_pull(DispatchHandle& h, const float* x, const Routing& r) {
  const int64_t T = cfg_.T();
  const int K = cfg_.K();
  // 1. Publish in place: tokens and routing in this rank's own memory, then one flag.
  to_payload(x, t_.local(tok_pub_), r.tokens);
  std::byte* rp = t_.local(route_pub_);
  std::memcpy(rp, &r.tokens, 8);
  if (!r.expert.empty()) {
    std::memcpy(rp + 8, r.expert.data(), r.expert.size() * 4);
    std::memcpy(rp + 8 + size_t(T * K) * 4, r.gate.data(), r.gate.size() * 4);
  }
  const uint64_t epoch = ++pub_epoch_;
  t_.flag_add(me_, f_pub_, 0, 1);

  // 2. Read every source's routing as soon as its flag is up.
  const size_t route_bytes = 8 + size_t(T * K) * 8;
  std::vector<std::byte> routes(route_bytes * size_t(R_));
  for (int i = 0; i < R_; ++i) {
    const int s = (me_ + i) % R_;
    t_.wait_round(s, f_pub_, 0, epoch, s, "pull dispatch: tokens published");
    get_counted(routes.data() + (route_bytes * size_t(s)), s, route_pub_, 0, route_bytes, false);
  }
  t_.flush();

  // 3. Layout: rows for local expert e from source s, tokens ascending.
  const int lo = me_ * EL_, E = cfg_.E();
  std::vector<int64_t> counts(size_t(EL_ * R_), 0);
  std::vector<int64_t> to_expert(size_t(R_ * E), 0);  // [source, global expert]: rows
  auto source_view = [&](int s, int64_t& n, const int32_t*& ids, const float*& gates) {
    const std::byte* base = routes.data() + (route_bytes * size_t(s));
    std::memcpy(&n, base, 8);
    SQZ_CHECK(n >= 0 && n <= T, "pull dispatch: rank ", s, " published ", n, " tokens (T=", T, ")");
    ids = reinterpret_cast<const int32_t*>(base + 8);
    gates = reinterpret_cast<const float*>(base + 8 + size_t(T * K) * 4);
  };
  for (int s = 0; s < R_; ++s) {
    int64_t n;
    const int32_t* ids;
    const float* gates;
    source_view(s, n, ids, gates);
    for (int64_t i = 0; i < n * K; ++i) {
      SQZ_CHECK(ids[i] >= 0 && ids[i] < E, "pull dispatch: rank ", s, " routed to expert ", ids[i]);
      ++to_expert[size_t(s * E + ids[i])];
      if (ids[i] >= lo && ids[i] < lo + EL_) ++counts[size_t((ids[i] - lo) * R_ + s)];
    }
  }
  finish_owner_layout(h, counts);
  // Every routing is known, so every owner's layout is: where this rank's rows for
  // expert g = d·EL + e start at d (its experts before e, then the sources before this one).
  for (int d = 0; d < R_; ++d) {
    int64_t base = 0;
    for (int e = 0; e < EL_; ++e) {
      const int g = d * EL_ + e;
      int64_t before = 0, all = 0;
      for (int s = 0; s < R_; ++s) {
        if (s < me_) before += to_expert[size_t(s * E + g)];
        all += to_expert[size_t(s * E + g)];
      }
      h.dest_seg[size_t(g)] = base + before;
      base += all;
    }
  }
  std::vector<int64_t> cursor(h.seg_start.begin(), h.seg_start.end() - 1);
  for (int s = 0; s < R_; ++s) {
    int64_t n;
    const int32_t* ids;
    const float* gates;
    source_view(s, n, ids, gates);
    for (int64_t i = 0; i < n * K; ++i) {
      if (ids[i] < lo || ids[i] >= lo + EL_) continue;
      const size_t row = size_t(cursor[size_t((ids[i] - lo) * R_ + s)]++);
      h.src_index[row] = int32_t(i / K);
      h.src_slot[row] = int32_t(i % K);
      h.row_gate[row] = gates[i];
    }
  }
  mark_known();
}

#ifndef SQUEEZE_HAVE_MPI
void Dispatcher::dispatch_alltoallv(DispatchHandle&, const float*) { fail("the Alltoallv style needs an MPI build"); }
void Dispatcher::dispatch_cached_alltoallv(const DispatchHandle&, const float*, float*) {
  fail("the Alltoallv style needs an MPI build");
}
void Dispatcher::combine_alltoallv(const DispatchHandle&, const float*) { fail("the Alltoallv style needs an MPI build"); }
#endif

// --- the pull dispatch in halves, for the fused pipeline ---------------------------------

DispatchHandle Dispatcher::begin_pull_dispatch(const float* x, const Routing& routing) {
  t_start_ = std::chrono::steady_clock::now();
  timing_ = {};
  DispatchHandle h;
  prepare_home(h, routing);
  begin_round(f_dispatch_credit_, dispatch_round_, "dispatch: previous round consumed");
  plan_pull(h, x, routing);
  return h;
}

void Dispatcher::fetch_rows(const DispatchHandle& h, int64_t row, int64_t n, std::byte* dst) {
  SQZ_CHECK(row >= 0 && n >= 0 && row + n <= h.n_rows(), "fetch rows: [", row, ", ", row + n, ") is outside the ",
            h.n_rows(), " rows of the dispatch");
  uint64_t remote = 0;
  std::unique_lock<std::mutex> lock(fetch_mu_, std::defer_lock);
  bool via_transport = false;
  for (int64_t i = row; i < row + n;) {
    const int s = h.src_rank[size_t(i)];
    int64_t end = i + 1;
    while (end < row + n && h.src_rank[size_t(end)] == s && h.src_index[size_t(end)] == h.src_index[size_t(end - 1)] + 1)
      ++end;
    const size_t off = size_t(h.src_index[size_t(i)]) * rb_, bytes = size_t(end - i) * rb_;
    if (const std::byte* src = t_.peer(s, tok_pub_)) {
      std::memcpy(dst + size_t(i - row) * rb_, src + off, bytes);
    } else {
      // Transports that need calls (one-sided RMA, the link model) take one caller at a time.
      if (!lock.owns_lock()) lock.lock();
      t_.get(dst + size_t(i - row) * rb_, s, tok_pub_, off, bytes);
      via_transport = true;
    }
    if (s != me_) remote += bytes;
    i = end;
  }
  if (via_transport) t_.flush();
  if (!lock.owns_lock()) lock.lock();
  traffic_.payload_bytes += remote;
}

void Dispatcher::end_pull_dispatch() {
  end_round(f_dispatch_credit_);
  timing_.done_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
}

}  // namespace squeeze::mok
