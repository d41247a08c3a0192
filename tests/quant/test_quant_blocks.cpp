// tests/quant/test_quant_blocks.cpp — block layouts, traits tables, round-trip error
// bounds of the reference quantizers, importance weighting and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "gguf/ggml_type.h"
#include "quant/quantize.h"
#include "quant_test_util.h"

namespace squeeze::quant {
namespace {

using test::gaussian;
using test::heavy_tailed;

TEST(QuantTraits, GeometryMatchesGgufTypeTable) {
  for (Isa isa : test::all_isas()) {
    for (GgmlType type : supported_types()) {
      const QuantTraits* t = traits_for(type, isa);
      if (!t) continue;  // AVX2 absent on this CPU
      const auto info = gguf::ggml_type_info(type);
      EXPECT_EQ(t->block_size, info.block_size) << t->name;
      EXPECT_EQ(t->block_bytes, info.block_bytes) << t->name;
      EXPECT_EQ(std::string(t->name), std::string(info.name));
      EXPECT_EQ(t->isa, isa);
      ASSERT_NE(t->vec_dot, nullptr);
      const QuantTraits* act = traits_for(t->dot_type, isa);
      if (t->dot_type != GgmlType::F32) {
        ASSERT_NE(act, nullptr);
        EXPECT_NE(act->quantize_act_row, nullptr) << t->name;
      }
    }
  }
  EXPECT_EQ(traits(GgmlType::Q4_K).dot_type, GgmlType::Q8_K);
  EXPECT_EQ(traits(GgmlType::Q6_K).dot_type, GgmlType::Q8_K);
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::MXFP4})
    EXPECT_EQ(traits(t).dot_type, GgmlType::Q8_0);
  EXPECT_NEAR(bits_per_weight(GgmlType::MXFP4), 4.25, 1e-12);
  EXPECT_NEAR(bits_per_weight(GgmlType::Q4_1), 5.0, 1e-12);
  EXPECT_NEAR(bits_per_weight(GgmlType::Q5_0), 5.5, 1e-12);
  EXPECT_NEAR(bits_per_weight(GgmlType::Q5_1), 6.0, 1e-12);
  EXPECT_EQ(traits(GgmlType::BF16).dot_type, GgmlType::F32);
  EXPECT_NEAR(bits_per_weight(GgmlType::Q4_K), 4.5, 1e-12);
  EXPECT_NEAR(bits_per_weight(GgmlType::Q6_K), 6.5625, 1e-12);
}

TEST(QuantTraits, UnsupportedTypeIsAnError) {
  EXPECT_FALSE(is_supported(GgmlType::IQ2_XXS));
  EXPECT_THROW(traits(GgmlType::Q2_K), Error);
  EXPECT_THROW(row_bytes(GgmlType::Q4_K, 100), Error);
  EXPECT_EQ(row_bytes(GgmlType::Q4_K, 512), 288);
}

TEST(QuantBlocks, ScaleMinPackingRoundTrips) {
  std::uniform_int_distribution<int> d(0, 63);
  for (int rep = 0; rep < 100; ++rep) {
    uint8_t sc[8], m[8], packed[kKScaleBytes];
    for (int j = 0; j < 8; ++j) sc[j] = static_cast<uint8_t>(d(test::qrng())), m[j] = static_cast<uint8_t>(d(test::qrng()));
    k_pack_scale_min(sc, m, packed);
    for (int j = 0; j < 8; ++j) {
      uint8_t s2, m2;
      k_scale_min(packed, j, s2, m2);
      EXPECT_EQ(s2, sc[j]);
      EXPECT_EQ(m2, m[j]);
    }
  }
}

// ---- round-trip error, bounded by the step size of each type's grid ----------------
//
// Rounding to a grid of step Δ leaves an error uniform in ±Δ/2: mean square Δ²/12. For
// each group (block or sub-block) Δ is what the plain amax/qmax choice gives; the
// search only moves to scales with a smaller error on average, so the measured MSE
// must stay under mean(Δ²/12) times a slack for what the search cannot undo: the f16
// rounding of block scales (2^-11 relative, negligible) and, for the K-quants, the
// 6-bit / 8-bit quantization of the sub-block scales and mins, which shifts each
// sub-block's step by up to half a scale unit (1/126 of the largest for 6-bit).
constexpr double kSlackF16Scale = 1.05;  // statistical spread of 10^5 samples + f16 scales
constexpr double kSlackKScales = 1.25;   // + 6-bit scales/mins (measured ≈ 0.8 × Δ²/12 with them)

