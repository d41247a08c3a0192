// mok/dispatcher.h — dispatch (tokens to their experts' ranks) and combine (expert
// outputs back home), three ways that share one output contract.
//
// Output contract of every dispatch, on the rank that owns the experts: for each local
// expert e, a contiguous block of received rows, ordered by (source rank, token index),
// with per row its source rank, source token index, top-k slot and gate weight. All three
// styles produce the same layout, so downstream code (and tests) cannot tell them apart.
//
//  - PushNegotiated (DeepEP-style): sources all-gather per-expert counts, prefix sums
//    give each source its write offsets, sources put rows in final place, then signal.
//  - PushPrivate (pplx-style): each source owns a region in every receiver, writes
//    there without negotiation, posts a count; the receiver compacts.
//  - Pull (MoK): sources publish tokens and routing in their own memory and raise one
//    flag; the expert owner reads all routing, then gets exactly the rows it needs
//    straight into expert-contiguous order.
//
// Buffer reuse is ordered by credits: after a dispatch (or cached dispatch) each rank
// tells every rank "I consumed your round", and no rank writes its published buffers or
// a peer's receive buffers for the next round before every rank's credit for the last
// one is in; combines likewise. So ranks may loop forward -> forward with no barrier,
// and since no writer can get a round ahead, every data-flag wait is exact: a flag past
// the expected round means the ranks' call sequences differ, and it throws.
// A handle owns its rows (rows() is valid as long as the handle).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "mok/config.h"
#include "mok/router.h"
#include "mok/transport.h"

namespace squeeze::mok {

// Alltoallv (both): the MPI collective baseline (mok/mpi_dispatch_alltoallv.cpp), MPI ranks only.
enum class DispatchStyle { PushNegotiated, PushPrivate, Pull, Alltoallv };
enum class CombineStyle { Push, Pull, Alltoallv };
const char* dispatch_style_name(DispatchStyle s);
const char* combine_style_name(CombineStyle s);
DispatchStyle parse_dispatch_style(const std::string& s);
CombineStyle parse_combine_style(const std::string& s);

// Bytes this rank moved to or from other ranks (its own rows do not count).
struct Traffic {
  uint64_t payload_bytes = 0;
  uint64_t meta_bytes = 0;  // counts, routing, row metadata, segment tables
  uint64_t signals = 0;     // flag updates sent to other ranks
  void clear() { *this = {}; }
};

// What a dispatch returns; reused by combine, by the cached dispatch of the backward
// and by the combine of input gradients.
struct DispatchHandle {
  // --- home side: this rank's tokens
  int64_t tokens = 0;
  int K = 0;
  std::vector<int32_t> expert;        // [tokens, K]
  std::vector<float> gate;            // [tokens, K]
  std::vector<int64_t> send_count;    // [R, EL] rows sent to (rank d, local expert e)
  std::vector<int32_t> send_rows;     // t*K+k, grouped by d, then e, then t
  std::vector<int64_t> send_begin;    // [R*EL + 1] into send_rows
  std::vector<int64_t> dest_seg;      // [R, EL] first row of this rank's segment at d (-1: unknown)

  // --- owner side: rows received for the local experts
  std::vector<int64_t> seg_start;     // [EL*R + 1]: rows from source s for expert e start at seg_start[e*R+s]
  std::vector<int32_t> src_rank, src_index, src_slot;  // per row
  std::vector<float> row_gate;                         // per row

  int64_t n_rows() const { return int64_t(src_rank.size()); }
  int64_t expert_begin(int e, int R) const { return seg_start[size_t(e * R)]; }
  // Received rows in the payload dtype, [n_rows, H]; see the lifetime note above.
  const std::byte* rows() const { return rows_; }
  // The received rows as f32 [n_rows, H].
  void rows_to_f32(const MoeConfig& cfg, float* out) const;

