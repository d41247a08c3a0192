// tests/mok/test_link_model.cpp — the link model over in-process ranks: a remote put or
// get completes no sooner than its latency plus its bytes over the bandwidth, puts to one
// peer serialize, a flag raised after a put arrives no sooner than the put, local
// operations are free, operations are counted, the MoE layer is still exact over it, and
// bad parameters are one-line errors. Only lower bounds on time are asserted: a loaded
// machine can only make things slower.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "mok/inproc_transport.h"
#include "mok/link_model.h"
#include "mok_checks.h"

using namespace squeeze;
using namespace squeeze::mok;
using Clock = std::chrono::steady_clock;

namespace {
double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }
const LinkModel kSlow{"custom", 200.0, 1.0};  // 200 µs, 1 GB/s: 1 MB takes 1000 µs on the wire
}  // namespace

TEST(LinkModel, PutsAndGetsTakeLatencyPlusBytesOverBandwidth) {
  std::vector<double> put_us(2), get_us(2), two_puts_us(2);
  run_inproc_ranks_or_throw(2, [&](Transport& inner) {
    LinkModelTransport t(inner, kSlow);
    const int me = t.rank(), peer = 1 - me;
    const SymBuffer buf = t.alloc(2 << 20);
    std::vector<std::byte> data(1 << 20, std::byte{7});
    t.barrier();
    auto t0 = Clock::now();
    t.put(peer, buf, 0, data.data(), data.size());
    t.flush();
    put_us[size_t(me)] = us_since(t0);
    t0 = Clock::now();
    t.get(data.data(), peer, buf, 0, data.size());
    t.flush();
    get_us[size_t(me)] = us_since(t0);
    t0 = Clock::now();
    t.put(peer, buf, 0, data.data(), data.size());
    t.put(peer, buf, 1 << 20, data.data(), data.size());
    t.flush();
    two_puts_us[size_t(me)] = us_since(t0);
    t.put(me, buf, 0, data.data(), data.size());  // this rank's own memory: not on the link
    t.get(data.data(), me, buf, 0, data.size());
    t.flush();
    const LinkStats s = t.stats();
    EXPECT_EQ(s.puts, 3u);
    EXPECT_EQ(s.gets, 1u);
    EXPECT_EQ(s.remote_bytes, 4u << 20);
    EXPECT_EQ(s.round_trips(), 1u);
    t.barrier();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_GE(put_us[size_t(r)], 200 + 1048.5);       // α + 2^20 B / 1 GB/s
    EXPECT_GE(get_us[size_t(r)], 2 * 200 + 1048.5);   // a round trip
    EXPECT_GE(two_puts_us[size_t(r)], 200 + 2 * 1048.5);  // one link: serialized
  }
}

TEST(LinkModel, AFlagArrivesAfterThePutsBeforeIt) {
  // In-process ranks share one steady clock: the time rank 1 sees the flag, less the time
  // rank 0 issued the put, whatever the scheduler did in between.
  Clock::time_point issued{}, seen{};
  run_inproc_ranks_or_throw(2, [&](Transport& inner) {
    LinkModelTransport t(inner, kSlow);
    const SymBuffer buf = t.alloc(1 << 20);
    const FlagId flag = t.alloc_flags(1);
    std::vector<std::byte> data(1 << 20, std::byte{3});
    t.barrier();
    if (t.rank() == 0) {
      issued = Clock::now();
      t.put(1, buf, 0, data.data(), data.size());  // not flushed: the flag orders it
      t.flag_add(1, flag, 0, 1);
    } else {
      t.wait_flag(1, flag, 0, 1, 0, "the put");  // a local flag: free to poll
      seen = Clock::now();
      EXPECT_EQ(t.local(buf)[12345], std::byte{3});
      EXPECT_EQ(t.stats().flag_reads, 0u);
    }
    t.barrier();
  });
  const double waited_us = std::chrono::duration<double, std::micro>(seen - issued).count();
  EXPECT_GE(waited_us, 200 + 1048.5);
}

TEST(LinkModel, LayerStaysExactOverTheModel) {
  MoeShape s{.tokens_per_rank = 8, .hidden = 64, .inter = 32, .n_experts = 4, .top_k = 2, .n_ranks = 2};
  const MoeConfig cfg(s);
  for (auto ds : {DispatchStyle::Pull, DispatchStyle::PushNegotiated})
    EXPECT_NO_THROW(run_inproc_ranks_or_throw(2, [&](Transport& inner) {
      LinkModelTransport t(inner, link_preset("ib"));
      mok::testing::check_layer(t, cfg, {ds, ds == DispatchStyle::Pull ? CombineStyle::Pull : CombineStyle::Push},
                           mok::testing::RouteMode::Balanced, -1, 3);
      EXPECT_GT(t.stats().ops(), 0u);
    }));
  // The fused pipeline over the model: its combine gets each run of published rows (no
  // in-place reads across a link) and still equals the unfused layer bit for bit.
  EXPECT_NO_THROW(run_inproc_ranks_or_throw(2, [&](Transport& inner) {
    LinkModelTransport t(inner, link_preset("ib"));
    PipelineOptions small_minibatches;
    small_minibatches.tile_rows = 2;
    small_minibatches.waves = 1;
    LayerOptions same_tiles;  // the unfused layer's products in the same tiles (ExpertGroup::tile_rows)
    same_tiles.pipeline = small_minibatches;
    const auto unfused = mok::testing::check_layer(t, cfg, same_tiles, mok::testing::RouteMode::Skewed, -1, 3);
    const auto fused = mok::testing::check_layer(t, cfg, LayerOptions::fused_pull(small_minibatches),
                                                 mok::testing::RouteMode::Skewed, -1, 3);
    EXPECT_EQ(fused, unfused);
  }));
}

TEST(LinkModel, BadParametersAreOneLineErrors) {
  EXPECT_THROW(link_preset("token-ring"), std::exception);
  EXPECT_FALSE(link_preset("none").enabled());
  EXPECT_EQ(link_preset("nvlink").gbps, 160.0);
  EXPECT_EQ(link_preset("ib").latency_us, 2.0);
  EXPECT_THROW(run_inproc_ranks_or_throw(1, [](Transport& t) { LinkModelTransport m(t, {"custom", -1, 10}); }),
               std::exception);
  EXPECT_THROW(run_inproc_ranks_or_throw(1, [](Transport& t) { LinkModelTransport m(t, {"custom", 1, 0}); }),
               std::exception);
}