struct GridModel {
  int group;      // elements sharing one step
  double levels;  // Δ = range / levels
  bool affine;    // range = max − min(min, 0), else amax
  double slack;
};

GridModel grid_of(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return {32, 127, false, kSlackF16Scale};
    case GgmlType::Q4_0: return {32, 8, false, kSlackF16Scale};
    case GgmlType::Q5_0: return {32, 16, false, kSlackF16Scale};
    case GgmlType::Q4_1: return {32, 15, true, kSlackF16Scale};  // + f16 m: ≤ 2^-12 of the block's min
    case GgmlType::Q5_1: return {32, 31, true, kSlackF16Scale};
    case GgmlType::Q4_K: return {32, 15, true, kSlackKScales};
    case GgmlType::Q5_K: return {32, 31, true, kSlackKScales};
    case GgmlType::Q6_K: return {16, 32, false, kSlackKScales};
    case GgmlType::MXFP4: return {32, 0, false, kSlackF16Scale};  // predicted_mse_mxfp4; exact scales
    default: return {1, 0, false, 0};
  }
}

// MXFP4's grid is not uniform: with d = 2^(floor(log2 amax) − 3) (ggml's exponent; the
// search only keeps another where its error is smaller) the values are d·{0, 1, 2, 3, 4,
// 6, 8, 12}, steps d below 4d, 2d up to 8d and 4d up to 12d, beyond which a value clips to
// 12d. So each element gets its own interval's Δ²/12, or its clipping error.
double predicted_mse_mxfp4(const std::vector<float>& x) {
  double sum = 0;
  for (size_t b = 0; b < x.size(); b += kQK) {
    float amax = 0;
    for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[b + i]));
    if (amax == 0) continue;
    const double d = std::ldexp(1.0, std::ilogb(amax) - 3);
    for (int i = 0; i < kQK; ++i) {
      const double v = std::fabs(x[b + i]) / d;
      const double step = v < 4 ? 1 : v < 8 ? 2 : 4;
      sum += v <= 12 ? step * step * d * d / 12.0 : (v - 12) * (v - 12) * d * d;
    }
  }
  return sum / static_cast<double>(x.size());
}

double predicted_mse(GgmlType t, const std::vector<float>& x) {
  if (t == GgmlType::MXFP4) return predicted_mse_mxfp4(x);
  const GridModel g = grid_of(t);
  double sum = 0;
  for (size_t b = 0; b < x.size(); b += g.group) {
    float lo = 0, hi = 0, amax = 0;
    for (int i = 0; i < g.group; ++i)
      lo = std::min(lo, x[b + i]), hi = std::max(hi, x[b + i]), amax = std::max(amax, std::fabs(x[b + i]));
    const double step = (g.affine ? hi - lo : amax) / g.levels;
    sum += step * step / 12.0 * g.group;
  }
  return sum / static_cast<double>(x.size());
}

class RoundTrip : public ::testing::TestWithParam<GgmlType> {};

TEST_P(RoundTrip, ErrorWithinStepBound) {
  const GgmlType type = GetParam();
  const int64_t rows = 64, cols = 2048;
  for (const bool heavy : {false, true}) {
    const auto x = heavy ? heavy_tailed(rows * cols) : gaussian(rows * cols, 0.02f);
    const ErrorStats e = round_trip_error(default_thread_pool(), {.type = type, .src = x.data(), .rows = rows, .cols = cols});
    const double bound = std::sqrt(predicted_mse(type, x) * grid_of(type).slack);
    EXPECT_LE(e.rmse, bound) << traits(type).name << (heavy ? " heavy-tailed" : " gaussian") << " rel " << e.rel_rmse;
    // Sanity that the bound is not vacuous: the step model's error is within a factor
    // of the data RMS that the bit width implies (e.g. Q8_0 ≈ 0.5%, Q4_K ≈ 5-8%).
    EXPECT_LT(bound, e.rms * 0.2);
    std::printf("%s %s: rel rmse %.4f%%, step bound %.4f%%\n", traits(type).name, heavy ? "t3" : "gauss",
                100 * e.rel_rmse, 100 * bound / e.rms);
  }
}

