// tests/quant/test_quant_mxfp4.cpp — MXFP4 (E2M1 codes, one E8M0 scale per 32): the block
// layout against values gguf-py's dequantizer gives (written out here, so no Python is
// needed), every E8M0 exponent including the subnormal scales, ggml's round-to-nearest
// bytes and tie rule, the searching quantizer against it, and dots that must be exact.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "gguf/tensor_info.h"
#include "quant/kernels_impl.h"
#include "quant/quantize.h"
#include "quant/scale_search.h"
#include "quant_test_util.h"

namespace squeeze::quant {
namespace {
namespace mxfp4_test {  // this file shares a unity batch with the other quant tests

constexpr int8_t kValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Byte j: nibble j (element j) low, nibble 15 − j (element 16 + j) high, so one block
// shows every table entry in both halves.
BlockMXFP4 every_nibble_block(uint8_t e) {
  BlockMXFP4 b;
  b.e = e;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  return b;
}

// What gguf-py (gguf.quants.dequantize, GGMLQuantizationType.MXFP4) returns for
// every_nibble_block(e), as f32 bit patterns for nibbles 0..15: run once and written out.
struct GgufPyValues {
  uint8_t e;
  std::array<uint32_t, 16> bits;
};
constexpr GgufPyValues kGgufPy[] = {
    {0, {0x00000000, 0x00200000, 0x00400000, 0x00600000, 0x00800000, 0x00c00000, 0x01000000, 0x01400000, 0x00000000,
         0x80200000, 0x80400000, 0x80600000, 0x80800000, 0x80c00000, 0x81000000, 0x81400000}},
    {1, {0x00000000, 0x00400000, 0x00800000, 0x00c00000, 0x01000000, 0x01400000, 0x01800000, 0x01c00000, 0x00000000,
         0x80400000, 0x80800000, 0x80c00000, 0x81000000, 0x81400000, 0x81800000, 0x81c00000}},
    {2, {0x00000000, 0x00800000, 0x01000000, 0x01400000, 0x01800000, 0x01c00000, 0x02000000, 0x02400000, 0x00000000,
         0x80800000, 0x81000000, 0x81400000, 0x81800000, 0x81c00000, 0x82000000, 0x82400000}},
    {126, {0x00000000, 0x3e800000, 0x3f000000, 0x3f400000, 0x3f800000, 0x3fc00000, 0x40000000, 0x40400000, 0x00000000,
           0xbe800000, 0xbf000000, 0xbf400000, 0xbf800000, 0xbfc00000, 0xc0000000, 0xc0400000}},
    {127, {0x00000000, 0x3f000000, 0x3f800000, 0x3fc00000, 0x40000000, 0x40400000, 0x40800000, 0x40c00000, 0x00000000,
           0xbf000000, 0xbf800000, 0xbfc00000, 0xc0000000, 0xc0400000, 0xc0800000, 0xc0c00000}},
    {128, {0x00000000, 0x3f800000, 0x40000000, 0x40400000, 0x40800000, 0x40c00000, 0x41000000, 0x41400000, 0x00000000,
           0xbf800000, 0xc0000000, 0xc0400000, 0xc0800000, 0xc0c00000, 0xc1000000, 0xc1400000}},
    {252, {0x00000000, 0x7d800000, 0x7e000000, 0x7e400000, 0x7e800000, 0x7ec00000, 0x7f000000, 0x7f400000, 0x00000000,
           0xfd800000, 0xfe000000, 0xfe400000, 0xfe800000, 0xfec00000, 0xff000000, 0xff400000}},
    {253, {0x00000000, 0x7e000000, 0x7e800000, 0x7ec00000, 0x7f000000, 0x7f400000, 0x7f800000, 0x7f800000, 0x00000000,
           0xfe000000, 0xfe800000, 0xfec00000, 0xff000000, 0xff400000, 0xff800000, 0xff800000}},
    {254, {0x00000000, 0x7e800000, 0x7f000000, 0x7f400000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x00000000,
           0xfe800000, 0xff000000, 0xff400000, 0xff800000, 0xff800000, 0xff800000, 0xff800000}},
    {255, {0x00000000, 0x7f000000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x00000000,
           0xff000000, 0xff800000, 0xff800000, 0xff800000, 0xff800000, 0xff800000, 0xff800000}},
};

uint32_t bits(float v) { return std::bit_cast<uint32_t>(v); }

TEST(MXFP4Layout, ScaleIsTheExactPowerOfTwoIncludingSubnormals) {
  EXPECT_EQ(bits(e8m0_half(0)), 0x00200000u);  // 2^-128, subnormal
  EXPECT_EQ(bits(e8m0_half(1)), 0x00400000u);  // 2^-127, subnormal
  EXPECT_EQ(bits(e8m0_half(2)), 0x00800000u);  // 2^-126, the smallest normal
  EXPECT_EQ(e8m0_half(128), 1.0f);
  EXPECT_EQ(e8m0_half(254), 0x1p126f);
  EXPECT_EQ(e8m0_half(255), 0x1p127f);  // ggml's reading; the MX spec's NaN is not used
  for (int e = 0; e < 256; ++e) ASSERT_EQ(bits(e8m0_half(static_cast<uint8_t>(e))), bits(std::ldexp(1.0f, e - 128))) << e;
}

TEST(MXFP4Layout, DequantizeEqualsGgufPyAndHandComputedValues) {
  for (Isa isa : test::all_isas()) {
    const QuantTraits* t = traits_for(GgmlType::MXFP4, isa);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->block_bytes, 17);
    for (const GgufPyValues& g : kGgufPy) {
      const BlockMXFP4 b = every_nibble_block(g.e);
      float y[kQK];
      t->dequantize_row(&b, y, kQK);
      for (int j = 0; j < 16; ++j) {
        ASSERT_EQ(bits(y[j]), g.bits[j]) << isa_name(isa) << " e=" << int{g.e} << " nibble " << j;
        ASSERT_EQ(bits(y[31 - j]), g.bits[j]) << isa_name(isa) << " e=" << int{g.e} << " element " << 31 - j;
      }
    }
    // Every exponent, against ldexp (exact, subnormal results included; ±inf past f32).
    std::vector<BlockMXFP4> row(256);
    for (int e = 0; e < 256; ++e) row[e] = every_nibble_block(static_cast<uint8_t>(e));
    std::vector<float> y(256 * kQK);
    t->dequantize_row(row.data(), y.data(), static_cast<int64_t>(y.size()));
    for (int e = 0; e < 256; ++e)
      for (int j = 0; j < 16; ++j) {
        const float want = std::ldexp(static_cast<float>(kValues[j]), e - 128);
        ASSERT_EQ(bits(y[e * kQK + j]), bits(want)) << isa_name(isa) << " e=" << e << " nibble " << j;
      }
  }
}

TEST(MXFP4Layout, GgufGeometry) {
  EXPECT_EQ(gguf::ggml_type_info(GgmlType::MXFP4).name, "MXFP4");
  EXPECT_EQ(gguf::ggml_type_from_name("mxfp4"), GgmlType::MXFP4);
  EXPECT_EQ(static_cast<uint32_t>(GgmlType::MXFP4), 39u);
  EXPECT_EQ(gguf::tensor_geometry(GgmlType::MXFP4, std::vector<int64_t>{64, 3}).n_bytes, 2 * 17 * 3);
  EXPECT_THROW(gguf::tensor_geometry(GgmlType::MXFP4, std::vector<int64_t>{48, 1}), Error);
  EXPECT_EQ(row_bytes(GgmlType::MXFP4, 2880), 90 * 17);  // gpt-oss's hidden size
  EXPECT_THROW(row_bytes(GgmlType::MXFP4, 40), Error);
}

// Three blocks through gguf-py's gguf.quants.quantize (ggml's quantize_row_mxfp4_ref),
// bytes written out: amax 1 (e = 125, d = 1/8) with ties at 2.5d, 5d, 7d, 10d, ±0.5d,
// ±0, −2.5d (the lower table index wins); amax 1.9 (clipped to 12d = 1.5); all zero.
TEST(MXFP4Quantizer, GgmlRoundToNearestWritesGgufPyBytes) {
  const float x[3][kQK] = {
      {1.0f, 0.3f, -0.3f, 0.3125f, -0.3125f, 0.625f, -0.625f, 0.0f, -0.0f, 1e-3f, -1e-3f, 0.0625f, -0.0625f, 1.25f,
       -1.25f, 0.875f, -0.875f, 0.1f, 0.2f, 0.45f, 0.55f, 0.7f, 0.8f, 0.95f, -0.1f, -0.2f, -0.45f, -0.55f, -0.7f, -0.8f,
       -0.95f, -1.0f},
      {1.9f, 0.00f, 0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.07f, 0.08f, 0.09f, 0.10f, 0.11f, 0.12f, 0.13f, 0.14f,
       0.15f, 0.16f, 0.17f, 0.18f, 0.19f, 0.20f, 0.21f, 0.22f, 0.23f, 0.24f, 0.25f, 0.26f, 0.27f, 0.28f, 0.29f, 0.30f},
      {},
  };
  const uint8_t want[3][17] = {
      {0x7d, 0xd6, 0x12, 0x2a, 0x42, 0x4a, 0x54, 0x5c, 0x60, 0x90, 0xa0, 0xc0, 0xc0, 0xd0, 0xd6, 0xee, 0xe5},
      {0x7d, 0x17, 0x10, 0x10, 0x10, 0x20, 0x20, 0x20, 0x20, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21},
      {},
  };
  uint8_t got[3][17];
  impl::rtn_quantize_mxfp4(&x[0][0], got, 3 * kQK);
  for (int b = 0; b < 3; ++b)
    for (int k = 0; k < 17; ++k) ASSERT_EQ(got[b][k], want[b][k]) << "block " << b << " byte " << k;
}

double block_error(const BlockMXFP4& b, const float* x, const float* w) {
  float y[kQK];
  traits_for(GgmlType::MXFP4, Isa::Scalar)->dequantize_row(&b, y, kQK);
  double e = 0;
  for (int j = 0; j < kQK; ++j) e += (w ? w[j] : 1.0) * (static_cast<double>(y[j]) - x[j]) * (y[j] - x[j]);
  return e;
}

// The table's quantizer tries ggml's exponent and its two neighbours with the same
// rounding, so per block its (weighted) error is never larger than ggml's; where ggml
// clips (amax/d near 16) it is strictly smaller.
TEST(MXFP4Quantizer, SearchNeverWorseThanGgmlPerBlock) {
  const QuantTraits& t = *traits_for(GgmlType::MXFP4, Isa::Scalar);
  const int64_t n = 64 * kQK;
  std::lognormal_distribution<float> ln(0.0f, 1.5f);
  int better = 0;
  for (int rep = 0; rep < 6; ++rep) {
    const auto x = rep % 2 ? test::heavy_tailed(n) : test::gaussian(n, 0.02f);
    std::vector<float> imp(n);
    for (auto& v : imp) v = ln(test::qrng());
    std::vector<BlockMXFP4> rtn(n / kQK), ours(n / kQK);
    impl::rtn_quantize_mxfp4(x.data(), rtn.data(), n);
    const bool weighted = rep >= 2;
    t.quantize_row(x.data(), ours.data(), n, weighted ? imp.data() : nullptr);
    for (int64_t b = 0; b < n / kQK; ++b) {
      float w[kQK];
      const bool has_w = weighted && importance_weights(kQK, x.data() + b * kQK, imp.data() + b * kQK, w);
      const double e_ours = block_error(ours[b], x.data() + b * kQK, has_w ? w : nullptr);
      const double e_rtn = block_error(rtn[b], x.data() + b * kQK, has_w ? w : nullptr);
      ASSERT_LE(e_ours, e_rtn) << "rep " << rep << " block " << b;
      better += e_ours < e_rtn;
    }
  }
  EXPECT_GT(better, 0);
  float clipped[kQK] = {1.9f};
  for (int j = 1; j < kQK; ++j) clipped[j] = 0.02f * static_cast<float>(j % 5) - 0.04f;  // all round to 0 either way
  BlockMXFP4 a, b;
  impl::rtn_quantize_mxfp4(clipped, &a, kQK);
  t.quantize_row(clipped, &b, kQK, nullptr);
  EXPECT_LT(block_error(b, clipped, nullptr), block_error(a, clipped, nullptr));
}

// Far below ggml's range (amax < 2^-125, where its float-to-uint8 cast of a negative
// exponent wraps to a huge scale) the exponent is clamped to 0: the values round to
// multiples of 2^-128 instead.
TEST(MXFP4Quantizer, TinyAndZeroBlocks) {
  for (const float v : {0.0f, 1e-39f, -3e-39f, 0x1p-126f}) {
    float x[kQK];
    for (int j = 0; j < kQK; ++j) x[j] = v * static_cast<float>(j % 5) / 4.0f;
    for (const bool ggml : {true, false}) {
      BlockMXFP4 b;
      if (ggml) impl::rtn_quantize_mxfp4(x, &b, kQK);
      else traits(GgmlType::MXFP4).quantize_row(x, &b, kQK, nullptr);
      EXPECT_LE(b.e, 2) << v;
      float y[kQK];
      traits(GgmlType::MXFP4).dequantize_row(&b, y, kQK);
      for (int j = 0; j < kQK; ++j) EXPECT_LE(std::fabs(y[j] - x[j]), 0x1p-128f) << v << " element " << j;
    }
  }
}

// Rows of nb ≤ 5 blocks sharing one exponent, against Q8_0 rows with a power-of-two d:
// every product is an integer times 2^(e−128)·d_a and all partial sums fit f32's
// significand, so every ISA's kernels (vec_dot, dot_multi, row groups, micro-tile) must
// return the exact value — for every exponent whose results stay finite, the subnormal
// scales e = 0, 1 included. This pins the AVX2 kernels' vector E8M0 decoding (CNT = 1..4
// blocks per step) to e8m0_half bit for bit.
TEST(MXFP4Dot, EveryExponentIsExact) {
  std::uniform_int_distribution<int> nib(0, 15), code(-127, 127);
  for (int e = 0; e <= 252; ++e) {
    // d_a = 1, or 2^-24 (the smallest f16) where 2^(e−128)·Σ would overflow.
    const uint16_t da = e <= 200 ? f32_to_f16(1.0f) : uint16_t{1};
    const int nb = 1 + e % 5;
    std::vector<BlockMXFP4> w(nb * kMaxDotRows);
    std::vector<BlockQ8_0> a(nb * kMaxDotRows);
    for (auto& b : w) {
      b.e = static_cast<uint8_t>(e);
      for (auto& q : b.qs) q = static_cast<uint8_t>(nib(test::qrng()) | nib(test::qrng()) << 4);
    }
    for (auto& b : a) {
      b.d = da;
      for (auto& q : b.qs) q = static_cast<int8_t>(code(test::qrng()));
    }
    const int64_t n = nb * kQK, wrow = nb * 17, arow = nb * 34;
    auto exact = [&](int r, int t) {
      int64_t isum = 0;
      for (int i = 0; i < nb; ++i)
        for (int j = 0; j < 16; ++j)
          isum += kValues[w[r * nb + i].qs[j] & 15] * a[t * nb + i].qs[j] +
                  kValues[w[r * nb + i].qs[j] >> 4] * a[t * nb + i].qs[j + 16];
      return static_cast<float>(std::ldexp(static_cast<double>(isum), e - 128) * f16_to_f32(da));
    };
    for (Isa isa : test::all_isas()) {
      const QuantTraits& t = *traits_for(GgmlType::MXFP4, isa);
      SCOPED_TRACE(std::string(isa_name(isa)) + " e=" + std::to_string(e));
      for (int r = 0; r < kMaxDotRows; ++r)
        for (int s = 0; s < kMaxDotRows; ++s) ASSERT_EQ(t.vec_dot(n, &w[r * nb], &a[s * nb]), exact(r, s));
      float out[kMaxDotRows * kMaxDotRows];
      t.dot_multi(n, w.data(), a.data(), arow, kMaxDotRows, out);
      for (int s = 0; s < kMaxDotRows; ++s) ASSERT_EQ(out[s], exact(0, s));
      if (t.dot_wrows) {
        t.dot_wrows(n, w.data(), wrow, kMaxDotRows, a.data(), out);
        for (int r = 0; r < kMaxDotRows; ++r) ASSERT_EQ(out[r], exact(r, 0));
      }
      if (t.dot_tile) {
        t.dot_tile(n, w.data(), wrow, kMaxDotRows, a.data(), arow, kMaxDotRows, out);
        for (int r = 0; r < kMaxDotRows; ++r)
          for (int s = 0; s < kMaxDotRows; ++s) ASSERT_EQ(out[r * kMaxDotRows + s], exact(r, s));
      }
    }
  }
}

}  // namespace mxfp4_test
}  // namespace
}  // namespace squeeze::quant
