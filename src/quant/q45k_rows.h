// quant/q45k_rows.h — the Q4_K / Q5_K × Q8_K dot loop, one body for the AVX2 and the
// AVX-512 translation units (dot_q45k_avx2.cpp, dot_avx512.cpp).
//
// Include it only inside an anonymous namespace of a translation unit compiled for AVX2 or
// above, after <immintrin.h>, quant/blocks.h and <type_traits>, and after defining there:
//   __m256i load(const void*);                  // 32 unaligned bytes
//   float half(uint16_t);                       // f16 -> f32
//   float hsum(__m256);                         // sum of the 8 lanes
//   template <int Bytes> void prefetch_ahead(const void*);
//   __m256i accumulate_scaled(__m256i acc, __m256i p16, __m256i scale);  // acc + Σ pairs p16·scale
// Everything here then has internal linkage: each ISA's copy stays its own, and the linker
// never keeps an AVX-512 build of it for AVX2 callers. No include guard: one inclusion per
// translation unit, inside its own namespace.

// The 8 scales and 8 mins of a K-quant block as bytes [sc0..sc7, m0..m7] (as the AVX2
// kernel unpacks them; reads 16 bytes, the last 4 the block's own qs).
inline __m128i scales_mins(const uint8_t* s) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  const __m128i lo = _mm_and_si128(v, _mm_set1_epi8(0x3f));
  const __m128i w2 = _mm_srlv_epi32(_mm_shuffle_epi32(v, 0xAA), _mm_setr_epi32(0, 4, 0, 0));
  const __m128i hi = _mm_or_si128(_mm_and_si128(w2, _mm_set1_epi8(0x0f)),
                                  _mm_and_si128(_mm_srli_epi32(v, 2), _mm_set1_epi8(0x30)));
  return _mm_unpacklo_epi32(lo, hi);
}

// Broadcast i16 scale j from a vector holding the 8 scales as i16 in both 128-bit lanes.
inline __m256i scale_of(__m256i sc, int j) {
  return _mm256_shuffle_epi8(sc, _mm256_set1_epi16(static_cast<int16_t>((2 * j) | ((2 * j + 1) << 8))));
}

// Per super-block: nibbles split with and/shift, multiplied by the activation codes with
// maddubs (u8 × i8 → pairs of i16), scaled per sub-block and summed into i32 by
// accumulate_scaled, so the whole block sum stays in exact integers; the min term uses the
// activation's bsums (one madd of 8 mins by 8 pair sums). One float FMA per block applies
// d and dmin.
template <bool Q5, int NT>
void q45k_rows(int64_t n, const void* w, const void* a, int64_t stride, float* out) {
  using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
  const auto* x = static_cast<const Block*>(w);
  const BlockQ8_K* y[NT];
  __m256 acc[NT];
  __m256 acc_m[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(a) + t * stride);
    acc[t] = _mm256_setzero_ps();
    acc_m[t] = _mm256_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<sizeof(Block)>(x + i);
    const float d = half(x[i].d), dmin = half(x[i].dmin);
    const __m128i sm = scales_mins(x[i].scales);
    const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    const __m256i mins = _mm256_cvtepu8_epi16(
        _mm_shuffle_epi8(sm, _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15)));
    __m256i hbits;
    if constexpr (Q5) hbits = load(x[i].qh);
    __m256i sumi[NT];
    for (int t = 0; t < NT; ++t) {
      sumi[t] = _mm256_setzero_si256();
      const __m256i pm = _mm256_madd_epi16(mins, load(y[t][i].bsums));
      acc_m[t] = _mm256_fmadd_ps(_mm256_set1_ps(dmin * y[t][i].d), _mm256_cvtepi32_ps(pm), acc_m[t]);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load(x[i].qs + 32 * c);
      __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      if constexpr (Q5) {
        const __m256i one = _mm256_set1_epi8(1);
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * c), one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * c + 1), one), 4));
      }
      const __m256i s_lo = scale_of(sc, 2 * c), s_hi = scale_of(sc, 2 * c + 1);
      for (int t = 0; t < NT; ++t) {
        sumi[t] = accumulate_scaled(sumi[t], _mm256_maddubs_epi16(lo, load(y[t][i].qs + 64 * c)), s_lo);
        sumi[t] = accumulate_scaled(sumi[t], _mm256_maddubs_epi16(hi, load(y[t][i].qs + 64 * c + 32)), s_hi);
      }
    }
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][i].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  for (int t = 0; t < NT; ++t) out[t] = hsum(acc[t]) - hsum(acc_m[t]);
}
