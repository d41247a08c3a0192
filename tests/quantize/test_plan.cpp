// tests/quantize/test_plan.cpp — preset rules, plans from configs and files, overrides and
// row fallbacks, the dynamic allocator, and the streamed quantizer against its own plan.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "gguf/reader.h"
#include "model/memory_plan.h"
#include "model/quant_rules.h"
#include "quant/imatrix.h"
#include "quant/quantize.h"
#include "quantize/dynamic.h"
#include "quantize/plan.h"
#include "quantize/run.h"
#include "quantize_test_util.h"

using namespace squeeze;
using gguf::GgmlType;
using quantize_test::expect_error;
using quantize_test::TempDir;

namespace {

const quantize::TensorPlan& find(const quantize::Plan& p, const std::string& name) {
  for (const auto& t : p.tensors)
    if (t.src->name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

quantize::RunOptions quiet(const gguf::File* in, std::string out) {
  return {.input = in, .output_path = std::move(out), .table = nullptr, .progress = false};
}

}  // namespace

TEST(QuantRules, MoreBitsLayersFollowLlamaCpp) {
  // n = 16: layers < 2, ≥ 14, and (i − 2) % 3 == 2 → 4, 7, 10, 13.
  std::vector<int64_t> got;
  for (int64_t i = 0; i < 16; ++i)
    if (model::more_bits_layer(i, 16)) got.push_back(i);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 4, 7, 10, 13, 14, 15}));
}

TEST(QuantRules, RowFallbacks) {
  using model::RowFallback;
  EXPECT_EQ(model::fit_row_type(GgmlType::Q4_K, 512, RowFallback::computable), GgmlType::Q4_K);
  EXPECT_EQ(model::fit_row_type(GgmlType::Q4_K, 96, RowFallback::computable), GgmlType::Q8_0);
  EXPECT_EQ(model::fit_row_type(GgmlType::Q6_K, 100, RowFallback::computable), GgmlType::F16);
  EXPECT_EQ(model::fit_row_type(GgmlType::Q4_0, 48, RowFallback::computable), GgmlType::F16);
  EXPECT_EQ(model::fit_row_type(GgmlType::F32, 7, RowFallback::computable), GgmlType::F32);
  EXPECT_EQ(model::fit_row_type(GgmlType::Q4_K, 96, RowFallback::llama_cpp), GgmlType::Q5_0);
  EXPECT_EQ(model::layer_of("blk.12.attn_v.weight"), 12);
  EXPECT_EQ(model::layer_of("blk.x.attn_v.weight"), -1);
  EXPECT_EQ(model::layer_of("output.weight"), -1);
}

// The 1b preset's Q4_K_M average is what the issue asks for (4.5–5.0 bpw), and the
// quantizer's plan and the memory planner's estimate are the same rules.
TEST(QuantizePlan, Glimmer1bQ4KMFromConfig) {
  const auto c = model::builtin_config("glimmer-1b");
  const auto src = quantize::source_from_config(c);
  const auto plan = quantize::make_plan(src, {.preset = "Q4_K_M"});
  EXPECT_GE(plan.bpw(), 4.5);
  EXPECT_LE(plan.bpw(), 5.0);
  EXPECT_EQ(plan.bytes(), model::estimate_weights(c, "Q4_K_M").bytes);
  EXPECT_EQ(plan.file_type, 15u);
  EXPECT_EQ(find(plan, "output.weight").type, GgmlType::Q6_K);
  EXPECT_EQ(find(plan, "token_embd.weight").type, GgmlType::Q4_K);  // untied: base type
  EXPECT_EQ(find(plan, "blk.0.attn_v.weight").type, GgmlType::Q6_K);
  EXPECT_EQ(find(plan, "blk.2.attn_v.weight").type, GgmlType::Q4_K);
  EXPECT_EQ(find(plan, "blk.4.ffn_down.weight").type, GgmlType::Q6_K);
  EXPECT_EQ(find(plan, "blk.4.ffn_up.weight").type, GgmlType::Q4_K);
  EXPECT_EQ(find(plan, "blk.4.attn_norm.weight").type, GgmlType::F32);
  for (const char* preset : {"Q5_K_M", "Q6_K", "Q8_0", "F16"})
    EXPECT_EQ(quantize::make_plan(src, {.preset = preset}).bytes(), model::estimate_weights(c, preset).bytes) << preset;
}

