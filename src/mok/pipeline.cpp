// mok/pipeline.cpp — the ring, its workers and the minibatch plan.
#include "mok/pipeline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "mok/payload.h"

namespace squeeze::mok {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// What the workers share. Counters count minibatches: filled[s] = how many of slot s's
// minibatches have landed, consumed[s] = how many the compute workers are done with.
// Workers outnumber the cores, so a wait spins only briefly and then sleeps on `changed`
// (every counter update notifies it): a waiting worker gives its core to one with work.
struct Ring {
  Ring(int slots, size_t slot_bytes)
      : data(size_t(slots) * slot_bytes), slot_bytes(slot_bytes), filled(new std::atomic<int64_t>[size_t(slots)]),
        consumed(new std::atomic<int64_t>[size_t(slots)]), arrivals(new std::atomic<int>[size_t(slots)]) {
    for (int s = 0; s < slots; ++s) filled[s] = consumed[s] = arrivals[s] = 0;
  }
  std::byte* slot(int s) { return data.data() + size_t(s) * slot_bytes; }
  void raise(std::atomic<int64_t>& counter, int64_t value) {
    {
      std::lock_guard<std::mutex> lock(mu);  // a waiter between its check and its sleep cannot miss it
      counter.store(value, std::memory_order_release);
    }
    changed.notify_all();
  }
  std::vector<std::byte> data;
  size_t slot_bytes;
  std::unique_ptr<std::atomic<int64_t>[]> filled, consumed;
  std::unique_ptr<std::atomic<int>[]> arrivals;  // compute workers done with the slot's minibatch
  std::mutex mu;
  std::condition_variable changed;
};

// First error wins; every waiting worker sees `failed` and leaves.
struct Failure {
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::exception_ptr error;
  void set(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!error) error = e;
    failed = true;
  }
};

