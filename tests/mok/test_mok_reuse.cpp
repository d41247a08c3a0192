// tests/mok/test_mok_reuse.cpp — buffer reuse across rounds with no barrier between
// them: dispatch -> combine -> combine -> cached dispatch -> combine, many rounds, and
// the layer's forward -> forward -> backward. Rank 0 keeps every token at home on odd
// rounds, so a pull combine never waits for anyone and rank 0 can run a round ahead;
// the last rank reads slowly. Without credits, rank 0 overwrote its published routing
// (pull) or the last rank's private counts and rows (push-private) while that rank still
// read the previous round; the round tags below then mismatch, and TSan reports it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "mok/inproc_transport.h"
#include "mok/reference.h"
#include "mok_checks.h"
#include "slow_transport.h"

namespace squeeze::mok {
namespace {

using testing::RouteMode;
constexpr int kR = 4;
const auto kDelay = std::chrono::microseconds(400);
// A rank that failed a check leaves the others waiting: keep that short (TSan-safe).
const auto kTimeout = std::chrono::seconds(5);

MoeShape shape() {
  return MoeShape{.tokens_per_rank = 5, .hidden = 6, .inter = 4, .n_experts = 8, .top_k = 2, .n_ranks = kR,
                  .payload = Payload::F32};
}

// Round-dependent routing; rank 0 on odd rounds: only its own experts (0 and 1).
Routing round_routing(const MoeConfig& cfg, int rank, int round) {
  Routing r = testing::make_routing(cfg, rank, cfg.T(), RouteMode::Skewed, uint64_t(round + 1));
  if (rank == 0 && round % 2 == 1)
    for (size_t i = 0; i < r.expert.size(); ++i) r.expert[i] = int32_t(i % 2);
  return r;
}

// Exact in f32: which rank, round, token and column a value came from.
float tag(int rank, int round, int64_t t, int64_t h) { return float(((round * 8 + rank) * 16 + t) * 8 + h); }

void tagged_rounds(Transport& base, DispatchStyle ds, CombineStyle cs, int rounds) {
  testing::SlowTransport tr(base, kR - 1, kDelay);
  const MoeConfig cfg(shape());
  const int me = tr.rank(), K = cfg.K(), EL = cfg.experts_per_rank();
  const int64_t H = cfg.H(), T = cfg.T();
  Dispatcher d(cfg, tr);
  for (int round = 0; round < rounds; ++round) {
    std::vector<Routing> all;
    for (int r = 0; r < kR; ++r) all.push_back(round_routing(cfg, r, round));
    std::vector<float> x(size_t(T * H));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) x[size_t(t * H + h)] = tag(me, round, t, h);
    DispatchHandle hd = d.dispatch(ds, x.data(), all[size_t(me)]);
    // Expected rows: local expert, then source, then token.
    size_t row = 0;
    std::vector<float> rows(size_t(hd.n_rows() * H));
    hd.rows_to_f32(cfg, rows.data());
    for (int e = 0; e < EL; ++e)
      for (int s = 0; s < kR; ++s)
        for (int64_t t = 0; t < T; ++t)
          for (int k = 0; k < K; ++k) {
            if (all[size_t(s)].expert[size_t(t * K + k)] != me * EL + e) continue;
            SQZ_CHECK(row < size_t(hd.n_rows()) && hd.src_rank[row] == s && hd.src_index[row] == t &&
                          rows[row * size_t(H)] == tag(s, round, t, 0),
                      "round ", round, " rank ", me, ": row ", row, " is not rank ", s, "'s token ", t);
            ++row;
          }
    SQZ_CHECK(row == size_t(hd.n_rows()), "round ", round, " rank ", me, ": ", hd.n_rows(), " rows, expected ", row);

    // Two combines back to back with different rows: K copies, then 2K copies.
    std::vector<float> sum(x.size());
    for (float scale : {1.0f, 2.0f}) {
      std::vector<float> scaled(rows);
      for (float& v : scaled) v *= scale;
      d.combine(cs, hd, scaled.data(), {nullptr, sum.data(), false});
      for (size_t i = 0; i < sum.size(); ++i)
        SQZ_CHECK(sum[i] == scale * float(K) * x[i], "round ", round, " rank ", me, ": combine x", scale, " value ",
                  i, " is ", sum[i], ", expected ", scale * float(K) * x[i]);
    }
    // The backward's pair: cached dispatch of new rows, then their combine.
    std::vector<float> x2(x), again(rows.size());
    for (float& v : x2) v += 0.5f;
    d.dispatch_cached(ds, hd, x2.data(), again.data());
    for (size_t i = 0; i < again.size(); ++i)
      SQZ_CHECK(again[i] == rows[i] + 0.5f, "round ", round, " rank ", me, ": cached dispatch value ", i);
    d.combine(cs, hd, again.data(), {nullptr, sum.data(), false});
    for (size_t i = 0; i < sum.size(); ++i)
      SQZ_CHECK(sum[i] == float(K) * x2[i], "round ", round, " rank ", me, ": cached combine value ", i);
  }
}

TEST(MokReuse, RoundsWithoutBarriersEveryStyle) {
  for (auto ds : {DispatchStyle::PushNegotiated, DispatchStyle::PushPrivate, DispatchStyle::Pull})
    for (auto cs : {CombineStyle::Push, CombineStyle::Pull}) {
      SCOPED_TRACE(std::string(dispatch_style_name(ds)) + "/" + combine_style_name(cs));
      EXPECT_NO_THROW(run_inproc_ranks_or_throw(kR, [&](Transport& t) { tagged_rounds(t, ds, cs, 12); }, kTimeout));
    }
}

// The layer: forward, forward, backward, repeated, each forward against the reference.
TEST(MokReuse, LayerForwardForwardBackwardRounds) {
  MoeShape s = shape();
  s.payload = Payload::BF16;
  const MoeConfig cfg(s);
  MoeWeights w = random_weights(cfg, 3);
  testing::bias_router(cfg, w, RouteMode::Skewed);
  const RefWeights rw = to_double(w);
  const int64_t n = cfg.T() * kR * cfg.H();
  for (auto ds : {DispatchStyle::PushNegotiated, DispatchStyle::PushPrivate, DispatchStyle::Pull})
    for (auto cs : {CombineStyle::Push, CombineStyle::Pull}) {
      SCOPED_TRACE(std::string(dispatch_style_name(ds)) + "/" + combine_style_name(cs));
      EXPECT_NO_THROW(run_inproc_ranks_or_throw(kR, [&](Transport& base) {
        testing::SlowTransport tr(base, kR - 1, kDelay);
        MoeLayer layer(cfg, tr, w, {ds, cs});
        const int64_t off = tr.rank() * cfg.T() * cfg.H();
        std::vector<float> out(size_t(cfg.T() * cfg.H())), dx(out.size());
        for (int round = 0; round < 6; ++round) {
          std::mt19937_64 rng{uint64_t(round)};
          std::uniform_real_distribution<float> u(-1, 1);
          std::vector<float> x(static_cast<size_t>(n));
          for (float& v : x) v = u(rng);
          layer.forward(x.data() + off, cfg.T(), out.data());
          const auto ref = reference_forward(cfg, rw, std::vector<double>(x.begin(), x.end()));
          // The layer test's bound (f32 arithmetic plus possible bf16 flips); scale <= 1 here.
          const double tol = layer_f32_tolerance(cfg, kR * cfg.T());
          for (size_t i = 0; i < out.size(); ++i)
            SQZ_CHECK(std::fabs(out[i] - ref.out[size_t(off) + i]) <= tol * std::max(1.0, std::fabs(ref.out[size_t(off) + i])) + ref.out_flip[size_t(off) + i],
                      "round ",
                      round, " rank ", tr.rank(),
                      ": forward output ", i, " is ", out[i], ", reference ", ref.out[size_t(off) + i]);
          if (round % 2 == 1) {
            MoeWeights g = MoeWeights::zeros(cfg);
            layer.backward(x.data() + off, dx.data(), g);
          }
        }
      }, kTimeout));
    }
}

// A flag past the expected round (a rank ran an extra round, or the others skipped one)
// is an error naming that rank, where a `>=` wait would read the later round's data.
TEST(MokReuse, FlagPastTheExpectedRoundIsAnError) {
  std::string msg;
  run_inproc_ranks(2, [&](Transport& t) {
    const FlagId f = t.alloc_flags(1);
    if (t.rank() == 1) {
      t.flag_add(1, f, 0, 2);  // two rounds published
      t.barrier();
      return;
    }
    t.barrier();
    try {
      t.wait_round(1, f, 0, 1, 1, "test flag");
    } catch (const Error& e) {
      msg = e.what();
    }
  });
  EXPECT_NE(msg.find("rank 1 is at round 2 but rank 0 expected round 1 (test flag)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace squeeze::mok
