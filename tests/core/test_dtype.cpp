// tests/core/test_dtype.cpp — conversions checked bit-exactly against brute-force
// references computed in double precision (all 65536 f16/bf16 patterns, all fp8 codes).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "core/dtype.h"

namespace squeeze {
namespace {

bool is_nan16(uint16_t h, int exp_bits) {
  const int mant_bits = 15 - exp_bits;
  const uint16_t exp_mask = static_cast<uint16_t>(((1u << exp_bits) - 1) << mant_bits);
  return (h & exp_mask) == exp_mask && (h & ((1u << mant_bits) - 1)) != 0;
}

// Nearest representable value by search over the monotonic positive codes, ties to even code.
template <typename Decode>
uint32_t nearest_code(double a, uint32_t max_finite_code, Decode decode) {
  uint32_t lo = 0, hi = max_finite_code;
  if (a >= decode(hi)) return hi;
  while (hi - lo > 1) {  // invariant: decode(lo) <= a < decode(hi)
    const uint32_t mid = (lo + hi) / 2;
    if (decode(mid) <= a) lo = mid;
    else hi = mid;
  }
  const double dl = a - decode(lo), dh = decode(hi) - a;
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo % 2 == 0) ? lo : hi;
}

uint16_t reference_f32_to_f16(float f) {
  if (std::isnan(f)) return 0x7e00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  // 65520 = halfway between the largest f16 (65504) and 2^16: ties go to even, i.e. to Inf.
  if (a >= 65520.0) return sign | 0x7c00;
  return sign | static_cast<uint16_t>(nearest_code(a, 0x7bff, [](uint32_t c) {
           return static_cast<double>(f16_to_f32(static_cast<uint16_t>(c)));
         }));
}

uint16_t reference_f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t lo = x >> 16;
  const double a = static_cast<double>(f);
  const double vlo = static_cast<double>(std::bit_cast<float>(lo << 16));
  const uint32_t hi = lo + 1;
  const double vhi_raw = static_cast<double>(std::bit_cast<float>(hi << 16));
  const double dl = std::fabs(a - vlo), dh = std::fabs(vhi_raw - a);
  // When hi is the Inf pattern, vhi_raw is Inf and only values past the tie
  // (max finite + half an ulp) reach it; the distance compare below needs the value
  // 2^128 that Inf stands for at that point.
  if ((hi & 0x7fff) == 0x7f80) {
    const double vhi = std::copysign(std::ldexp(1.0, 128), a);
    const double d_hi = std::fabs(vhi - a);
    if (dl < d_hi) return static_cast<uint16_t>(lo);
    if (d_hi < dl) return static_cast<uint16_t>(hi);
    return static_cast<uint16_t>((lo % 2 == 0) ? lo : hi);
  }
  if (dl < dh) return static_cast<uint16_t>(lo);
  if (dh < dl) return static_cast<uint16_t>(hi);
  return static_cast<uint16_t>((lo % 2 == 0) ? lo : hi);
}

TEST(F16, AllPatternsRoundTripExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const uint16_t back = f32_to_f16(f);
    if (is_nan16(static_cast<uint16_t>(h), 5)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_TRUE(is_nan16(back, 5)) << h;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << "NaN sign lost for " << h;
    } else {
      ASSERT_EQ(back, h) << "pattern " << h;
    }
  }
}

TEST(F16, DecodeMatchesDoubleFormula) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    const double s = (h & 0x8000) ? -1.0 : 1.0;
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (e == 31) {
      ASSERT_TRUE(m ? std::isnan(f) : std::isinf(f)) << h;
      continue;
    }
    const double want = e == 0 ? s * m * std::ldexp(1.0, -24) : s * (1.0 + m / 1024.0) * std::ldexp(1.0, e - 15);
    ASSERT_EQ(static_cast<double>(f), want) << h;
    if (want == 0.0) {
      ASSERT_EQ(std::signbit(f), s < 0) << h;
    }
  }
}

TEST(F16, TiesAndNeighboursRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every positive finite f16 and the gap above it
    const float v = f16_to_f32(static_cast<uint16_t>(h));
    const float next = (h + 1 == 0x7c00) ? 65536.0f : f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);  // exact: 12 significant bits
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), v}) {
      ASSERT_EQ(f32_to_f16(x), reference_f32_to_f16(x)) << "x=" << x;
      ASSERT_EQ(f32_to_f16(-x), reference_f32_to_f16(-x)) << "x=" << -x;
    }
  }
}