  const std::byte* rows_ = nullptr;
  std::vector<std::byte> owned_rows_;
};

// When the owner knew what to read (pull: all routing read; push: all counts in),
// seconds after the dispatch call began; for the signalling-latency benchmark.
struct DispatchTiming {
  double known_s = 0;
  double done_s = 0;
};

class Dispatcher {
 public:
  // Collective: allocates cfg.dispatcher_bytes() of symmetric memory on every rank.
  Dispatcher(const MoeConfig& cfg, Transport& transport);

  // x [routing.tokens, H] f32 -> handle with this rank's received rows.
  DispatchHandle dispatch(DispatchStyle style, const float* x, const Routing& routing);
  // The same routing as `h`, new rows x [tokens, H] (combine's backward): out [n_rows, H].
  // Push styles write into private regions (counts are already known); Pull gets.
  void dispatch_cached(DispatchStyle style, const DispatchHandle& h, const float* x, float* out);

  struct CombineOut {
    float* slot_rows = nullptr;   // optional [tokens, K, H]: each returned row, unweighted
    float* out = nullptr;         // optional [tokens, H]: sum over slots of weight * row
    bool weighted = true;         // weight = gate (true) or 1 (input-gradient combine)
  };
  // rows [n_rows, H] f32 in the handle's row order -> home rank's tokens.
  void combine(CombineStyle style, const DispatchHandle& h, const float* rows, const CombineOut& out);

  // The fused pipeline (mok/pipeline.h) runs the pull dispatch and the pull combine in
  // pieces. begin_pull_dispatch publishes this rank's tokens and routing and lays out the
  // rows it will receive without fetching any (rows() stays null); fetch_rows copies
  // received rows [row, row + n) in payload format, from any thread; end_pull_dispatch
  // releases the round once every row is fetched. open_outputs waits for the combine
  // credit and returns this rank's published-output buffer [n_rows, row_bytes], which the
  // caller fills while the combine runs: the owner calls publish_output_rows(n) (from any
  // thread) once rows [0, n) are final; combine_streamed (one thread, while the experts
  // run) sums this rank's tokens, reading each slot in place (or by one get per run of
  // published rows) as soon as its owner has published it, and returns false if
  // `cancelled` is raised first; close_outputs(n_rows) ends the round once every row is
  // published and combine_streamed has returned. The handle must come from a pull dispatch
  // (every segment's place known).
  DispatchHandle begin_pull_dispatch(const float* x, const Routing& routing);
  // The cached dispatch's pull in the same way: publishes x [h.tokens, H] for `h`'s rows.
  void begin_cached_pull(const DispatchHandle& h, const float* x);
  void fetch_rows(const DispatchHandle& h, int64_t row, int64_t n, std::byte* dst);
  void end_pull_dispatch();
  std::byte* open_outputs();
  void publish_output_rows(int64_t rows);
  bool combine_streamed(const DispatchHandle& h, const CombineOut& out, const std::atomic<bool>& cancelled);
  void close_outputs(int64_t rows);

  void barrier() { t_.barrier(); }
  const Traffic& traffic() const { return traffic_; }
  void clear_traffic() { traffic_.clear(); }
  const DispatchTiming& last_timing() const { return timing_; }
  const MoeConfig& config() const { return cfg_; }
  Transport& transport() { return t_; }

 private:
  struct RowMeta {
    int32_t index, slot;
    float gate;
  };
  void prepare_home(DispatchHandle& h, const Routing& r) const;
  void finish_owner_layout(DispatchHandle& h, const std::vector<int64_t>& counts) const;
  void to_payload(const float* src, std::byte* dst, int64_t rows) const;
  void from_payload(const std::byte* src, float* dst, int64_t rows) const;
  void pack_send_rows(const DispatchHandle& h, const float* x, int d, std::byte* dst) const;
  void get_counted(void* dst, int rank, SymBuffer b, size_t off, size_t n, bool payload);
  void put_counted(int rank, SymBuffer b, size_t off, const void* src, size_t n, bool payload);
  void signal(int rank, FlagId f, int64_t index);
  // Credits: wait until every rank consumed this rank's previous round; then (end) tell
  // every rank this one consumed theirs.
  void begin_round(FlagId credits, uint64_t& round, const char* what);
  void end_round(FlagId credits);
  void mark_known();

