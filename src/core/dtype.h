// core/dtype.h — element types and their exact scalar conversions.
//
// f32<->f16 and f32<->bf16 round to nearest, ties to even, and keep NaN (quiet,
// sign and top payload bits) and ±Inf. fp8 E4M3 is the OCP "fn" variant used by
// MXFP8 (bias 7, no Inf, max ±448, S.1111.111 = NaN); E8M0 is the MX shared scale
// (an unsigned power-of-two exponent with bias 127, 0xFF = NaN).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace squeeze {

enum class DType : uint8_t { F32, F64, F16, BF16, I8, I16, I32, I64, U8, FP8_E4M3, E8M0 };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);

// --- f16 -------------------------------------------------------------------
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

// --- bf16 ------------------------------------------------------------------
inline uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// --- fp8 E4M3 (OCP "fn") ------------------------------------------------------
constexpr float kE4M3Max = 448.0f;
// Round to nearest even. Finite values beyond ±448 saturate to ±448 (the MX
// convention) when `saturate`, else become NaN; ±Inf behaves like a huge finite value.
uint8_t f32_to_e4m3(float f, bool saturate = true);
float e4m3_to_f32(uint8_t b);

// --- E8M0 shared scale ----------------------------------------------------------
// Encodes 2^exponent; exponents outside [-127, 127] are clamped.
uint8_t e8m0_from_exponent(int exponent);
// 2^(floor(log2(x))) for finite x > 0 (the MX scale rule); x <= 0 or denormal -> 2^-127; NaN -> NaN.
uint8_t e8m0_floor(float x);
float e8m0_to_f32(uint8_t b);

}  // namespace squeeze
