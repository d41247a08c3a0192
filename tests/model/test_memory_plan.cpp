// tests/model/test_memory_plan.cpp — ModelConfig (validation, layer patterns, parameter
// counts, tensor shapes) and the memory planner, checked against Glimmer-30B's published figures.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "model/config.h"
#include "model/memory_plan.h"
#include "model/tensor_table.h"

using namespace squeeze::model;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; wanted one mentioning '" << needle << "'";
  } catch (const squeeze::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

PlanParams spec_params() {
  PlanParams p;
  p.n_ctx = 131072;
  p.weight_type = "Q4_K_M";
  p.kv_type = KvType::BF16;
  return p;
}
}  // namespace

TEST(ModelConfig, Glimmer30bMatchesSpec) {
  const ModelConfig c = builtin_config("glimmer-30b");
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.n_layer, 52);
  EXPECT_EQ(c.n_local_layers(), 39);
  EXPECT_EQ(c.n_global_layers(), 13);
  EXPECT_EQ(c.q_dim(), 4096);  // "Q projection is 6656 → 4096"
  EXPECT_EQ(c.kv_dim(), 256);  // "K and V are 6656 → 256 each"
  const ParamCount p = count_params(c);
  // Published: 57.9M attention + 490.7M FFN parameters per layer, 30.28B in all.
  EXPECT_EQ(std::round(p.attention_per_layer / 1e5), 579);
  EXPECT_EQ(std::round(p.ffn_per_layer / 1e5), 4907);
  EXPECT_EQ(std::round(p.total / 1e7), 3028);
  EXPECT_EQ(p.output, p.embedding);  // untied
}

TEST(ModelConfig, TensorShapesAddUpToTheParameterCount) {
  for (const auto& name : builtin_config_names()) {
    const ModelConfig c = builtin_config(name);
    c.validate();
    const auto tensors = weight_tensors(c);
    const int64_t per_layer = 9 + (c.qk_norm ? 2 : 0) + (c.norm_placement == NormPlacement::both ? 2 : 0) +
                              (c.attn_gate ? 1 : 0) + (c.attn_bias ? 3 : 0) + (c.attn_output_bias ? 1 : 0) +
                              (c.attn_sinks ? 1 : 0);
    int64_t expert_layers = 0;  // router + gate/up/down stacks in place of gate/up/down, + 4 biases (gpt-oss)
    for (int64_t il = 0; il < c.n_layer; ++il)
      expert_layers += c.layer_kind(il).ffn == Ffn::moe ? (c.expert_bias ? 5 : 1) : 0;
    EXPECT_EQ(tensors.size(), static_cast<size_t>(per_layer * c.n_layer + expert_layers + 2 + (c.tied_output ? 0 : 1) +
                                                  (c.rope_freq_factors ? 1 : 0)))
        << name;
    int64_t sum = 0;
    for (const auto& t : tensors) sum += t.elements();
    EXPECT_EQ(sum, count_params(c).total) << name;
  }
  const auto t = weight_tensors(builtin_config("glimmer-30b"));
  EXPECT_EQ(t[2].name, "blk.0.attn_q.weight");
  EXPECT_EQ(t[2].ne0, 6656);
  EXPECT_EQ(t[2].ne1, 4096);
  EXPECT_EQ(t[5].name, "blk.0.attn_output.weight");
  EXPECT_EQ(t[5].ne0, 4096);
  EXPECT_EQ(t.back().name, "output.weight");
  EXPECT_NEAR(count_params(builtin_config("llama-1b")).total / 1e9, 1.10, 0.01);  // TinyLlama-1.1B
  EXPECT_NEAR(count_params(builtin_config("glimmer-1b")).total / 1e9, 1.0, 0.05);
  EXPECT_NEAR(count_params(builtin_config("llama3.2-1b")).total / 1e9, 1.24, 0.01);  // Llama 3.2 1B: 1.24B
  EXPECT_NEAR(count_params(builtin_config("qwen3-4b")).total / 1e9, 4.02, 0.01);     // Qwen3-4B: 4.02B
  EXPECT_NEAR(count_params(builtin_config("qwen3-30b-a3b")).total / 1e9, 30.53, 0.01);  // Qwen3-30B-A3B: 30.5B
  EXPECT_NEAR(count_params(builtin_config("gpt-oss-20b")).total / 1e9, 20.91, 0.01);  // gpt-oss-20b: 20.9B
}