  void dispatch_pull(DispatchHandle& h, const float* x, const Routing& r);
  // Steps 1-3 of the pull dispatch: publish, read every routing, lay out (no rows fetched).
  void plan_pull(DispatchHandle& h, const float* x, const Routing& r);
  void publish_cached(const DispatchHandle& h, const float* x);
  void dispatch_push_negotiated(DispatchHandle& h, const float* x, const Routing& r);
  void dispatch_push_private(DispatchHandle& h, const float* x);
  uint64_t send_private(const DispatchHandle& h, const float* x, bool with_meta);
  void collect_private(const DispatchHandle& h, std::byte* dst_rows, DispatchHandle* meta_out);
  // Both point slot_rows_[t·K + k] at slot (t, k)'s row in payload format: push where it
  // landed (comb_recv_); pull in the owner's published outputs when this process can
  // address them (Transport::peer), else gathered into slots_.
  void combine_push(const DispatchHandle& h);
  // The Alltoallv style (MPI builds; elsewhere an error).
  void dispatch_alltoallv(DispatchHandle& h, const float* x);
  void dispatch_cached_alltoallv(const DispatchHandle& h, const float* x, float* out);
  void combine_alltoallv(const DispatchHandle& h, const float* rows);
  void alltoallv_rows(const DispatchHandle& h, const std::byte* send, std::byte* recv, size_t unit);
  void permute_received(const DispatchHandle& h, const std::byte* recv, std::byte* out, size_t unit) const;
  void combine_pull(const DispatchHandle& h);  // the outputs are in out_pub_ already
  // Every combine sums a token's slots in ascending expert order (the order the streamed
  // combine meets them), one add_slot each, so that every style agrees bit for bit.
  void sum_slots(const DispatchHandle& h, const CombineOut& out);
  void add_slot(const DispatchHandle& h, const CombineOut& out, int64_t slot, const std::byte* row, float* tmp) const;
  // How many rows of `owner`'s open outputs are published (at least `need`), polling its
  // progress flag; -1 if `cancelled` was raised first.
  int64_t wait_published(int owner, int64_t need, const std::atomic<bool>& cancelled);

  MoeConfig cfg_;
  Transport& t_;
  int me_, R_, EL_;
  size_t rb_;
  // Symmetric buffers (see MoeConfig::dispatcher_bytes for their sizes).
  SymBuffer tok_pub_, route_pub_, cnt_mat_, priv_cnt_, recv_, recv_meta_, seg_pub_, out_pub_, comb_recv_;
  // Flags: *_epoch_ counts how many times each was raised, equal on all ranks.
  FlagId f_pub_, f_cnt_, f_pn_done_, f_pp_done_, f_comb_push_, f_comb_pub_;
  // Rows of out_pub_ published: kRowRound per finished pull-combine round (cpub_epoch_)
  // plus the rows published so far in the open one.
  FlagId f_out_rows_;
  static constexpr uint64_t kRowRound = uint64_t(1) << 40;
  int64_t rows_published_ = 0;
  uint64_t pub_epoch_ = 0, pn_epoch_ = 0, pp_epoch_ = 0, cpush_epoch_ = 0, cpub_epoch_ = 0;
  // Credit flags [R] (slot s: rank s consumed round) and rounds started, per phase.
  FlagId f_dispatch_credit_, f_combine_credit_;
  uint64_t dispatch_round_ = 0, combine_round_ = 0;
  std::vector<std::byte> staging_;
  std::vector<std::byte> a2a_recv_;  // Alltoallv combine: rows back home, in send order
  std::vector<std::byte> slots_;  // pull combine's gathered slots; kept so that its pages stay mapped
  std::vector<const std::byte*> slot_rows_;
  Traffic traffic_;
  std::mutex fetch_mu_;  // fetch_rows: traffic_ and transport calls from several threads
  bool outputs_open_ = false;
  DispatchTiming timing_;
  std::chrono::steady_clock::time_point t_start_;
};

}  // namespace squeeze::mok