TEST(QuantizePlan, OverridesAndFallbacks) {
  auto c = quantize_test::small_config();
  c.head_dim = 16;  // q_dim 64: attn_output rows of 64 fit no K-quant
  const auto src = quantize::source_from_config(c);
  const auto plan = quantize::make_plan(
      src, {.preset = "Q4_K_M", .output_type = GgmlType::Q8_0,
            .overrides = {quantize::parse_override("ffn_up=Q5_K"), quantize::parse_override("blk\\.0\\..*=F16")}});
  const auto& o = find(plan, "blk.1.attn_output.weight");
  EXPECT_EQ(o.type, GgmlType::Q8_0);
  EXPECT_NE(o.note.find("row 64"), std::string::npos) << o.note;
  EXPECT_EQ(find(plan, "token_embd.weight").type, GgmlType::Q8_0);  // tied: the output head
  EXPECT_EQ(find(plan, "blk.1.ffn_up.weight").type, GgmlType::Q5_K);
  EXPECT_EQ(find(plan, "blk.0.ffn_up.weight").type, GgmlType::Q5_K);  // first match wins
  EXPECT_EQ(find(plan, "blk.0.ffn_gate.weight").type, GgmlType::F16);
  EXPECT_EQ(find(plan, "blk.0.attn_norm.weight").type, GgmlType::F32);  // never quantized
  expect_error([] { quantize::parse_override("attn_v"); }, "REGEX=TYPE");
  expect_error([] { quantize::parse_override("attn_v=Q5_0"); }, "Q5_0");
  expect_error([] { quantize::parse_override("(=Q8_0"); }, "regular expression");
  expect_error([&] { quantize::make_plan(src, {.preset = "Q3_K_M"}); }, "unknown quantization type");
}

TEST(QuantizeRun, WritesWhatThePlanSays) {
  TempDir dir;
  const auto path = quantize_test::write_small_model(dir);
  const gguf::File in(path);
  const auto src = quantize::source_from_file(in);
  EXPECT_EQ(src.n_layer, 2);
  EXPECT_TRUE(src.tied_output);
  for (const char* preset : {"Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0", "F16", "BF16"}) {
    const auto plan = quantize::make_plan(src, {.preset = preset});
    const auto dry = quantize::run_plan(plan, quiet(&in, ""));
    const std::string out = dir.file(std::string(preset) + ".gguf");
    const auto r = quantize::run_plan(plan, quiet(&in, out));
    const gguf::File f(out);
    EXPECT_EQ(r.tensor_bytes, dry.tensor_bytes) << preset;
    EXPECT_EQ(r.file_bytes, f.file_size()) << preset;
    EXPECT_EQ(f.metadata().get_u32("general.quantization_version"), 2u);
    EXPECT_EQ(f.metadata().get_u32("general.file_type"), plan.file_type);
    EXPECT_EQ(f.metadata().get_string("tokenizer.ggml.model"), in.metadata().get_string("tokenizer.ggml.model"));
    uint64_t bytes = 0;
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
      const auto& t = f.tensors()[i];
      EXPECT_EQ(t.name, plan.tensors[i].src->name);
      EXPECT_EQ(t.type, plan.tensors[i].type) << preset << " " << t.name;
      bytes += t.n_bytes;
      // The reported error is the error of the bytes written.
      if (t.n_dims == 2) {
        const auto& s = in.tensor(t.name);
        const auto back = quant::dequantize_tensor(t.type, t.data.data(), t.n_rows(), t.row_length());
        const auto e = quant::compare(reinterpret_cast<const float*>(s.data.data()), back.data(), t.n_rows(), t.row_length());
        EXPECT_NEAR(r.tensors[i].error, e.rel_rmse, 1e-9 + 1e-6 * e.rel_rmse) << t.name;
      }
    }
    EXPECT_EQ(static_cast<int64_t>(bytes), r.tensor_bytes);
  }
}

