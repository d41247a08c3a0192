// mok/mxfp8_avx2.cpp — MXFP8 encode / decode, 8 lanes; bit-identical to the reference.
#include <immintrin.h>

#include <bit>
#include <cmath>

#include "core/error.h"
#include "mok/mxfp8.h"

namespace squeeze::mok {
namespace {

// As the AVX-512 kernel's to_e4m3: one E4M3 byte per 32-bit lane.
__m256i to_e4m3(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 24), _mm256_set1_epi32(0x80));
  const __m256i a = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(a, 20), _mm256_set1_epi32(1));
  const __m256i r = _mm256_add_epi32(_mm256_add_epi32(a, _mm256_set1_epi32(0x7FFFF)), lsb);
  const __m256i normal = _mm256_sub_epi32(_mm256_srli_epi32(r, 20), _mm256_set1_epi32(960));
  const __m256i sub = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_castsi256_ps(a), _mm256_set1_ps(512.0f)));
  // a is non-negative as int32, so signed compares order it as unsigned
  const __m256i is_sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x3C800000), a);
  const __m256i is_sat = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x43E00000 - 1));
  __m256i q = _mm256_blendv_epi8(normal, sub, is_sub);
  q = _mm256_blendv_epi8(q, _mm256_set1_epi32(0x7E), is_sat);
  return _mm256_or_si256(q, sign);
}

// 32 lanes of bytes (in four vectors, 0..255 each) → 32 bytes in order.
void store_bytes(uint8_t* out, __m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packus_epi32(a, b), cd = _mm256_packus_epi32(c, d);  // 16-bit, lanes interleaved
  const __m256i abcd = _mm256_packus_epi16(ab, cd);
  const __m256i ordered = _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
}

void encode(const float* x, int64_t n, uint8_t* elems, uint8_t* scales) {
  SQZ_CHECK(n % kMxBlock == 0, "mxfp8: ", n, " values are not whole blocks of 32");
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int64_t blk = 0; blk < n / kMxBlock; ++blk) {
    const float* xb = x + blk * kMxBlock;
    __m256 v[4], amax = _mm256_setzero_ps();
    __m256i nonfinite = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(xb + 8 * j);
      const __m256 a = _mm256_and_ps(v[j], abs_mask);
      nonfinite = _mm256_or_si256(nonfinite, _mm256_cmpgt_epi32(_mm256_castps_si256(a), _mm256_set1_epi32(0x7F7FFFFF)));
      amax = _mm256_max_ps(amax, a);
    }
    uint8_t* eb = elems + blk * kMxBlock;
    if (!_mm256_testz_si256(nonfinite, nonfinite)) {
      scales[blk] = 0xFF;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(eb), _mm256_set1_epi8(0x7F));
      continue;
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    const float top = _mm_cvtss_f32(m);
    if (top == 0) {
      scales[blk] = 0;
      __m256i s[4];
      for (int j = 0; j < 4; ++j)
        s[j] = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v[j]), 24), _mm256_set1_epi32(0x80));
      store_bytes(eb, s[0], s[1], s[2], s[3]);
      continue;
    }
    const int e = mxfp8_scale_exponent(top);
    scales[blk] = static_cast<uint8_t>(e + 127);
    const __m256 inv = _mm256_castsi256_ps(_mm256_set1_epi32((127 - e) << 23));
    store_bytes(eb, to_e4m3(_mm256_mul_ps(v[0], inv)), to_e4m3(_mm256_mul_ps(v[1], inv)),
                to_e4m3(_mm256_mul_ps(v[2], inv)), to_e4m3(_mm256_mul_ps(v[3], inv)));
  }
}

// 8 E4M3 bytes → f32 (exact).
__m256 from_e4m3(const uint8_t* p) {
  const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m256i e = _mm256_and_si256(_mm256_srli_epi32(b, 3), _mm256_set1_epi32(0xF));
  const __m256i m = _mm256_and_si256(b, _mm256_set1_epi32(7));
  const __m256i normal = _mm256_or_si256(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(120)), 23),
                                         _mm256_slli_epi32(m, 20));
  const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(1.0f / 512));
  const __m256 is_sub = _mm256_castsi256_ps(_mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
  const __m256 is_nan = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7F)), _mm256_set1_epi32(0x7F)));
  __m256 v = _mm256_blendv_ps(_mm256_castsi256_ps(normal), sub, is_sub);
  v = _mm256_blendv_ps(v, _mm256_set1_ps(NAN), is_nan);
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
  return _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(v), sign));
}

void decode(const uint8_t* elems, const uint8_t* scales, int64_t n, float* y) {
  SQZ_CHECK(n % kMxBlock == 0, "mxfp8: ", n, " values are not whole blocks of 32");
  for (int64_t b = 0; b < n / kMxBlock; ++b) {
    const uint8_t sb = scales[b];
    const float s = sb == 0xFF ? NAN : sb == 0 ? std::ldexp(1.0f, -127) : std::bit_cast<float>(static_cast<uint32_t>(sb) << 23);
    const __m256 vs = _mm256_set1_ps(s);
    for (int j = 0; j < 4; ++j)
      _mm256_storeu_ps(y + b * kMxBlock + 8 * j, _mm256_mul_ps(from_e4m3(elems + b * kMxBlock + 8 * j), vs));
  }
}

}  // namespace

namespace detail {
const Mxfp8Kernels kMxfp8Avx2{encode, decode};
}

}  // namespace squeeze::mok