TEST(ModelConfig, LayerPatterns) {
  const auto p = period_pattern(52, 4);
  ASSERT_EQ(p.size(), 52u);
  for (int i = 0; i < 52; ++i) EXPECT_EQ(p[i], i % 4 != 3) << i;
  EXPECT_EQ(describe_pattern(p), "[L L L G] x 13");
  EXPECT_EQ(describe_pattern(period_pattern(12, 6)), "[L L L L L G] x 2");
  EXPECT_EQ(describe_pattern(all_global_pattern(4)), "[G] x 4");
  EXPECT_EQ(describe_pattern(period_pattern(6, 4)), "LLLGLL");  // not a whole number of periods
  for (bool b : period_pattern(5, 1)) EXPECT_FALSE(b);
  for (bool b : period_pattern(5, 0)) EXPECT_FALSE(b);
  EXPECT_THROW(period_pattern(5, -1), squeeze::Error);
  // An explicit list is just as valid.
  ModelConfig c = builtin_config("glimmer-tiny");
  c.is_local = {true, false, true, false, true, true, true, false};
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.n_local_layers(), 5);
}

TEST(ModelConfig, ValidationNamesTheField) {
  const ModelConfig good = builtin_config("glimmer-tiny");
  auto bad = [&](auto mutate, const std::string& needle) {
    ModelConfig c = good;
    mutate(c);
    expect_error([&] { c.validate(); }, needle);
  };
  bad([](ModelConfig& c) { c.n_layer = 0; }, "n_layer");
  bad([](ModelConfig& c) { c.n_embd = -1; }, "n_embd");
  bad([](ModelConfig& c) { c.n_head = 0; }, "n_head");
  bad([](ModelConfig& c) { c.n_head_kv = 3; }, "n_head_kv (3) must divide n_head (4)");
  bad([](ModelConfig& c) { c.head_dim = 15; }, "head_dim");
  bad([](ModelConfig& c) { c.n_ff = 0; }, "n_ff");
  bad([](ModelConfig& c) { c.n_vocab = int64_t{1} << 40; }, "n_vocab");
  bad([](ModelConfig& c) { c.n_ctx = 0; }, "n_ctx");
  bad([](ModelConfig& c) { c.rms_eps = 0; }, "rms_eps");
  bad([](ModelConfig& c) { c.rope_base_local = NAN; }, "rope_base_local");
  bad([](ModelConfig& c) { c.rope_base_global = -1; }, "rope_base_global");
  bad([](ModelConfig& c) { c.sliding_window = -4; }, "sliding_window");
  bad([](ModelConfig& c) { c.sliding_window = 0; }, "sliding_window is 0");
  bad([](ModelConfig& c) { c.is_local.pop_back(); }, "is_local has 7 entries");
  bad([](ModelConfig& c) { c.arch = Arch::llama; }, "arch llama has no local layers");
  // An unknown architecture cannot reach a config: the name table refuses it (the GGUF
  // loader's one-line error is tested in test_arch_options).
  EXPECT_FALSE(parse_arch("gpt-j").has_value());
  ModelConfig named = good;
  named.n_ff = 0;
  expect_error([&] { named.validate(); }, "'glimmer-tiny'");
  expect_error([] { builtin_config("glimmer-7b"); }, "glimmer-30b");
}

TEST(MemoryPlan, SpecKvFigures) {
  const MemoryPlan m = plan_memory(builtin_config("glimmer-30b"), spec_params());
  // 2 (K,V) × 2 heads × 128 × 2 bytes.
  EXPECT_EQ(m.kv.bytes_per_token_layer, 1024);
  // All 52 layers at 128K: 52 × 2^17 × 2^10 = 6.5 × 2^30 exactly.
  EXPECT_EQ(m.kv.all_global, 52ll * 131072 * 1024);
  EXPECT_DOUBLE_EQ(m.kv.all_global / kGiB, 6.5);
  // 13 global at 128K + 39 local at 2048 + the engine's headroom for a 512-token prefill
  // batch (kv_slots.h): ≈ 1.7 GiB.
  EXPECT_EQ(m.kv.local_slots, 2048 + 512);
  EXPECT_EQ(m.kv.hybrid, (13ll * 131072 + 39ll * (2048 + 512)) * 1024);
  EXPECT_EQ(std::round(m.kv.hybrid / kGiB * 10), 17);
  // 32 KV heads: 16× both.
  EXPECT_EQ(m.kv_mha.all_global, 16 * m.kv.all_global);
  EXPECT_EQ(m.kv_mha.hybrid, 16 * m.kv.hybrid);
}