// Waits for a counter of this rank's own workers. It can only run out if a worker of this
// rank is stuck, never because of a peer (the rows were published before the workers start).
bool wait_counter(Ring& ring, const std::atomic<int64_t>& c, int64_t at_least, const Failure& f,
                  std::chrono::milliseconds timeout, const char* what, int64_t minibatch) {
  for (int spin = 0; spin < 64; ++spin)
    if (c.load(std::memory_order_acquire) >= at_least) return true;
  const auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(ring.mu);
  while (c.load(std::memory_order_acquire) < at_least) {
    if (f.failed) return false;
    if (Clock::now() > deadline)
      fail("fused pipeline: minibatch ", minibatch, " was not ", what, " within ", timeout.count(), " ms");
    // Bounded sleeps: a failing worker does not notify, and the deadline must be seen.
    ring.changed.wait_for(lock, std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

int auto_waves(int64_t tiles, int compute_workers) {
  const int64_t per_wave = std::max(1, compute_workers);
  const int64_t waves = tiles / (8 * per_wave);
  return int(std::max<int64_t>(2, waves));
}

PipelinePlan plan_pipeline(const std::vector<int64_t>& offsets, const PipelineOptions& opt) {
  SQZ_CHECK(opt.comm_workers >= 1 && opt.compute_workers >= 1, "fused pipeline: ", opt.comm_workers,
            " communication and ", opt.compute_workers, " compute workers (each must be at least 1)");
  SQZ_CHECK(opt.tile_rows >= 1, "fused pipeline: tile of ", opt.tile_rows, " rows");
  SQZ_CHECK(opt.waves >= 0, "fused pipeline: minibatch of ", opt.waves, " waves");
  SQZ_CHECK(opt.ring_slots >= 1, "fused pipeline: ring of ", opt.ring_slots, " slots");
  PipelinePlan p;
  for (size_t e = 0; e + 1 < offsets.size(); ++e)
    for (int64_t r = offsets[e]; r < offsets[e + 1]; r += opt.tile_rows)
      p.tiles.push_back({int(e), r, std::min(opt.tile_rows, offsets[e + 1] - r)});
  const int64_t n_tiles = int64_t(p.tiles.size());
  p.waves = opt.waves > 0 ? opt.waves : auto_waves(n_tiles, opt.compute_workers);
  p.tiles_per_minibatch = int64_t(p.waves) * opt.compute_workers;
  for (int64_t t = 0; t < n_tiles; t += p.tiles_per_minibatch) p.minibatch_tile.push_back(t);
  p.minibatch_tile.push_back(n_tiles);
  for (int64_t j = 0; j < p.minibatches(); ++j) {
    const PipelineTile &a = p.tiles[size_t(p.minibatch_tile[size_t(j)])],
                       &b = p.tiles[size_t(p.minibatch_tile[size_t(j + 1)] - 1)];
    p.max_minibatch_rows = std::max(p.max_minibatch_rows, b.row + b.n - a.row);
  }
  return p;
}

namespace {

// A compute worker's work on one tile whose rows (payload format) are at `rows`.
using TileWork = std::function<void(int worker, const PipelineTile& tile, const std::byte* rows)>;
// Work a compute worker does after each minibatch it took part in, once its share of that
// minibatch's outputs counts as published (work that must not delay the combine).
using AfterMinibatch = std::function<void(int worker)>;

// The communication workers fetch `h`'s rows minibatch by minibatch into the ring; the
// compute workers run `work` on their tiles of each landed minibatch and publish the
// outputs of each finished one (Dispatcher::publish_output_rows); meanwhile the calling
// thread runs the streamed combine into `out`. Returns when every tile is done and this
// rank's tokens are summed; rethrows the first error.
void run_ring(Dispatcher& d, const DispatchHandle& h, const PipelinePlan& plan, const PipelineOptions& opt,
              const TileWork& work, const AfterMinibatch& after, const Dispatcher::CombineOut& out,
              PipelineStats* stats) {
  const int C = opt.comm_workers, P = opt.compute_workers, S = opt.ring_slots;
  const size_t rb = d.config().row_bytes();
  Ring ring(S, size_t(plan.max_minibatch_rows) * rb);
  Failure failure;
  const auto timeout = d.transport().timeout();
  const int64_t M = plan.minibatches();
  const auto rows_of = [&](int64_t j) {
    const PipelineTile &a = plan.tiles[size_t(plan.minibatch_tile[size_t(j)])],
                       &b = plan.tiles[size_t(plan.minibatch_tile[size_t(j + 1)] - 1)];
    return std::pair<int64_t, int64_t>(a.row, b.row + b.n);
  };
  std::vector<double> busy(size_t(C + P), 0.0), starved(size_t(P), 0.0);
  std::vector<Clock::time_point> finished(static_cast<size_t>(P));  // each compute worker's last tile

  auto communicate = [&](int c) {
    try {
      for (int64_t j = c; j < M && !failure.failed; j += C) {
        const int s = int(j % S);
        if (!wait_counter(ring, ring.consumed[s], j / S, failure, timeout, "consumed", j - S)) return;
        const auto t = Clock::now();
        const auto [begin, end] = rows_of(j);
        d.fetch_rows(h, begin, end - begin, ring.slot(s));
        busy[size_t(c)] += seconds_since(t);
        ring.raise(ring.filled[s], j / S + 1);
      }
    } catch (...) {
      failure.set(std::current_exception());
    }
  };
  auto compute = [&](int p) {
    try {
      for (int64_t j = 0; j < M && !failure.failed; ++j) {
        const int s = int(j % S);
        auto t = Clock::now();
        if (!wait_counter(ring, ring.filled[s], j / S + 1, failure, timeout, "fetched", j)) return;
        starved[size_t(p)] += seconds_since(t);
        t = Clock::now();
        const int64_t first_row = rows_of(j).first;
        for (int64_t i = plan.minibatch_tile[size_t(j)] + p; i < plan.minibatch_tile[size_t(j + 1)]; i += P) {
          const PipelineTile& tile = plan.tiles[size_t(i)];
          work(p, tile, ring.slot(s) + size_t(tile.row - first_row) * rb);
        }
        busy[size_t(C + p)] += seconds_since(t);
        if (ring.arrivals[s].fetch_add(1, std::memory_order_acq_rel) == P - 1) {
          ring.arrivals[s].store(0, std::memory_order_relaxed);
          ring.raise(ring.consumed[s], j / S + 1);
          d.publish_output_rows(rows_of(j).second);
        }
        if (after) {
          const auto t_after = Clock::now();
          after(p);
          busy[size_t(C + p)] += seconds_since(t_after);
        }
      }
      finished[size_t(p)] = Clock::now();
    } catch (...) {
      failure.set(std::current_exception());
    }
  };
  {
    std::vector<std::thread> workers;
    workers.reserve(size_t(C + P));
    for (int c = 0; c < C; ++c) workers.emplace_back(communicate, c);
    for (int p = 0; p < P; ++p) workers.emplace_back(compute, p);
    try {
      d.combine_streamed(h, out, failure.failed);  // false: a worker failed, rethrown below
    } catch (...) {
      failure.set(std::current_exception());
    }
    for (auto& w : workers) w.join();
  }
  if (failure.error) std::rethrow_exception(failure.error);
  d.close_outputs(h.n_rows());
  if (stats) {
    const auto now = Clock::now(), experts_done = *std::max_element(finished.begin(), finished.end());
    stats->combine_tail_s = std::max(0.0, std::chrono::duration<double>(now - experts_done).count());
    stats->rows = h.n_rows();
    stats->plan = plan;
    stats->threads = C + P;
    stats->fetch_s = stats->compute_s = stats->starved_s = 0;
    for (int c = 0; c < C; ++c) stats->fetch_s += busy[size_t(c)];
    for (int p = 0; p < P; ++p) stats->compute_s += busy[size_t(C + p)], stats->starved_s += starved[size_t(p)];
  }
}

std::vector<int64_t> expert_offsets(const DispatchHandle& h, int EL, int R) {
  std::vector<int64_t> offsets(size_t(EL + 1));
  for (int e = 0; e <= EL; ++e) offsets[size_t(e)] = h.seg_start[size_t(e * R)];
  return offsets;
}

}  // namespace

DispatchHandle fused_moe_forward(Dispatcher& d, const MoeWeights& w, const float* x, const Routing& routing,
                                 const PipelineOptions& opt, std::vector<FfnCache>& caches,
                                 const Dispatcher::CombineOut& out, PipelineStats* stats) {
  const MoeConfig& cfg = d.config();
  const int64_t H = cfg.H(), I = cfg.I();
  const int EL = cfg.experts_per_rank();
  const size_t rb = cfg.row_bytes();
  const int me = d.transport().rank();
  const auto t0 = Clock::now();

  DispatchHandle h = d.begin_pull_dispatch(x, routing);
  const std::vector<int64_t> offsets = expert_offsets(h, EL, cfg.R());
  const PipelinePlan plan = plan_pipeline(offsets, opt);
  caches.resize(size_t(EL));
  for (int e = 0; e < EL; ++e) {
    const size_t n = size_t(offsets[size_t(e + 1)] - offsets[size_t(e)]);
    caches[size_t(e)].x.resize(n * size_t(H));
    for (auto* v : {&caches[size_t(e)].a, &caches[size_t(e)].b, &caches[size_t(e)].h}) v->resize(n * size_t(I));
  }
  std::byte* published = d.open_outputs();
  std::vector<std::vector<float>> y(size_t(opt.compute_workers), std::vector<float>(size_t(opt.tile_rows * H)));

  run_ring(d, h, plan, opt, [&](int p, const PipelineTile& tile, const std::byte* rows) {
    FfnCache& c = caches[size_t(tile.expert)];
    const int64_t local = tile.row - offsets[size_t(tile.expert)];
    float* xr = c.x.data() + local * H;
    decode_rows(cfg, rows, xr, tile.n);
    swiglu_forward_rows(w.experts[size_t(me * EL + tile.expert)], H, I, tile.n, xr, y[size_t(p)].data(),
                        c.a.data() + local * I, c.b.data() + local * I, c.h.data() + local * I);
    encode_rows(cfg, y[size_t(p)].data(), published + size_t(tile.row) * rb, tile.n);
  }, nullptr, out, stats);
  d.end_pull_dispatch();
  if (stats) stats->wall_s = seconds_since(t0);
  return h;
}

void fused_moe_backward(Dispatcher& d, const MoeWeights& w, const DispatchHandle& h, const float* dout,
                        const std::vector<FfnCache>& caches, const PipelineOptions& opt, MoeWeights& grads, float* dx,
                        PipelineStats* stats) {
  const MoeConfig& cfg = d.config();
  const int64_t H = cfg.H(), I = cfg.I();
  const int EL = cfg.experts_per_rank();
  const size_t rb = cfg.row_bytes();
  const int me = d.transport().rank();
  const auto t0 = Clock::now();
  SQZ_CHECK(caches.size() == size_t(EL), "fused backward: no forward caches for this rank's experts");

  d.begin_cached_pull(h, dout);
  const std::vector<int64_t> offsets = expert_offsets(h, EL, cfg.R());
  const PipelinePlan plan = plan_pipeline(offsets, opt);
  const int64_t n = h.n_rows();
  std::vector<float> dy(size_t(n * H)), da(size_t(n * I)), db(size_t(n * I));
  // Tiles still to run per expert: the worker finishing an expert's last tile computes its
  // weight gradients over all its rows (after its minibatch), while other rows are still
  // in flight.
  std::unique_ptr<std::atomic<int64_t>[]> left(new std::atomic<int64_t>[size_t(EL)]);
  for (int e = 0; e < EL; ++e) left[size_t(e)] = 0;
  for (const PipelineTile& t : plan.tiles) ++left[size_t(t.expert)];
  std::byte* published = d.open_outputs();
  std::vector<std::vector<int>> finished(size_t(opt.compute_workers));  // per worker: experts done, grads pending
  std::vector<std::vector<float>> dx_tile(size_t(opt.compute_workers), std::vector<float>(size_t(opt.tile_rows * H)));

  run_ring(d, h, plan, opt, [&](int p, const PipelineTile& tile, const std::byte* rows) {
    const int e = tile.expert;
    const FfnCache& c = caches[size_t(e)];
    const int64_t local = tile.row - offsets[size_t(e)];
    float* g = dy.data() + tile.row * H;
    decode_rows(cfg, rows, g, tile.n);
    for (int64_t i = 0; i < tile.n; ++i)
      for (int64_t j = 0; j < H; ++j) g[i * H + j] *= h.row_gate[size_t(tile.row + i)];
    const ExpertWeights& we = w.experts[size_t(me * EL + e)];
    swiglu_backward_rows(we, H, I, tile.n, c.a.data() + local * I, c.b.data() + local * I, g,
                         da.data() + tile.row * I, db.data() + tile.row * I, dx_tile[size_t(p)].data());
    encode_rows(cfg, dx_tile[size_t(p)].data(), published + size_t(tile.row) * rb, tile.n);
    if (left[size_t(e)].fetch_sub(1, std::memory_order_acq_rel) == 1) finished[size_t(p)].push_back(e);
  }, [&](int p) {
    // The weight gradients of the experts whose last tile this worker ran, after the
    // minibatch's input-gradient rows are out: the combine reads them meanwhile.
    for (int e : finished[size_t(p)]) {
      const FfnCache& c = caches[size_t(e)];
      const int64_t b = offsets[size_t(e)], ne = offsets[size_t(e + 1)] - b;
      swiglu_weight_grads(H, I, ne, c.x.data(), c.h.data(), dy.data() + b * H, da.data() + b * I,
                          db.data() + b * I, grads.experts[size_t(me * EL + e)]);
    }
    finished[size_t(p)].clear();
  }, {nullptr, dx, false}, stats);
  d.end_pull_dispatch();
  if (stats) stats->wall_s = seconds_since(t0);
}

}  // namespace squeeze::mok
