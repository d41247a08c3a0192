// tests/mok/test_mxfp8.cpp — MXFP8 payloads: every ISA's encode and decode bit-identical
// to the scalar reference on fresh random blocks of every magnitude (f32 subnormals to
// near overflow, zeros, signed zeros, values at the saturation edge, Inf / NaN blocks);
// the OCP scale rule on hand examples; the round-trip error bound of each element.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "mok/mxfp8.h"

using namespace squeeze;
using namespace squeeze::mok;

namespace {

// Blocks of varied magnitude: each block's values are uniform in ±2^k with k drawn from
// -140 .. 120, some with one value pushed to 1.99 · 2^k (saturating elements), some zero.
std::vector<float> random_blocks(int64_t blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> k(-140, 120), kind(0, 9);
  std::vector<float> x(static_cast<size_t>(blocks * kMxBlock));
  for (int64_t b = 0; b < blocks; ++b) {
    const float scale = std::ldexp(1.0f, k(rng));
    const int what = kind(rng);
    for (int64_t i = 0; i < kMxBlock; ++i) {
      float v = u(rng) * scale;
      if (what == 0) v = 0;                         // an all-zero block (some -0)
      if (what == 0 && i % 3 == 0) v = -0.0f;
      if (what == 1 && i % 4 == 0) v = 0;           // scattered zeros
      x[static_cast<size_t>(b * kMxBlock + i)] = v;
    }
    if (what == 2) x[static_cast<size_t>(b * kMxBlock + 5)] = 1.99f * scale;  // saturates in its block
  }
  return x;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

}  // namespace

TEST(Mxfp8, ScaleRuleOnHandExamples) {
  EXPECT_EQ(mxfp8_scale_exponent(1.0f), -8);        // 1 = 256 · 2^-8
  EXPECT_EQ(mxfp8_scale_exponent(448.0f), 0);       // 448 = 1.75 · 2^8
  EXPECT_EQ(mxfp8_scale_exponent(511.0f), 0);
  EXPECT_EQ(mxfp8_scale_exponent(512.0f), 1);
  EXPECT_EQ(mxfp8_scale_exponent(1e-45f), -127);    // clamped to E8M0's range
  std::vector<float> x(32, 0.0f);
  x[0] = 3.0f, x[1] = -0.5f, x[2] = 1.0f / 1024;
  std::vector<uint8_t> e(32), s(1);
  mxfp8_reference().encode(x.data(), 32, e.data(), s.data());
  EXPECT_EQ(s[0], 127 - 7);       // amax 3: 2^(1 - 8)
  EXPECT_EQ(e[0], 0x7C);          // 3 / 2^-7 = 384 = 1.5 · 2^8: biased exponent 15, mantissa .100
  EXPECT_EQ(e[1], 0x80 | 0x68);   // -0.5 / 2^-7 = -64 = -2^6: biased exponent 13
  EXPECT_EQ(e[2], 0x20);          // 2^-10 / 2^-7 = 2^-3: biased exponent 4
  EXPECT_EQ(e[3], 0x00);
}

TEST(Mxfp8, EveryIsaMatchesTheReferenceBitForBit) {
  const auto x = random_blocks(4096, 7);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> e_ref(x.size()), s_ref(x.size() / kMxBlock);
  std::vector<float> y_ref(x.size());
  mxfp8_reference().encode(x.data(), n, e_ref.data(), s_ref.data());
  mxfp8_reference().decode(e_ref.data(), s_ref.data(), n, y_ref.data());
  int tested = 0;
  for (auto isa : kernels::cpu::available_isas()) {
    const Mxfp8Kernels* k = mxfp8_for(isa);
    ASSERT_NE(k, nullptr);
    std::vector<uint8_t> e(x.size()), s(x.size() / kMxBlock);
    std::vector<float> y(x.size());
    k->encode(x.data(), n, e.data(), s.data());
    EXPECT_EQ(s, s_ref) << kernels::cpu::isa_name(isa);
    EXPECT_EQ(e, e_ref) << kernels::cpu::isa_name(isa);
    k->decode(e_ref.data(), s_ref.data(), n, y.data());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_TRUE(same_float(y[i], y_ref[i])) << kernels::cpu::isa_name(isa) << " at " << i << ": " << y[i] << " vs " << y_ref[i];
    // Every byte pattern decodes the same, under every scale byte.
    std::vector<uint8_t> all(256 * 32), scales(256);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint8_t>(i % 256);
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = static_cast<uint8_t>((i * 37) % 256);
    std::vector<float> a(all.size()), b(all.size());
    mxfp8_reference().decode(all.data(), scales.data(), 256 * 32, a.data());
    k->decode(all.data(), scales.data(), 256 * 32, b.data());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(same_float(a[i], b[i])) << kernels::cpu::isa_name(isa) << " byte " << i;
    ++tested;
  }
  EXPECT_GE(tested, 1);
}

TEST(Mxfp8, NonFiniteBlocksDecodeToNaN) {
  std::vector<float> x(64, 1.0f);
  x[3] = INFINITY;
  x[40] = NAN;
  for (auto isa : kernels::cpu::available_isas()) {
    const Mxfp8Kernels* k = mxfp8_for(isa);
    std::vector<uint8_t> e(64), s(2);
    k->encode(x.data(), 64, e.data(), s.data());
    EXPECT_EQ(s[0], 0xFF);
    EXPECT_EQ(s[1], 0xFF);
    std::vector<float> y(64);
    k->decode(e.data(), s.data(), 64, y.data());
    for (float v : y) EXPECT_TRUE(std::isnan(v));
  }
}

TEST(Mxfp8, RoundTripErrorBound) {
  // Per element, with the block's scale 2^s: |x − y| ≤ max(2^-4 |x|, 2^(s−10)) (three
  // mantissa bits, subnormal steps of 2^(s−9)) unless the element saturates (|x| > 448·2^s),
  // when |x − y| < |x| / 8.
  const auto x = random_blocks(4096, 11);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> e(x.size()), s(x.size() / kMxBlock);
  std::vector<float> y(x.size());
  mxfp8().encode(x.data(), n, e.data(), s.data());
  mxfp8().decode(e.data(), s.data(), n, y.data());
  int64_t saturated = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int se = static_cast<int>(s[i / kMxBlock]) - 127;
    const double xi = x[i], err = std::fabs(xi - y[i]);
    if (std::fabs(xi) > 448.0 * std::ldexp(1.0, se)) {
      ++saturated;
      EXPECT_LT(err, std::fabs(xi) / 8) << i;
    } else {
      EXPECT_LE(err, std::max(std::fabs(xi) / 16, std::ldexp(1.0, se - 10))) << i << ": " << xi << " → " << y[i];
    }
  }
  EXPECT_GT(saturated, 0);  // the saturating blocks were exercised
  EXPECT_EQ(mxfp8_bytes(n), n + n / 32);
}

TEST(Mxfp8, RefusesPartialBlocks) {
  std::vector<float> x(40, 1.0f);
  std::vector<uint8_t> e(40), s(2);
  for (auto isa : kernels::cpu::available_isas()) EXPECT_THROW(mxfp8_for(isa)->encode(x.data(), 40, e.data(), s.data()), std::exception);
}
