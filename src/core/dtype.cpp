// core/dtype.cpp — exact scalar conversions between f32 and the narrow formats.
#include "core/dtype.h"

#include <cmath>

namespace squeeze {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I8: return 1;
    case DType::I16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
    case DType::FP8_E4M3: return 1;
    case DType::E8M0: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I8: return "i8";
    case DType::I16: return "i16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::U8: return "u8";
    case DType::FP8_E4M3: return "fp8_e4m3";
    case DType::E8M0: return "e8m0";
  }
  return "?";
}

uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // Inf or NaN
    if (x == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
  }
  if (x >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65536: overflow
  if (x < 0x38800000u) {
    // Below the smallest normal f16 (2^-14): the result is a multiple of 2^-24.
    // Adding 0.5f puts the f16 mantissa at the bottom of a float whose ulp is
    // 2^-24, so the FPU's own round-to-nearest-even does the rounding.
    const float shifted = std::bit_cast<float>(x) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(shifted) - 0x3f000000u));
  }
  const uint32_t mantissa_odd = (x >> 13) & 1u;
  x += 0xc8000fffu + mantissa_odd;  // rebias exponent (-112 << 23), round half to even
  return static_cast<uint16_t>(sign | (x >> 13));  // a carry into exponent 31 yields Inf, as RNE must
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: mantissa * 2^-24, renormalised
      const int top = 31 - std::countl_zero(mantissa);  // 0..9
      mantissa = (mantissa << (10 - top)) & 0x3ffu;
      bits = sign | (static_cast<uint32_t>(103 + top) << 23) | (mantissa << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

uint8_t f32_to_e4m3(float f, bool saturate) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return sign | 0x7f;
  if (std::isinf(f)) return sign | (saturate ? 0x7e : 0x7f);
  const double a = std::fabs(static_cast<double>(f));
  uint8_t code;
  if (a < 0x1p-6) {
    // Subnormal range: multiples of 2^-9. A result of 8 is the smallest normal (0x08).
    code = static_cast<uint8_t>(std::nearbyint(a * 512.0));
  } else {
    int e;
    const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    --e;                                 // a = (2m) * 2^e, 2m in [1, 2)
    if (e > 8) {
      code = 0x7f;  // out of range; handled below
    } else {
      int q = static_cast<int>(std::nearbyint((2.0 * m - 1.0) * 8.0));
      if (q == 8) {
        q = 0;
        ++e;
      }
      code = e > 8 ? 0x7f : static_cast<uint8_t>(((e + 7) << 3) | q);
    }
  }
  if (code >= 0x7f) code = saturate ? 0x7e : 0x7f;  // 0x7f would be NaN
  return sign | code;
}

float e4m3_to_f32(uint8_t b) {
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  const int exponent = (b >> 3) & 0xf;
  const int mantissa = b & 0x7;
  if (exponent == 15 && mantissa == 7) return std::copysign(NAN, sign);
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
}

uint8_t e8m0_from_exponent(int exponent) {
  if (exponent < -127) exponent = -127;
  if (exponent > 127) exponent = 127;
  return static_cast<uint8_t>(exponent + 127);
}

uint8_t e8m0_floor(float x) {
  if (std::isnan(x)) return 0xff;
  if (!(x > 0.0f) || !std::isnormal(x)) return std::isinf(x) ? e8m0_from_exponent(127) : 0;
  return e8m0_from_exponent(std::ilogb(x));
}

float e8m0_to_f32(uint8_t b) {
  if (b == 0xff) return NAN;
  return std::ldexp(1.0f, static_cast<int>(b) - 127);
}

}  // namespace squeeze