TEST(MemoryPlan, SpecWeightFigures) {
  const ModelConfig c = builtin_config("glimmer-30b");
  // Published: 30.28B at Q4_K_M (~4.85 bpw) = 18.4 GB = 17.1 GiB; here the bpw comes out of
  // the per-tensor rules (26 "more bits" layers' attn_v/ffn_down and the output at Q6_K).
  const WeightEstimate q4km = estimate_weights(c, "Q4_K_M");
  EXPECT_EQ(std::round(q4km.bpw * 100), 485);
  EXPECT_EQ(std::round(q4km.bytes / 1e8), 184);
  EXPECT_EQ(std::round(q4km.bytes / kGiB * 10), 171);
  EXPECT_NE(q4km.description.find("53 x Q6_K"), std::string::npos) << q4km.description;  // 26·2 + output
  // Pure-Q4_K "small" mix ~4.55 bpw: 17.2 GB; a dynamic mix at 5.3 bpw: 20.1 GB.
  // The published figure is 30.28B × 4.55 / 8; our Q4_K_S (Q4_K, output Q6_K) is 4.56 bpw, 17.25 GB.
  EXPECT_EQ(std::round(estimate_weights(c, "4.55").bytes / 1e8), 172);
  EXPECT_NEAR(estimate_weights(c, "Q4_K_S").bytes / 1e9, 17.2, 0.1);
  EXPECT_EQ(std::round(estimate_weights(c, "5.3").bytes / 1e8), 201);
  EXPECT_EQ(estimate_weights(c, "5.3bpw").bytes, estimate_weights(c, "5.3").bytes);
  // Fits a 24 GB device with the hybrid KV cache and activations.
  const MemoryPlan m = plan_memory(c, spec_params());
  EXPECT_TRUE(m.fits);
  EXPECT_EQ(m.total_bytes, m.weights.bytes + m.kv.hybrid + m.activation_bytes);
  PlanParams small = spec_params();
  small.device_bytes = parse_byte_size("20GB");
  EXPECT_FALSE(plan_memory(c, small).fits);
}

TEST(MemoryPlan, UniformTypesAreExact) {
  const ModelConfig c = builtin_config("glimmer-30b");
  const ParamCount p = count_params(c);
  const int64_t matrices = p.total - p.norms;  // every matrix row of 6656/4096/24576 divides by 256
  EXPECT_EQ(estimate_weights(c, "F16").bytes, 2 * matrices + 4 * p.norms);
  EXPECT_EQ(estimate_weights(c, "bf16").bytes, 2 * matrices + 4 * p.norms);
  EXPECT_EQ(estimate_weights(c, "Q8_0").bytes, matrices / 32 * 34 + 4 * p.norms);
  EXPECT_EQ(estimate_weights(c, "F32").bytes, 4 * p.total);
  EXPECT_EQ(estimate_weights(c, "Q6_K").bytes, matrices / 256 * 210 + 4 * p.norms);
  expect_error([&] { estimate_weights(c, "Q9_X"); }, "Q9_X");
  expect_error([&] { estimate_weights(c, "0"); }, "bits per weight");
  expect_error([&] { estimate_weights(c, "Q8_K"); }, "not a weight storage type");
}

TEST(MemoryPlan, NarrowRowsFallBackLikeLlamaCpp) {
  // glimmer-tiny's rows (64, 160) are not multiples of 256: Q4_K → Q5_0, Q6_K → Q8_0.
  const WeightEstimate w = estimate_weights(builtin_config("glimmer-tiny"), "Q4_K_M");
  EXPECT_EQ(w.description.find("x Q4_K"), std::string::npos) << w.description;
  EXPECT_EQ(w.description.find("x Q6_K"), std::string::npos) << w.description;
  EXPECT_NE(w.description.find("x Q5_0"), std::string::npos) << w.description;
  EXPECT_NE(w.description.find("x Q8_0"), std::string::npos) << w.description;
}

