// mok/mxfp8_avx512.cpp — MXFP8 encode / decode, 16 lanes; bit-identical to the reference.
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's own _mm512_undefined_* (see kernels/cpu/ops_avx512.cpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <bit>
#include <cmath>

#include "core/error.h"
#include "mok/mxfp8.h"

namespace squeeze::mok {
namespace {

// f32 (already divided by the scale) → E4M3 byte in each 32-bit lane: round to nearest
// even, saturate at ±448, subnormals below 2^-6 in steps of 2^-9.
__m512i to_e4m3(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(bits, 24), _mm512_set1_epi32(0x80));
  const __m512i a = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  // normal: add the rounding bias (half an E4M3 ulp, minus one, plus the kept lsb) and shift
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, 20), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(_mm512_add_epi32(a, _mm512_set1_epi32(0x7FFFF)), lsb);
  const __m512i normal = _mm512_sub_epi32(_mm512_srli_epi32(r, 20), _mm512_set1_epi32(960));
  // subnormal: |v| · 2^9 rounded to nearest even (the current MXCSR mode)
  const __m512 absv = _mm512_castsi512_ps(a);
  const __m512i sub = _mm512_cvtps_epi32(_mm512_mul_ps(absv, _mm512_set1_ps(512.0f)));
  const __mmask16 is_sub = _mm512_cmplt_epi32_mask(a, _mm512_set1_epi32(0x3C800000));   // < 2^-6
  const __mmask16 is_sat = _mm512_cmpge_epi32_mask(a, _mm512_set1_epi32(0x43E00000));   // >= 448
  __m512i q = _mm512_mask_blend_epi32(is_sub, normal, sub);
  q = _mm512_mask_blend_epi32(is_sat, q, _mm512_set1_epi32(0x7E));
  return _mm512_or_si512(q, sign);
}

void encode(const float* x, int64_t n, uint8_t* elems, uint8_t* scales) {
  SQZ_CHECK(n % kMxBlock == 0, "mxfp8: ", n, " values are not whole blocks of 32");
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t b = 0; b < n / kMxBlock; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + b * kMxBlock), x1 = _mm512_loadu_ps(x + b * kMxBlock + 16);
    const __m512 a0 = _mm512_and_ps(x0, abs_mask), a1 = _mm512_and_ps(x1, abs_mask);
    const __m512i inf = _mm512_set1_epi32(0x7F800000);
    const bool finite = _mm512_cmpge_epi32_mask(_mm512_castps_si512(a0), inf) == 0 &&
                        _mm512_cmpge_epi32_mask(_mm512_castps_si512(a1), inf) == 0;
    uint8_t* eb = elems + b * kMxBlock;
    if (!finite) {
      scales[b] = 0xFF;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(eb), _mm256_set1_epi8(0x7F));
      continue;
    }
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    if (amax == 0) {
      scales[b] = 0;
      const __m512i s0 = _mm512_srli_epi32(_mm512_castps_si512(x0), 24), s1 = _mm512_srli_epi32(_mm512_castps_si512(x1), 24);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(eb), _mm512_cvtepi32_epi8(_mm512_and_si512(s0, _mm512_set1_epi32(0x80))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(eb + 16), _mm512_cvtepi32_epi8(_mm512_and_si512(s1, _mm512_set1_epi32(0x80))));
      continue;
    }
    const int e = mxfp8_scale_exponent(amax);
    scales[b] = static_cast<uint8_t>(e + 127);
    const __m512 inv = _mm512_castsi512_ps(_mm512_set1_epi32((127 - e) << 23));  // 2^-e, normal for e in [-127, 119]
    _mm_storeu_si128(reinterpret_cast<__m128i*>(eb), _mm512_cvtepi32_epi8(to_e4m3(_mm512_mul_ps(x0, inv))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(eb + 16), _mm512_cvtepi32_epi8(to_e4m3(_mm512_mul_ps(x1, inv))));
  }
}

// 16 E4M3 bytes → f32 (exact).
__m512 from_e4m3(__m128i bytes) {
  const __m512i b = _mm512_cvtepu8_epi32(bytes);
  const __m512i e = _mm512_and_si512(_mm512_srli_epi32(b, 3), _mm512_set1_epi32(0xF));
  const __m512i m = _mm512_and_si512(b, _mm512_set1_epi32(7));
  const __m512i normal = _mm512_or_si512(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(120)), 23),
                                         _mm512_slli_epi32(m, 20));
  const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_set1_ps(1.0f / 512));
  const __mmask16 is_sub = _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512());
  const __mmask16 is_nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7F)), _mm512_set1_epi32(0x7F));
  __m512 v = _mm512_mask_blend_ps(is_sub, _mm512_castsi512_ps(normal), sub);
  v = _mm512_mask_blend_ps(is_nan, v, _mm512_set1_ps(NAN));
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x80)), 24);
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(v), sign));
}

void decode(const uint8_t* elems, const uint8_t* scales, int64_t n, float* y) {
  SQZ_CHECK(n % kMxBlock == 0, "mxfp8: ", n, " values are not whole blocks of 32");
  for (int64_t b = 0; b < n / kMxBlock; ++b) {
    const uint8_t sb = scales[b];
    const float s = sb == 0xFF ? NAN : sb == 0 ? std::ldexp(1.0f, -127) : std::bit_cast<float>(static_cast<uint32_t>(sb) << 23);
    const __m512 vs = _mm512_set1_ps(s);
    const uint8_t* eb = elems + b * kMxBlock;
    _mm512_storeu_ps(y + b * kMxBlock, _mm512_mul_ps(from_e4m3(_mm_loadu_si128(reinterpret_cast<const __m128i*>(eb))), vs));
    _mm512_storeu_ps(y + b * kMxBlock + 16,
                     _mm512_mul_ps(from_e4m3(_mm_loadu_si128(reinterpret_cast<const __m128i*>(eb + 16))), vs));
  }
}

}  // namespace

namespace detail {
const Mxfp8Kernels kMxfp8Avx512{encode, decode};
}

}  // namespace squeeze::mok
