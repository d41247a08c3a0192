// tests/model/test_random_model.cpp — `make-model`'s writer: a quantization preset gives
// each tensor the preset's type (Q4_K_M's mix, as convert and quantize apply it), and the
// values, drawn in chunks over the thread pool, do not depend on the number of threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "core/thread_pool.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "model/model.h"
#include "model/quant_rules.h"
#include "model/random_model.h"
#include "model/weights.h"
#include "quant/matmul.h"
#include "quant/packed.h"
#include "quant/traits.h"

using namespace squeeze;
using namespace squeeze::model;

namespace {

std::string random_model_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("squeeze_randmodel_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// qwen3moe-tiny at widths the K-quants block (rows of 256): expert stacks, a router, a
// dense layer and an untied head, so most of the preset's rules apply.
ModelConfig wide_moe() {
  ModelConfig c = builtin_config("qwen3moe-tiny");
  c.n_embd = 256, c.n_head = 8, c.head_dim = 32, c.n_ff = 512, c.n_ff_exp = 256;
  return c;
}

}  // namespace

TEST(RandomModel, PresetGivesEachTensorThePresetsType) {
  const ModelConfig c = wide_moe();
  const auto preset = find_quant_preset("Q4_K_M");
  ASSERT_TRUE(preset.has_value());
  const std::string path = random_model_path("q4km.gguf");
  write_random_model({.config = c, .preset = preset, .seed = 3, .path = path});
  const gguf::File f(path);
  EXPECT_EQ(f.metadata().get_u32("general.file_type"), preset->file_type);
  int q6k = 0, q4k = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const TensorRole role{.name = t.name, .row_length = t.ne[0], .n_dims = t.n_dims, .layer = layer_of(t.name),
                          .n_layer = c.n_layer, .tied_output = c.tied_output};
    EXPECT_EQ(t.type, fit_row_type(preset_tensor_type(*preset, role), t.ne[0], RowFallback::computable)) << t.name;
    q6k += t.type == gguf::GgmlType::Q6_K;
    q4k += t.type == gguf::GgmlType::Q4_K;
  }
  EXPECT_EQ(f.tensor("blk.0.ffn_gate_inp.weight").type, gguf::GgmlType::F32);  // routers stay F32
  EXPECT_EQ(f.tensor("blk.0.ffn_gate_exps.weight").type, gguf::GgmlType::Q4_K);
  EXPECT_GT(q6k, 0);  // the head and the more-bits layers' attn_v / ffn_down(_exps)
  EXPECT_GT(q4k, q6k);
  std::filesystem::remove(path);
}

TEST(RandomModel, ValuesDoNotDependOnTheThreadCount) {
  // A vocabulary of 16640 × 256: a token_embd of 4.26M values, drawn in two chunks (16384
  // rows of 2^22 values, then 256).
  ModelConfig c = builtin_config("glimmer-tiny");
  c.n_embd = 256, c.n_head = 8, c.head_dim = 32, c.n_ff = 512, c.n_vocab = 16640;
  const std::string one = random_model_path("t1.gguf"), two = random_model_path("t2.gguf");
  const int threads = default_thread_pool().size();
  set_default_thread_count(1);
  write_random_model({.config = c, .type = gguf::GgmlType::Q8_0, .seed = 9, .path = one});
  set_default_thread_count(2);
  write_random_model({.config = c, .type = gguf::GgmlType::Q8_0, .seed = 9, .path = two});
  set_default_thread_count(threads);
  const gguf::File a(one), b(two);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const auto &x = a.tensors()[i].data, &y = b.tensors()[i].data;
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << a.tensors()[i].name;
  }
  // The two chunks of the embedding are different draws, not one chunk repeated.
  const auto& e = a.tensor("token_embd.weight");
  const size_t second = e.row_bytes() * 16384;
  ASSERT_LT(second + 1024, e.data.size());
  EXPECT_FALSE(std::equal(e.data.begin(), e.data.begin() + 1024, e.data.begin() + second));
  std::filesystem::remove(one);
  std::filesystem::remove(two);
}

