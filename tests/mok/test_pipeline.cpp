// tests/mok/test_pipeline.cpp — the fused pipeline: its minibatch plan, fused == unfused
// bit for bit (forward output, input gradient, every weight gradient) over payloads,
// routings, worker counts, tiles and rings down to one slot, and a rank that stops in the
// middle of the pipeline named by every other rank.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "core/error.h"
#include "mok/inproc_transport.h"
#include "mok/layer.h"
#include "mok/pipeline.h"
#include "common/thrown_message.h"
#include "mok_checks.h"

namespace squeeze::mok {
namespace {

using testing::RouteMode;

PipelineOptions pipe(int comm, int compute, int64_t tile_rows, int waves, int ring_slots) {
  PipelineOptions o;
  o.comm_workers = comm;
  o.compute_workers = compute;
  o.tile_rows = tile_rows;
  o.waves = waves;
  o.ring_slots = ring_slots;
  return o;
}

TEST(MokPipeline, PlanCutsTilesPerExpertAndGroupsWaves) {
  PipelineOptions o = pipe(1, 2, 4, 2, 2);
  // Experts of 10, 0 and 3 rows: tiles 4+4+2 | 3, minibatches of 2 waves × 2 workers.
  const PipelinePlan p = plan_pipeline({0, 10, 10, 13}, o);
  ASSERT_EQ(p.tiles.size(), 4u);
  EXPECT_EQ(p.tiles[2].row, 8);
  EXPECT_EQ(p.tiles[2].n, 2);
  EXPECT_EQ(p.tiles[3].expert, 2);
  EXPECT_EQ(p.tiles[3].n, 3);
  EXPECT_EQ(p.tiles_per_minibatch, 4);
  EXPECT_EQ(p.minibatches(), 1);
  EXPECT_EQ(p.max_minibatch_rows, 13);
  o.waves = 1;
  const PipelinePlan q = plan_pipeline({0, 10, 10, 13}, o);
  EXPECT_EQ(q.minibatches(), 2);
  EXPECT_EQ(q.max_minibatch_rows, 8);
  // Automatic: never under 2 waves, about 8 minibatches once there are enough tiles.
  EXPECT_EQ(auto_waves(3, 4), 2);
  EXPECT_EQ(auto_waves(640, 4), 20);
  o.waves = 0;
  EXPECT_EQ(plan_pipeline({0, 10, 10, 13}, o).waves, 2);
  EXPECT_EQ(plan_pipeline({0, 0}, o).minibatches(), 0);
  for (auto bad : {pipe(0, 1, 4, 0, 2), pipe(1, 0, 4, 0, 2), pipe(1, 1, 0, 0, 2), pipe(1, 1, 4, -1, 2), pipe(1, 1, 4, 0, 0)})
    EXPECT_THROW(plan_pipeline({0, 4}, bad), Error);
}

struct LayerRun {
  std::vector<std::vector<float>> out, dx;  // per rank
  std::vector<MoeWeights> grads;            // per rank
};

// Three forwards (the credits must order the rounds) and a backward of the last.
LayerRun run_layer(const MoeConfig& cfg, RouteMode mode, LayerOptions opt) {
  const int R = cfg.R();
  const int64_t T = cfg.T(), H = cfg.H();
  MoeWeights w = random_weights(cfg, 21);
  testing::bias_router(cfg, w, mode);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(size_t(R * T * H)), dout(x.size());
  for (float& v : x) v = u(rng);
  for (float& v : dout) v = u(rng);
  LayerRun run;
  run.out.resize(size_t(R));
  run.dx.resize(size_t(R));
  run.grads.assign(size_t(R), MoeWeights::zeros(cfg));
  run_inproc_ranks_or_throw(R, [&](Transport& t) {
    const int me = t.rank();
    MoeLayer layer(cfg, t, w, opt);
    std::vector<float> out(size_t(T * H)), dx(out.size());
    for (int round = 0; round < 3; ++round) {
      std::vector<float> xr(x.begin() + me * T * H, x.begin() + (me + 1) * T * H);
      for (float& v : xr) v *= 1.0f + 0.25f * float(round);
      layer.forward(xr.data(), T, out.data());
    }
    layer.backward(dout.data() + me * T * H, dx.data(), run.grads[size_t(me)]);
    run.out[size_t(me)] = out;
    run.dx[size_t(me)] = dx;
  });
  return run;
}

TEST(MokPipeline, FusedEqualsUnfusedBitForBit) {
  const PipelineOptions pipes[] = {PipelineOptions{}, pipe(2, 3, 1, 2, 1) /* a ring of one slot */, pipe(3, 2, 3, 1, 2)};
  struct Case {
    int R;
    RouteMode mode;
    int64_t T, H, I;
  };
  // The last case is large enough (about 64 rows per expert, 256-wide products) for a BLAS
  // to pick different kernels for different row counts: the tiles must match, not the BLAS.
  for (const Case c : {Case{1, RouteMode::Balanced, 12, 64, 24}, Case{2, RouteMode::Skewed, 12, 64, 24},
                       Case{4, RouteMode::EmptyExperts, 12, 64, 24}, Case{2, RouteMode::OneExpert, 12, 64, 24},
                       Case{2, RouteMode::Balanced, 128, 256, 256}})
    for (Payload p : {Payload::F32, Payload::BF16, Payload::MXFP8}) {
      MoeShape s{.tokens_per_rank = c.T, .hidden = c.H, .inter = c.I, .n_experts = 8, .top_k = 2, .n_ranks = c.R};
      s.payload = p;
      s.shared_expert = c.R == 2;
      const MoeConfig cfg(s);
      for (const PipelineOptions& po : pipes) {
        LayerOptions unfused;
        unfused.pipeline.tile_rows = po.tile_rows;
        const LayerRun base = run_layer(cfg, c.mode, unfused);
        const std::string what = std::string(payload_name(p)) + " R=" + std::to_string(c.R) + " " +
                                 testing::route_mode_name(c.mode) + " C=" + std::to_string(po.comm_workers) +
                                 " P=" + std::to_string(po.compute_workers) + " tile " + std::to_string(po.tile_rows) +
                                 " ring " + std::to_string(po.ring_slots);
        const LayerRun fused = run_layer(cfg, c.mode, LayerOptions::fused_pull(po));
        for (int r = 0; r < c.R; ++r) {
          EXPECT_EQ(fused.out[size_t(r)], base.out[size_t(r)]) << what << " rank " << r;
          EXPECT_EQ(fused.dx[size_t(r)], base.dx[size_t(r)]) << what << " rank " << r;
          const auto& g = fused.grads[size_t(r)];
          const auto& b = base.grads[size_t(r)];
          EXPECT_EQ(g.router, b.router) << what;
          for (size_t e = 0; e < g.experts.size(); ++e) {
            EXPECT_EQ(g.experts[e].gate, b.experts[e].gate) << what << " expert " << e;
            EXPECT_EQ(g.experts[e].up, b.experts[e].up) << what << " expert " << e;
            EXPECT_EQ(g.experts[e].down, b.experts[e].down) << what << " expert " << e;
          }
        }
      }
    }
}

TEST(MokPipeline, OnlyThePullStylesFuse) {
  const MoeConfig cfg(MoeShape{.tokens_per_rank = 4, .hidden = 8, .inter = 4, .n_experts = 2, .top_k = 1});
  const MoeWeights w = random_weights(cfg, 1);
  run_inproc_ranks_or_throw(1, [&](Transport& t) {
    LayerOptions push = LayerOptions::fused_pull();
    push.dispatch = DispatchStyle::PushNegotiated;
    EXPECT_THROW(MoeLayer(cfg, t, w, push), Error);
    push = LayerOptions::fused_pull();
    push.combine = CombineStyle::Push;
    EXPECT_THROW(MoeLayer(cfg, t, w, push), Error);
    EXPECT_THROW(MoeLayer(cfg, t, w, LayerOptions::fused_pull(pipe(1, 1, 0, 0, 1))), Error);
  });
}

// Rank 1 stops after its first transfer of the pipeline (its transport throws); every other
// rank must end with a timeout that names it, not hang or read a half-written round.
class StoppingTransport final : public Transport {
 public:
  explicit StoppingTransport(Transport& inner) : in_(inner) { set_timeout(inner.timeout()); }
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  std::string name() const override { return in_.name(); }
  SymBuffer alloc(size_t bytes) override { return in_.alloc(bytes); }
  FlagId alloc_flags(int64_t n) override { return in_.alloc_flags(n); }
  std::byte* local(SymBuffer b) override { return in_.local(b); }
  // Rank 1 reads its peers by get(), so that it can stop in the middle of the rows.
  const std::byte* peer(int rank, SymBuffer b) override {
    return in_.rank() == 1 && rank != 1 ? nullptr : in_.peer(rank, b);
  }
  void get(void* dst, int rank, SymBuffer b, size_t off, size_t n) override {
    if (in_.rank() == 1 && gets_++ >= 1) fail("rank 1 stopped");
    in_.get(dst, rank, b, off, n);
  }
  void put(int rank, SymBuffer b, size_t off, const void* src, size_t n) override { in_.put(rank, b, off, src, n); }
  void flush() override { in_.flush(); }
  void flag_add(int rank, FlagId f, int64_t i, uint64_t v) override { in_.flag_add(rank, f, i, v); }
  uint64_t flag_load(int rank, FlagId f, int64_t i) override { return in_.flag_load(rank, f, i); }
  void barrier() override { in_.barrier(); }
  void allreduce(double* v, int64_t n, ReduceOp op) override { in_.allreduce(v, n, op); }

