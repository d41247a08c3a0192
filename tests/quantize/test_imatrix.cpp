// tests/quantize/test_imatrix.cpp — the importance matrix: accumulation, mean x²,
// merge, GGUF round trip in llama.cpp's layout, validation of bad files, and the
// collector over a model's forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "model/session.h"
#include "quant/imatrix.h"
#include "quant/quantize.h"
#include "quantize/imatrix_collect.h"
#include "quantize_test_util.h"

using namespace squeeze;
using quant::ImportanceMatrix;
using quantize_test::expect_error;
using quantize_test::TempDir;

namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.5f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Σx² over 5 rows of 7 columns is a sum of 5 float products accumulated in double:
// relative error a few float ulps (the f32 products), so 1e-6 relative.
constexpr double kSumTolerance = 1e-6;

}  // namespace

TEST(ImportanceMatrix, AccumulatesSquaresAndCountsPerColumn) {
  const int64_t rows = 5, cols = 7;
  const auto a = random_values(rows * cols, 1), b = random_values(3 * cols, 2);
  ImportanceMatrix im;
  im.add("w", a.data(), rows, cols);
  im.add("w", b.data(), 3, cols);
  const auto mean = im.mean_sq("w");
  ASSERT_TRUE(mean.has_value());
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) s += double(a[r * cols + c]) * a[r * cols + c];
    for (int64_t r = 0; r < 3; ++r) s += double(b[r * cols + c]) * b[r * cols + c];
    EXPECT_NEAR((*mean)[c], s / 8, s / 8 * kSumTolerance) << c;
  }
  EXPECT_EQ(im.find("w")->counts[0], 8);
  EXPECT_FALSE(im.mean_sq("missing").has_value());
  expect_error([&] { im.add("w", a.data(), 1, cols - 1); }, "columns");
}