TEST(QuantizeRun, RefusesToOverwriteItsInputAndToRequantize) {
  TempDir dir;
  const auto path = quantize_test::write_small_model(dir);
  const auto before = std::filesystem::file_size(path);
  {
    const gguf::File in(path);
    const auto src = quantize::source_from_file(in);
    const auto plan = quantize::make_plan(src, {.preset = "Q8_0"});
    expect_error([&] { quantize::run_plan(plan, quiet(&in, path)); }, "");
    quantize::run_plan(plan, quiet(&in, dir.file("q8.gguf")));
  }
  EXPECT_EQ(std::filesystem::file_size(path), before);
  const gguf::File q8(dir.file("q8.gguf"));
  const auto src = quantize::source_from_file(q8);
  expect_error([&] { quantize::run_plan(quantize::make_plan(src, {.preset = "Q4_K_M"}), quiet(&q8, dir.file("x.gguf"))); },
               "--allow-requantize");
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.gguf")));
  // Same type: copied unchanged, no requantizing.
  const auto same = quantize::run_plan(quantize::make_plan(src, {.preset = "Q8_0"}), quiet(&q8, dir.file("same.gguf")));
  EXPECT_EQ(same.requantized, 0);
  auto o = quiet(&q8, dir.file("re.gguf"));
  o.allow_requantize = true;
  EXPECT_GT(quantize::run_plan(quantize::make_plan(src, {.preset = "Q4_K_M"}), o).requantized, 0);
}

TEST(DynamicPlan, LandsOnTargetAndBeatsPresetsAtEqualBits) {
  TempDir dir;
  const auto path = quantize_test::write_small_model(dir);
  const gguf::File in(path);
  const auto src = quantize::source_from_file(in);
  // A synthetic imatrix with unequal column importance, so tensors differ in sensitivity.
  quant::ImportanceMatrix im;
  for (const auto& t : in.tensors()) {
    if (t.n_dims != 2) continue;
    std::vector<float> x(static_cast<size_t>(t.row_length()));
    for (size_t c = 0; c < x.size(); ++c) x[c] = static_cast<float>(1 + (c * 7919 + t.name.size()) % 13);
    im.add(t.name, x.data(), 1, t.row_length());
  }
  // Measure once; allocate for several budgets. Quantization is deterministic, so the
  // measured errors (whole tensors here, no sampling) are the errors of the written file.
  auto plan = quantize::make_plan(src, {.dynamic = true});
  const quantize::DynamicOptions base{.imatrix = &im, .progress = false};
  const auto measured = quantize::measure_plan(plan, base);
  auto objective = [](const quantize::Plan& p) {  // element-weighted RMS of the relative errors
    double n = 0, s = 0;
    for (const auto& t : p.tensors)
      if (!t.fixed) n += double(t.src->n_elements()), s += double(t.src->n_elements()) * t.est_error * t.est_error;
    return std::sqrt(s / n);
  };
  double last_error = INFINITY;
  for (double target : {4.6, 5.3, 6.0, 7.0}) {
    auto o = base;
    o.target_bpw = target;
    quantize::allocate(plan, measured, o);
    EXPECT_LE(plan.bpw(), target) << target;
    EXPECT_GE(plan.bpw(), target * 0.98) << target;
    EXPECT_LT(objective(plan), last_error) << target;
    last_error = objective(plan);
  }
  const auto written = quantize::run_plan(plan, {.input = &in, .output_path = dir.file("d.gguf"), .imatrix = &im,
                                                 .table = nullptr, .progress = false});
  EXPECT_NEAR(written.rms_error, last_error, 1e-9);
  // At the bits of Q4_K_M and Q5_K_M, the dynamic plan's objective is no worse than the
  // preset's (whose errors come from writing it: the same measure).
  for (const char* preset : {"Q4_K_M", "Q5_K_M"}) {
    const auto fixed = quantize::make_plan(src, {.preset = preset});
    const auto pr = quantize::run_plan(fixed, {.input = &in, .output_path = dir.file("p.gguf"), .imatrix = &im,
                                               .table = nullptr, .progress = false});
    auto o = base;
    o.target_bpw = fixed.bpw();
    quantize::allocate(plan, measured, o);
    EXPECT_LE(plan.bpw(), pr.bpw) << preset;
    EXPECT_LE(objective(plan), pr.rms_error) << preset;
  }
  auto low = base;
  low.target_bpw = 3.0;
  expect_error([&] { quantize::allocate(plan, measured, low); }, "below the smallest");
}