TEST_P(RoundTrip, ImportanceReducesWeightedError) {
  const GgmlType type = GetParam();
  const int64_t rows = 32, cols = 1024;
  const auto x = gaussian(rows * cols);
  // Log-normal column importances: a few columns matter far more than others, as
  // activation statistics of real models do.
  std::vector<float> imp(static_cast<size_t>(cols));
  std::lognormal_distribution<float> ln(0.0f, 1.5f);
  for (auto& v : imp) v = ln(test::qrng());
  std::vector<uint8_t> plain(rows * row_bytes(type, cols)), weighted(plain.size());
  ThreadPool& pool = default_thread_pool();
  quantize_rows(pool, {.type = type, .src = x.data(), .rows = rows, .cols = cols}, plain.data());
  quantize_rows(pool, {.type = type, .src = x.data(), .rows = rows, .cols = cols, .importance = imp.data()},
                weighted.data());
  const auto a = dequantize_tensor(type, plain.data(), rows, cols), b = dequantize_tensor(type, weighted.data(), rows, cols);
  const double e_plain = compare(x.data(), a.data(), rows, cols, imp.data()).weighted_rel;
  const double e_weighted = compare(x.data(), b.data(), rows, cols, imp.data()).weighted_rel;
  std::printf("%s: importance-weighted rel error %.4f%% plain, %.4f%% with importance\n", traits(type).name,
              100 * e_plain, 100 * e_weighted);
  EXPECT_LT(e_weighted, e_plain);
}

INSTANTIATE_TEST_SUITE_P(Types, RoundTrip,
                         ::testing::Values(GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                           GgmlType::Q5_1, GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q5_K,
                                           GgmlType::Q6_K),
                         [](const auto& info) { return std::string(traits(info.param).name); });

TEST(QuantRoundTrip, PlainTypesAreExactConversions) {
  const int64_t n = 999;
  const auto x = gaussian(n);
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    const auto q = quantize_tensor({.type = type, .src = x.data(), .rows = 1, .cols = n});
    const auto y = dequantize_tensor(type, q.data(), 1, n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = type == GgmlType::F32 ? x[i] : type == GgmlType::F16 ? f16_to_f32(f32_to_f16(x[i]))
                                                                               : bf16_to_f32(f32_to_bf16(x[i]));
      ASSERT_EQ(y[i], want);
    }
  }
}

TEST(QuantRoundTrip, ConstantAndZeroBlocks) {
  // All-zero and constant rows: no division by zero, zero stays zero, constants stay close.
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::MXFP4,
                        GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    for (float v : {0.0f, 0.75f, -3.0f}) {  // (MXFP4 holds 0.75 = 12·2^-4 and −3 = −12·2^-2 exactly)
      std::vector<float> x(512, v);
      const auto q = quantize_tensor({.type = type, .src = x.data(), .rows = 1, .cols = 512});
      const auto y = dequantize_tensor(type, q.data(), 1, 512);
      // A constant is one grid point away at worst: f16 scale rounding (2^-11) plus
      // the 6-bit scale/min rounding of the K-quants (1/63 of the value).
      for (float yi : y) ASSERT_NEAR(yi, v, std::fabs(v) / 63.0 + 1e-7) << traits(type).name;
    }
  }
}

TEST(QuantBadInput, OneLineErrors) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(1024);
  ThreadPool& pool = default_thread_pool();
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::Q4_K, .src = x.data(), .rows = 1, .cols = 100}, out.data()), Error);
  x[7] = NAN;
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::Q8_0, .src = x.data(), .rows = 1, .cols = 256}, out.data()), Error);
  x[7] = 1e9f;  // beyond what Q4_0's f16 block scale can reach (65504·8)
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::Q4_0, .src = x.data(), .rows = 1, .cols = 256}, out.data()), Error);
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::Q5_0, .src = x.data(), .rows = 1, .cols = 256}, out.data()), Error);
  x[7] = 1e5f;  // beyond Q4_1's / Q5_1's f16 offset m (the block's min)
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::Q4_1, .src = x.data(), .rows = 1, .cols = 256}, out.data()), Error);
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::Q5_1, .src = x.data(), .rows = 1, .cols = 256}, out.data()), Error);
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::Q5_0, .src = x.data(), .rows = 1, .cols = 48}, out.data()), Error);
  x[7] = 1.0f;
  std::vector<float> imp(256, 1.0f);
  imp[3] = -1.0f;
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::Q6_K, .src = x.data(), .rows = 1, .cols = 256, .importance = imp.data()},
                             out.data()),
               Error);
  EXPECT_THROW(quantize_rows(pool, {.type = GgmlType::IQ4_NL, .src = x.data(), .rows = 1, .cols = 256}, out.data()), Error);
  try {
    quantize_rows(pool, {.type = GgmlType::Q5_K, .src = x.data(), .rows = 1, .cols = 96}, out.data());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Q5_K"), std::string::npos);
  }
}

}  // namespace
}  // namespace squeeze::quant