TEST(ImportanceMatrix, MergeAddsSumsCountsAndDatasets) {
  const auto a = random_values(4 * 3, 3), b = random_values(2 * 3, 4);
  ImportanceMatrix x, y, both;
  x.add("w", a.data(), 4, 3), x.chunk_count = 2, x.datasets = {"a.txt"};
  y.add("w", b.data(), 2, 3), y.add("v", b.data(), 2, 3), y.chunk_count = 1, y.datasets = {"b.txt"};
  both.add("w", a.data(), 4, 3), both.add("w", b.data(), 2, 3);
  x.merge(y);
  EXPECT_EQ(x.size(), 2u);
  EXPECT_EQ(x.chunk_count, 3);
  EXPECT_EQ(x.datasets, (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_EQ(x.find("w")->counts[0], 6);
  for (int c = 0; c < 3; ++c) EXPECT_DOUBLE_EQ(x.find("w")->sum2[c], both.find("w")->sum2[c]);
  ImportanceMatrix wrong;
  wrong.add("w", a.data(), 3, 4);
  expect_error([&] { x.merge(wrong); }, "columns");
}

TEST(ImportanceMatrix, SavesAndLoadsLlamaCppLayout) {
  TempDir dir;
  const auto a = random_values(6 * 32, 5);
  ImportanceMatrix im;
  im.add("blk.0.attn_q.weight", a.data(), 6, 32);
  im.add("output.weight", a.data(), 3, 64);
  im.chunk_count = 4, im.chunk_size = 128, im.datasets = {"calib.txt"};
  const std::string path = dir.file("im.gguf");
  im.save(path);

  const gguf::File f(path);
  EXPECT_EQ(f.metadata().get_string("general.type"), "imatrix");
  EXPECT_EQ(f.metadata().get_u32("imatrix.chunk_count"), 4u);
  EXPECT_EQ(f.metadata().get_u32("imatrix.chunk_size"), 128u);
  const auto& s = f.tensor("blk.0.attn_q.weight.in_sum2");
  EXPECT_EQ(s.type, gguf::GgmlType::F32);
  EXPECT_EQ(s.dims(), (std::vector<int64_t>{32, 1}));
  EXPECT_EQ(f.tensor("blk.0.attn_q.weight.counts").dims(), (std::vector<int64_t>{1, 1}));

  const ImportanceMatrix back = ImportanceMatrix::load(path);
  EXPECT_EQ(back.size(), 2u);
  EXPECT_EQ(back.chunk_count, 4);
  EXPECT_EQ(back.datasets, im.datasets);
  // Stored as f32: the mean survives to f32 rounding of sum and count (2 ulps).
  const auto m0 = im.mean_sq("output.weight"), m1 = back.mean_sq("output.weight");
  for (size_t c = 0; c < m0->size(); ++c) EXPECT_NEAR((*m1)[c], (*m0)[c], (*m0)[c] * 2.5e-7) << c;
}

TEST(ImportanceMatrix, RejectsFilesThatAreNotImatrices) {
  TempDir dir;
  auto write = [&](const std::string& name, auto fill) {
    gguf::Writer w(dir.file(name));
    fill(w);
    w.finish();
    return dir.file(name);
  };
  const std::vector<float> one = {1.0f}, two = {1.0f, 2.0f}, neg = {-1.0f, 2.0f};
  auto bytes = [](const std::vector<float>& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4);
  };
  const auto no_counts = write("nc.gguf", [&](gguf::Writer& w) { w.add_tensor({"a.in_sum2", gguf::GgmlType::F32, {2, 1}}, bytes(two)); });
  expect_error([&] { ImportanceMatrix::load(no_counts); }, "no matching 'a.counts'");
  const auto negative = write("neg.gguf", [&](gguf::Writer& w) {
    w.add_tensor({"a.in_sum2", gguf::GgmlType::F32, {2, 1}}, bytes(neg));
    w.add_tensor({"a.counts", gguf::GgmlType::F32, {1, 1}}, bytes(one));
  });
  expect_error([&] { ImportanceMatrix::load(negative); }, "negative");
  const auto model_like = write("model.gguf", [&](gguf::Writer& w) { w.add_tensor({"x.weight", gguf::GgmlType::F32, {2}}, bytes(two)); });
  expect_error([&] { ImportanceMatrix::load(model_like); }, "not an imatrix");
  const auto mismatch = write("mm.gguf", [&](gguf::Writer& w) {
    w.add_tensor({"a.in_sum2", gguf::GgmlType::F32, {1, 2}}, bytes(two));
    w.add_tensor({"a.counts", gguf::GgmlType::F32, {1, 1}}, bytes(one));
  });
  expect_error([&] { ImportanceMatrix::load(mismatch); }, "do not match");
}

// Columns the calibration never exercised have importance 0; blocks made only of them
// must still quantize to finite values (the search falls back to its unweighted choice).
TEST(ImportanceMatrix, ZeroImportanceBlocksStayFinite) {
  const int64_t cols = 512;
  const auto x = random_values(2 * cols, 9);
  std::vector<float> importance(cols, 0.0f);
  for (int64_t c = 256; c < cols; ++c) importance[c] = 1.0f + c % 7;
  for (auto t : {gguf::GgmlType::Q4_0, gguf::GgmlType::Q8_0, gguf::GgmlType::Q4_K, gguf::GgmlType::Q5_K, gguf::GgmlType::Q6_K}) {
    const auto q = quant::quantize_tensor({.type = t, .src = x.data(), .rows = 2, .cols = cols, .importance = importance.data()});
    const auto back = quant::dequantize_tensor(t, q.data(), 2, cols);
    for (float v : back) ASSERT_TRUE(std::isfinite(v)) << quant::traits(t).name;
    // Unweighted error of the whole row stays within a 4-bit type's reach (< 25% relative).
    EXPECT_LT(quant::compare(x.data(), back.data(), 2, cols).rel_rmse, 0.25) << quant::traits(t).name;
  }
}

TEST(ImatrixCollector, MapsIntermediatesToTheirWeights) {
  using quantize::consumers_of;
  EXPECT_EQ(consumers_of("blk.3.attn_norm", false),
            (std::vector<std::string>{"blk.3.attn_q.weight", "blk.3.attn_k.weight", "blk.3.attn_v.weight"}));
  EXPECT_EQ(consumers_of("blk.3.attn_out", false), (std::vector<std::string>{"blk.3.attn_output.weight"}));
  EXPECT_EQ(consumers_of("blk.10.ffn_norm", false), (std::vector<std::string>{"blk.10.ffn_gate.weight", "blk.10.ffn_up.weight"}));
  EXPECT_EQ(consumers_of("blk.0.ffn_act", false), (std::vector<std::string>{"blk.0.ffn_down.weight"}));
  EXPECT_EQ(consumers_of("result_norm", false), (std::vector<std::string>{"output.weight"}));
  EXPECT_EQ(consumers_of("result_norm", true), (std::vector<std::string>{"token_embd.weight"}));
  EXPECT_TRUE(consumers_of("blk.0.attn_q", false).empty());
  EXPECT_TRUE(consumers_of("logits", false).empty());
}

TEST(ImatrixCollector, CollectsEveryMatrixOverChunks) {
  TempDir dir;
  const auto path = quantize_test::write_small_model(dir);
  const auto m = model::Model::load(path);
  std::vector<int32_t> tokens(100);
  std::mt19937 rng(3);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % 300);
  quantize::CollectStats stats;
  const auto im = quantize::collect_imatrix(*m, tokens, {.chunk = 32, .max_chunks = 0, .progress = false}, &stats);
  EXPECT_EQ(stats.chunks, 3);  // whole chunks of 32 in 100 tokens
  EXPECT_EQ(im.chunk_count, 3);
  EXPECT_TRUE(std::isfinite(stats.perplexity) && stats.perplexity > 1);
  // Every matrix (tied output: token_embd takes the output head's inputs).
  EXPECT_EQ(im.size(), 2u * 7 + 1);
  for (const auto& [name, e] : im.entries()) {
    EXPECT_EQ(e.counts[0], 96) << name;
    for (double s : e.sum2) ASSERT_TRUE(std::isfinite(s) && s >= 0) << name;
  }
  // Q, K and V share their input.
  EXPECT_EQ(im.find("blk.1.attn_q.weight")->sum2, im.find("blk.1.attn_v.weight")->sum2);
  EXPECT_EQ(im.find("blk.1.ffn_down.weight")->n_cols, 512);

  // The sums are the squares of what the forward pass feeds the matrix: recompute
  // blk.1.ffn_act's from a dump of the same chunks.
  model::Session s(*m, {.n_ctx = 32});
  std::vector<double> manual(512, 0.0);
  s.set_dump([&](const std::string& name, const float* x, int64_t rows, int64_t cols) {
    if (name != "blk.1.ffn_act") return;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) manual[c] += double(x[r * cols + c]) * x[r * cols + c];
  });
  for (int c = 0; c < 3; ++c) {
    s.reset();
    s.forward(std::span<const int32_t>(tokens).subspan(c * 32, 32), true);
  }
  ASSERT_NE(im.find("blk.1.ffn_down.weight"), nullptr);
  const auto& got = im.find("blk.1.ffn_down.weight")->sum2;
  for (int c = 0; c < 512; ++c) EXPECT_DOUBLE_EQ(got[c], manual[c]) << c;
}