 private:
  Transport& in_;
  int gets_ = 0;  // only rank 1's fetches count, one caller at a time (fetch_rows locks)
};

TEST(MokPipeline, RankStoppingMidPipelineIsNamed) {
  const MoeConfig cfg(MoeShape{.tokens_per_rank = 16, .hidden = 32, .inter = 8, .n_experts = 6, .top_k = 2, .n_ranks = 3});
  const MoeWeights w = random_weights(cfg, 3);
  auto errors = run_inproc_ranks(
      3,
      [&](Transport& base) {
        StoppingTransport t(base);
        MoeLayer layer(cfg, t, w, LayerOptions::fused_pull(pipe(1, 1, 1, 1, 1)));
        std::vector<float> x(size_t(cfg.T() * cfg.H()), 0.5f), out(x.size());
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) * 0.1f;
        layer.forward(x.data(), cfg.T(), out.data());
      },
      std::chrono::milliseconds(300));
  ASSERT_TRUE(errors[1]);
  EXPECT_NE(thrown_message([&] { std::rethrow_exception(errors[1]); }).find("rank 1 stopped"),
            std::string::npos);
  for (int r : {0, 2}) {
    ASSERT_TRUE(errors[size_t(r)]) << "rank " << r << " did not fail";
    const std::string m = thrown_message([&] { std::rethrow_exception(errors[size_t(r)]); });
    EXPECT_NE(m.find("rank 1 did not arrive within 300 ms"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace squeeze::mok
