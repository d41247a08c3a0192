// tests/model/test_kv_plan.cpp — the KV cache a Session allocates is the one `squeeze plan`
// sizes (one slot rule, model/kv_slots.h), for every KV type the engine runs; and a bf16
// cache runs the model to logits close to an f32 cache's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>
#include <vector>

#include "model/memory_plan.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/session.h"

namespace squeeze::model {
namespace {

// glimmer-tiny: [L L L G] x 2, window 16, head_dim 16 (the AVX2 attention path).
std::unique_ptr<Model> tiny_model() {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("squeeze_kv_plan_" + std::to_string(::getpid()) + ".gguf")).string();
  write_random_model({.config = builtin_config("glimmer-tiny"), .seed = 11, .path = path});
  auto m = Model::load(path);
  std::remove(path.c_str());  // mapped: the open mapping keeps the data
  return m;
}

std::vector<int32_t> tokens(int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>(3 + (i * 37) % 250);
  return t;
}

TEST(KvPlan, PlannedBytesAreTheAllocatedBytes) {
  const auto m = tiny_model();
  const ModelConfig& c = m->config();
  ASSERT_GT(c.n_local_layers(), 0);
  ASSERT_GT(c.n_global_layers(), 0);
  // ctx 300 is not a whole number of global chunks; batch 8 takes the 64-slot floor,
  // batch 100 sets the headroom itself; an explicit headroom overrides both.
  struct Case {
    int64_t ctx, batch, headroom;
  };
  for (const Case& k : {Case{300, 8, 0}, Case{300, 100, 0}, Case{200, 8, 20}})
    for (KvType type : {KvType::F32, KvType::F16, KvType::BF16}) {
      SCOPED_TRACE(::testing::Message() << kv_type_name(type) << " ctx " << k.ctx << " batch " << k.batch
                                        << " headroom " << k.headroom);
      PlanParams p;
      p.n_ctx = k.ctx;
      p.batch = k.batch;
      p.local_headroom = k.headroom;
      p.kv_type = type;
      const MemoryPlan plan = plan_memory(c, p);
      Session s(*m, {.n_ctx = k.ctx, .batch = k.batch, .kv_type = type, .kv_headroom = k.headroom});
      // Local rings are smaller than the context: the headroom is what is being checked.
      ASSERT_LT(plan.kv.local_slots, k.ctx);
      EXPECT_EQ(static_cast<int64_t>(s.kv_memory().bytes_at_limit), plan.kv.hybrid);
      // Fill the context: what is held then is what was planned.
      s.forward(tokens(k.ctx));
      EXPECT_EQ(s.position(), k.ctx);
      EXPECT_EQ(static_cast<int64_t>(s.kv_memory().bytes_held), plan.kv.hybrid);
    }
}

// Logits over a prompt longer than the window (rings wrap) and some decode steps.
std::vector<float> run(const Model& m, KvType type) {
  Session s(m, {.n_ctx = 120, .batch = 16, .kv_type = type});
  const auto prompt = tokens(90);
  const auto all = s.forward(prompt, /*all_logits=*/true);
  std::vector<float> out(all.begin(), all.end());
  for (int32_t t : {5, 77, 130}) {
    const auto l = s.forward(std::span<const int32_t>(&t, 1));
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

TEST(KvPlan, Bf16CacheIsCloseToF32) {
  const auto m = tiny_model();
  const auto f32 = run(*m, KvType::F32), f16 = run(*m, KvType::F16), bf16 = run(*m, KvType::BF16);
  ASSERT_EQ(f32.size(), bf16.size());
  double scale = 0, err_bf16 = 0, err_f16 = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    scale = std::max(scale, std::fabs(static_cast<double>(f32[i])));
    err_bf16 = std::max(err_bf16, std::fabs(static_cast<double>(bf16[i]) - f32[i]));
    err_f16 = std::max(err_f16, std::fabs(static_cast<double>(f16[i]) - f32[i]));
  }
  ASSERT_GT(scale, 0.1);
  // bf16 keeps 8 significant bits (relative rounding error ≤ 2^-9 per K/V element), f16
  // 11; through 8 layers of a random model the logits move by a small multiple of that.
  // The bf16 cache must really be bf16: different from f32, and coarser than f16.
  EXPECT_GT(err_bf16, 0.0);
  EXPECT_GT(err_bf16, err_f16);
  EXPECT_LE(err_bf16, 0.02 * scale) << "max |logit| " << scale;
}

}  // namespace
}  // namespace squeeze::model