TEST(MemoryPlan, ContextHeadroomAndKvTypes) {
  const ModelConfig c = builtin_config("glimmer-30b");
  PlanParams p = spec_params();
  p.n_ctx = 1000;  // shorter than the window: local layers hold the whole context too
  MemoryPlan m = plan_memory(c, p);
  EXPECT_EQ(m.kv.local_slots, 1000);
  EXPECT_EQ(m.kv.global_slots, 1024);  // global layers grow in 256-slot chunks
  EXPECT_EQ(m.kv.hybrid, (13 * 1024 + 39 * 1000) * m.kv.bytes_per_token_layer);
  p.n_ctx = 8192;
  p.local_headroom = 64;
  m = plan_memory(c, p);
  EXPECT_EQ(m.kv.local_slots, 2048 + 64);
  p.n_ctx = 0;  // the model's own context length
  EXPECT_EQ(plan_memory(c, p).params.n_ctx, 131072);
  EXPECT_EQ(kv_bytes_per_token_layer(2, 128, KvType::F32), 2048);
  EXPECT_EQ(kv_bytes_per_token_layer(2, 128, KvType::F16), 1024);
  EXPECT_EQ(kv_bytes_per_token_layer(2, 128, KvType::BF16), 1024);
  EXPECT_EQ(kv_type_from_name("BF16"), KvType::BF16);
  expect_error([] { kv_type_from_name("int4"); }, "f32, f16, bf16, q8_0");
  // q8_0: 34 bytes per 32 values.
  EXPECT_EQ(kv_bytes_per_token_layer(2, 128, KvType::Q8_0), 2 * 2 * 4 * 34);
  // An all-global model: hybrid and all-global agree.
  const MemoryPlan llama = plan_memory(builtin_config("llama-1b"), {});
  EXPECT_EQ(llama.kv.hybrid, llama.kv.all_global);
  // Exact bytes from a file override the type.
  PlanParams exact = spec_params();
  exact.weight_bytes = 17'000'000'000;
  EXPECT_EQ(plan_memory(c, exact).weights.bytes, 17'000'000'000);
  p = spec_params();
  p.n_ctx = -5;
  expect_error([&] { plan_memory(c, p); }, "context length");
  p = spec_params();
  p.batch = 0;
  expect_error([&] { plan_memory(c, p); }, "batch");
}

TEST(MemoryPlan, ActivationFormula) {
  const ModelConfig c = builtin_config("glimmer-30b");
  // B = 512: 4·512·(2·6656 + 2·4096 + 2·256 + 2·24576) + 512·24576·292/256 + 4·131072.
  const int64_t want = 4ll * 512 * (2 * 6656 + 2 * 4096 + 2 * 256 + 2 * 24576) + 512ll * 24576 * 292 / 256 + 4ll * 131072;
  EXPECT_EQ(activation_bytes(c, 512, 131072), want);
  EXPECT_LT(activation_bytes(c, 512, 100), want);  // the batch never exceeds the context
}

TEST(MemoryPlan, ByteSizes) {
  EXPECT_EQ(parse_byte_size("24GB"), 24'000'000'000);
  EXPECT_EQ(parse_byte_size("24GiB"), 24ll << 30);
  EXPECT_EQ(parse_byte_size("24 gib"), 24ll << 30);
  EXPECT_EQ(parse_byte_size("512MiB"), 512ll << 20);
  EXPECT_EQ(parse_byte_size("1.5TB"), 1'500'000'000'000);
  EXPECT_EQ(parse_byte_size("1000"), 1000);
  for (const char* bad : {"24G", "abc", "-5GB", "", "GB", "1.2.3GB", "1e30TB"}) {
    expect_error([&] { parse_byte_size(bad); }, "bad size");
  }
  EXPECT_EQ(format_bytes(6979321856), "6.98 GB / 6.50 GiB");
}

// Counted by hand from the shapes in companion_plan.h and equal to what transformers 5.25
// builds for the released config (MuseGlimmerVisionModel + adapter + projection:
// 1,852,639,744 + 41,943,040 + 27,262,976; MuseGlimmerAssistantModel: 2,555,985,152).
TEST(MemoryPlan, MuseGlimmerCompanions) {
  // per encoder block: 4·(1536² + 1536) + 2·1536·8960 + 8960 + 1536 + 4·1536 = 36,985,088
  const int64_t block = 4 * (1536ll * 1536 + 1536) + 2 * 1536ll * 8960 + 8960 + 1536 + 4 * 1536;
  EXPECT_EQ(block, 36985088);
  // + patch embedding 1536·2·3·14², positions 32²·1536, ln_pre/ln_post 4·1536, adapter
  //   6144·4096 + 4096², projection 4096·6656
  EXPECT_EQ(vision_params(released_muse_glimmer_vision()),
            50 * block + 1536ll * 1176 + 1024ll * 1536 + 4 * 1536 + 6144ll * 4096 + 4096ll * 4096 + 4096ll * 6656);
  EXPECT_EQ(vision_params(released_muse_glimmer_vision()), 1921845760);
  // per drafter layer: 6656·4096·2 + 2·6656·1024 + 3·6656·19968 + 2·128 + 2·6656 = 466,892,032
  EXPECT_EQ(drafter_params(released_muse_glimmer_drafter()), 5 * 466892032ll + 6656 + 5ll * 6656 * 6656 + 6656);
  EXPECT_EQ(drafter_params(released_muse_glimmer_drafter()), 2555985152);
  PlanParams p;
  p.n_ctx = 131072;
  p.vision = released_muse_glimmer_vision();
  p.drafter = released_muse_glimmer_drafter();
  const MemoryPlan with = plan_memory(builtin_config("muse-glimmer-30b"), p);
  ASSERT_EQ(with.companions.size(), 2u);
  EXPECT_EQ(with.companions[0].bytes, 2 * 1921845760ll);
  EXPECT_EQ(with.total_with_companions, with.total_bytes + with.companions[0].bytes + with.companions[1].bytes);
}

TEST(MemoryPlan, VisionEncoderCostPerImage) {
  const VisionShape v = released_muse_glimmer_vision();
  // A 1920 x 1080 screenshot under the 4096 cap: 39 x 69 cells = 78 x 138 patches.
  const VisionImageCost c = vision_image_cost(v, 78, 138);
  EXPECT_EQ(c.patches, 10764);
  EXPECT_EQ(c.tokens, 2691);
  EXPECT_EQ(c.full_layers, 13);  // blocks 3, 7, ..., 47 and the last
  EXPECT_EQ(c.window_layers, 37);
  // per block 2·N·(4·1536² + 2·1536·8960), 50 blocks: 39.8 TFLOP
  EXPECT_DOUBLE_EQ(c.matmul_flops, 50.0 * 2 * 10764 * (4.0 * 1536 * 1536 + 2.0 * 1536 * 8960));
  // windows of 32 x 32 patches: rows 32 + 32 + 14, columns 4 x 32 + 10
  const double windowed = (32.0 * 32 + 32.0 * 32 + 14.0 * 14) * (4 * 32.0 * 32 + 10.0 * 10);
  EXPECT_DOUBLE_EQ(c.attention_flops, 4.0 * 1536 * (13.0 * 10764 * 10764 + 37 * windowed));
  EXPECT_NEAR(c.attention_flops / 1e12, 11.4, 0.1);
  EXPECT_DOUBLE_EQ(c.adapter_flops, 2.0 * 2691 * (6144.0 * 4096 + 4096.0 * 4096 + 4096.0 * 6656));
  EXPECT_THROW(vision_image_cost(v, 77, 138), squeeze::Error);  // not a whole number of merged tokens
  // The plan prints it for 1024 and 4096 tokens.
  PlanParams p;
  p.vision = v;
  const MemoryPlan plan = plan_memory(builtin_config("muse-glimmer-30b"), p);
  ASSERT_EQ(plan.vision_images.size(), 2u);
  EXPECT_EQ(plan.vision_images[0].tokens, 1024);
  EXPECT_EQ(plan.vision_images[1].patches, 16384);
  EXPECT_NE(format_plan(plan).find("4096 image tokens (16384 patches)"),
            std::string::npos);
}