// A tensor whose rows fit no K-quant (attn_output rows of 64) is the allocator's to
// choose among the candidates that fit it, not pinned to the Q8_0 row fallback: with
// bits to spare it gets F16 like every other matrix. When no candidate fits, it keeps
// the fallback.
TEST(DynamicPlan, RowFallbackTensorsChooseAmongFittingTypes) {
  TempDir dir;
  auto c = quantize_test::small_config();
  c.head_dim = 16;
  const auto path = quantize_test::write_small_model(dir, c);
  const gguf::File in(path);
  const auto src = quantize::source_from_file(in);
  auto plan = quantize::make_plan(src, {.dynamic = true});
  EXPECT_FALSE(find(plan, "blk.1.attn_output.weight").fixed);
  quantize::plan_dynamic(plan, {.target_bpw = 24, .progress = false});
  for (const auto& t : plan.tensors) {
    if (!t.fixed) {
      EXPECT_EQ(t.type, GgmlType::F16) << t.src->name;
    }
  }
  EXPECT_EQ(find(plan, "blk.1.attn_output.weight").type, GgmlType::F16);
  auto k_only = quantize::make_plan(src, {.dynamic = true});
  quantize::plan_dynamic(k_only, {.target_bpw = 24, .candidates = {GgmlType::Q4_K, GgmlType::Q6_K}, .progress = false});
  const auto& o = find(k_only, "blk.1.attn_output.weight");
  EXPECT_TRUE(o.fixed);
  EXPECT_EQ(o.type, GgmlType::Q8_0);
}

TEST(DynamicPlan, SamplesRowsOfLargeTensors) {
  TempDir dir;
  const auto path = quantize_test::write_small_model(dir);
  const gguf::File in(path);
  const auto src = quantize::source_from_file(in);
  const auto& ffn = *std::find_if(src.tensors.begin(), src.tensors.end(),
                                  [](const auto& t) { return t.name == "blk.0.ffn_up.weight"; });
  bool sampled = false;
  const auto full = quantize::measure_tensor(ffn, {.progress = false}, &sampled);
  EXPECT_FALSE(sampled);
  const auto part = quantize::measure_tensor(ffn, {.max_sample_elements = 256 * 64, .progress = false}, &sampled);
  EXPECT_TRUE(sampled);
  ASSERT_EQ(full.size(), part.size());
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(full[i].type, part[i].type);
    EXPECT_EQ(full[i].bits, part[i].bits);  // bits are the whole tensor's
    // 64 of 512 rows of iid N(0, 1/256) weights: the sampled error estimates the full one
    // to within a few percent (16k elements of a ratio of sums); 15% leaves margin.
    EXPECT_NEAR(part[i].error, full[i].error, 0.15 * full[i].error) << i;
  }
}