// MXFP4_MOE (gpt-oss's release layout): experts MXFP4 — drawn directly as codes, with the
// block exponent that gives N(0, 1/cols)'s scale — biases, sinks and routers F32, the rest Q8_0.
TEST(RandomModel, Mxfp4MoePresetDrawsExpertsInMxfp4) {
  const ModelConfig c = builtin_config("gpt-oss-tiny");
  const auto preset = find_quant_preset("MXFP4_MOE");
  ASSERT_TRUE(preset.has_value());
  const std::string path = random_model_path("mxfp4.gguf");
  write_random_model({.config = c, .preset = preset, .seed = 5, .path = path});
  const gguf::File f(path);
  EXPECT_EQ(f.metadata().get_u32("general.file_type"), 38u);
  EXPECT_EQ(f.tensor("blk.0.ffn_gate_exps.weight").type, gguf::GgmlType::MXFP4);
  EXPECT_EQ(f.tensor("blk.3.ffn_down_exps.weight").type, gguf::GgmlType::MXFP4);
  EXPECT_EQ(f.tensor("blk.0.ffn_gate_exps.bias").type, gguf::GgmlType::F32);
  EXPECT_EQ(f.tensor("blk.0.attn_sinks.weight").type, gguf::GgmlType::F32);
  EXPECT_EQ(f.tensor("blk.0.ffn_gate_inp.weight").type, gguf::GgmlType::F32);
  EXPECT_EQ(f.tensor("blk.0.attn_q.weight").type, gguf::GgmlType::Q8_0);
  EXPECT_EQ(f.tensor("output.weight").type, gguf::GgmlType::Q8_0);
  // The expert values' RMS is the matrix scale 1/sqrt(cols) within a power-of-two step.
  const auto& t = f.tensor("blk.1.ffn_up_exps.weight");
  const auto m = Model::load(path);
  const quant::QMatrix w = m->weights().layers[1].up_exps.all;
  std::vector<float> row(static_cast<size_t>(w.cols));
  double ss = 0;
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w, r, row.data());
    for (float v : row) ss += static_cast<double>(v) * v;
  }
  const double rms = std::sqrt(ss / static_cast<double>(w.rows * w.cols)), want = 1.0 / std::sqrt(64.0);
  EXPECT_GT(rms, want / std::sqrt(2.0)) << t.name;
  EXPECT_LT(rms, want * std::sqrt(2.0)) << t.name;
  // The experts (32 and 64 rows each: whole groups) pack where the ISA has the packed
  // MXFP4 tile, and an expert's packed view computes its unpacked product to f32 rounding.
  EXPECT_EQ(w.packed != nullptr, quant::packs(gguf::GgmlType::MXFP4));
  const quant::QMatrix e = m->weights().layers[1].up_exps.expert(3);
  std::vector<float> x(static_cast<size_t>(e.cols));
  for (size_t k = 0; k < x.size(); ++k) x[k] = std::sin(0.37f * static_cast<float>(k) + 1.0f);
  std::vector<float> y(static_cast<size_t>(e.rows)), want_y(y.size());
  quant::gemv(default_thread_pool(), e, x.data(), y.data());
  quant::gemv(default_thread_pool(), e, x.data(), want_y.data(), &quant::traits(e.type));  // the unpacked dots
  for (int64_t r = 0; r < e.rows; ++r) {
    dequantize_row(e, r, row.data());
    double mag = 0;
    for (int64_t k = 0; k < e.cols; ++k) mag += std::fabs(static_cast<double>(row[k]) * x[k]);
    EXPECT_NEAR(y[r], want_y[r], 1e-5 * mag + 1e-30) << "row " << r;
  }
  std::filesystem::remove(path);
}