TEST(F16, RandomFloatsMatchReference) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 200000; ++i) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(x)) {
      ASSERT_TRUE(is_nan16(f32_to_f16(x), 5));
      continue;
    }
    ASSERT_EQ(f32_to_f16(x), reference_f32_to_f16(x)) << "bits " << std::bit_cast<uint32_t>(x);
  }
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xfc00);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
}

TEST(BF16, AllPatternsRoundTripExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    const uint16_t back = f32_to_bf16(f);
    if (is_nan16(static_cast<uint16_t>(h), 8)) {
      ASSERT_TRUE(std::isnan(f));
      ASSERT_TRUE(is_nan16(back, 8));
      ASSERT_EQ(back & 0x8000, h & 0x8000);
    } else {
      ASSERT_EQ(back, h) << "pattern " << h;
    }
  }
}

TEST(BF16, RandomFloatsAndTiesMatchReference) {
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    if (i % 4 == 0) bits = (bits & 0xffff0000u) | 0x8000u;  // exact ties
    const float x = std::bit_cast<float>(bits);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(x))));
      continue;
    }
    if (std::isinf(x)) continue;
    ASSERT_EQ(f32_to_bf16(x), reference_f32_to_bf16(x)) << "bits " << bits;
  }
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80);
}

double e4m3_value(uint32_t c) { return static_cast<double>(e4m3_to_f32(static_cast<uint8_t>(c))); }

TEST(E4M3, AllCodesDecodeAndRoundTrip) {
  for (uint32_t c = 0; c < 256; ++c) {
    const float f = e4m3_to_f32(static_cast<uint8_t>(c));
    if ((c & 0x7f) == 0x7f) {
      ASSERT_TRUE(std::isnan(f)) << c;
      ASSERT_EQ(f32_to_e4m3(f) & 0x7f, 0x7f);
      continue;
    }
    const int e = (c >> 3) & 15, m = c & 7;
    const double s = (c & 0x80) ? -1.0 : 1.0;
    const double want = e == 0 ? s * m * std::ldexp(1.0, -9) : s * (1 + m / 8.0) * std::ldexp(1.0, e - 7);
    ASSERT_EQ(static_cast<double>(f), want) << c;
    ASSERT_EQ(f32_to_e4m3(f), c) << c;
  }
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);
}

TEST(E4M3, RoundsToNearestEvenAndSaturates) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> mag(-12.0f, 9.5f);
  for (int i = 0; i < 100000; ++i) {
    const float x = std::exp2(mag(rng)) * ((rng() & 1) ? -1.0f : 1.0f);
    const double a = std::fabs(static_cast<double>(x));
    const uint8_t got = f32_to_e4m3(x);
    const uint8_t sign = x < 0 ? 0x80 : 0;
    if (a > 464.0) {  // beyond the tie between 448 and the (absent) 480
      ASSERT_EQ(got, sign | 0x7e) << x;
      ASSERT_EQ(f32_to_e4m3(x, false), sign | 0x7f) << x;
      continue;
    }
    ASSERT_EQ(got, sign | nearest_code(a, 0x7e, e4m3_value)) << x;
  }
  // every midpoint between neighbours is a tie resolved to the even code
  for (uint32_t c = 0; c < 0x7e; ++c) {
    const float mid = static_cast<float>((e4m3_value(c) + e4m3_value(c + 1)) / 2);
    EXPECT_EQ(f32_to_e4m3(mid), (c % 2 == 0) ? c : c + 1) << "mid " << mid;
  }
  EXPECT_EQ(f32_to_e4m3(INFINITY), 0x7e);
  EXPECT_EQ(f32_to_e4m3(-0.0f), 0x80);
}

TEST(E8M0, CodesAndFloorRule) {
  for (int c = 0; c < 255; ++c) {
    const float v = e8m0_to_f32(static_cast<uint8_t>(c));
    ASSERT_EQ(static_cast<double>(v), std::ldexp(1.0, c - 127)) << c;
    ASSERT_EQ(e8m0_from_exponent(c - 127), c);
  }
  EXPECT_TRUE(std::isnan(e8m0_to_f32(0xff)));
  EXPECT_EQ(e8m0_floor(1.0f), 127);
  EXPECT_EQ(e8m0_floor(1.99f), 127);
  EXPECT_EQ(e8m0_floor(2.0f), 128);
  EXPECT_EQ(e8m0_floor(0.3f), 125);  // 0.25 <= 0.3 < 0.5
  EXPECT_EQ(e8m0_floor(NAN), 0xff);
  EXPECT_EQ(e8m0_from_exponent(500), 254);
  EXPECT_EQ(e8m0_from_exponent(-500), 0);
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::FP8_E4M3), 1u);
  EXPECT_EQ(dtype_name(DType::F16), "f16");
}

}  // namespace
}  // namespace squeeze
