// quant/packed_avx512.cpp — the packed Q4_K and Q6_K × Q8_K and Q4_1 and Q8_0 × Q8_0 tiles with
// AVX-512 VNNI. Compiled with
// squeeze_isa_sources(avx512 ...).
//
// One zmm of a packed group holds 4 codes of each of 16 rows; `vpdpbusd` with a broadcast
// of the token's 4 matching activation codes adds 16 rows' partial dots in one
// instruction. Each 64-byte load yields two such vectors (low and high nibbles, two
// sub-blocks), used by every token of the tile. Sub-block sums are scaled with vpmulld
// and the min term is 4 `vpdpwssd` of the (min, min) pairs with the activation's pair sums:
// the integers are exact, so the result is bit for bit the scalar reference
// (quant/packed.cpp), whatever the tile's token count.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's own _mm512_undefined_* (see kernels/cpu/ops_avx512.cpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/packed.h"
#include "quant/packed_kernel_util.h"

namespace squeeze::quant::impl {
namespace {

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

template <int NT>
void tile_q4k(int64_t K, const PackedQ4K* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
              int n_valid) {
  const BlockQ8_K* x[NT];
  __m512 acc[NT];
  #pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    x[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride);
    acc[t] = _mm512_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const int64_t nb = K / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const PackedQ4K& p = g[i];
    __m512i sumi[NT], summ[NT];
    {
      __m512i mins[4];
      for (int pp = 0; pp < 4; ++pp)
        mins[pp] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.mins[pp])));
      #pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        // Sub-block sums s_j = bsums[2j] + bsums[2j+1] (|s_j| ≤ 4096), packed to i16 so
        // that dwords 0, 1, 4, 5 hold the pairs (s0,s1), (s2,s3), (s4,s5), (s6,s7).
        const __m256i s = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t][i].bsums)), ones16);
        const __m512i pairs = _mm512_castsi256_si512(_mm256_packs_epi32(s, s));
        __m512i m = _mm512_setzero_si512();
        m = _mm512_dpwssd_epi32(m, mins[0], _mm512_permutexvar_epi32(_mm512_set1_epi32(0), pairs));
        m = _mm512_dpwssd_epi32(m, mins[1], _mm512_permutexvar_epi32(_mm512_set1_epi32(1), pairs));
        m = _mm512_dpwssd_epi32(m, mins[2], _mm512_permutexvar_epi32(_mm512_set1_epi32(4), pairs));
        m = _mm512_dpwssd_epi32(m, mins[3], _mm512_permutexvar_epi32(_mm512_set1_epi32(5), pairs));
        summ[t] = m;
        sumi[t] = _mm512_setzero_si512();
      }
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m512i lo_acc[NT], hi_acc[NT];
      #pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) lo_acc[t] = hi_acc[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const __m512i w = _mm512_loadu_si512(p.qs[c][q]);
        const __m512i lo = _mm512_and_si512(w, m4), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
        #pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) {
          lo_acc[t] = _mm512_dpbusd_epi32(lo_acc[t], lo, broadcast4(x[t][i].qs + 64 * c + 4 * q));
          hi_acc[t] = _mm512_dpbusd_epi32(hi_acc[t], hi, broadcast4(x[t][i].qs + 64 * c + 32 + 4 * q));
        }
      }
      const __m512i sl = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p.scales[2 * c])));
      const __m512i sh = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p.scales[2 * c + 1])));
      #pragma GCC unroll 4
      for (int t = 0; t < NT; ++t)
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(_mm512_mullo_epi32(lo_acc[t], sl),
                                                             _mm512_mullo_epi32(hi_acc[t], sh)));
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.d)));
    const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.dmin)));
    #pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const __m512 ad = _mm512_set1_ps(x[t][i].d);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dm, ad), _mm512_cvtepi32_ps(summ[t]), acc[t]);
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << n_valid) - 1u);
  #pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + t * ldy, keep, acc[t]);
}

// One token × NG groups in lockstep: NG weight streams in flight per thread (one stream
// leaves a thread at ~75% of the read bandwidth it gets with four), the token's per-block
// work done once for all groups. Per lane the same operations as tile_q4k<1>: bit-identical.
template <int NG>
void gemv_q4k(int64_t K, const PackedQ4K* const* g, const BlockQ8_K* x, float* const* y, const int* n_valid) {
  __m512 acc[NG];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const int64_t nb = K / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    __m512i sumi[NG], summ[NG];
    {
      const __m256i s = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].bsums)), ones16);
      const __m512i pairs = _mm512_castsi256_si512(_mm256_packs_epi32(s, s));
      const __m512i bc[4] = {_mm512_permutexvar_epi32(_mm512_set1_epi32(0), pairs),
                             _mm512_permutexvar_epi32(_mm512_set1_epi32(1), pairs),
                             _mm512_permutexvar_epi32(_mm512_set1_epi32(4), pairs),
                             _mm512_permutexvar_epi32(_mm512_set1_epi32(5), pairs)};
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) {
        __m512i m = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int pp = 0; pp < 4; ++pp)
          m = _mm512_dpwssd_epi32(
              m, _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g[k][i].mins[pp]))), bc[pp]);
        summ[k] = m;
        sumi[k] = _mm512_setzero_si512();
      }
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) prefetch_lines<sizeof(PackedQ4K), 4>(g[k] + i + kPrefetchBlocks, c);
      __m512i lo_acc[NG], hi_acc[NG];
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) lo_acc[k] = hi_acc[k] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const __m512i alo = broadcast4(x[i].qs + 64 * c + 4 * q), ahi = broadcast4(x[i].qs + 64 * c + 32 + 4 * q);
#pragma GCC unroll 4
        for (int k = 0; k < NG; ++k) {
          const __m512i w = _mm512_loadu_si512(g[k][i].qs[c][q]);
          lo_acc[k] = _mm512_dpbusd_epi32(lo_acc[k], _mm512_and_si512(w, m4), alo);
          hi_acc[k] = _mm512_dpbusd_epi32(hi_acc[k], _mm512_and_si512(_mm512_srli_epi16(w, 4), m4), ahi);
        }
      }
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) {
        const __m512i sl = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g[k][i].scales[2 * c])));
        const __m512i sh =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g[k][i].scales[2 * c + 1])));
        sumi[k] = _mm512_add_epi32(sumi[k], _mm512_add_epi32(_mm512_mullo_epi32(lo_acc[k], sl),
                                                             _mm512_mullo_epi32(hi_acc[k], sh)));
      }
    }
    const __m512 ad = _mm512_set1_ps(x[i].d);
#pragma GCC unroll 4
    for (int k = 0; k < NG; ++k) {
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g[k][i].d)));
      const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g[k][i].dmin)));
      acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(sumi[k]), acc[k]);
      acc[k] = _mm512_fnmadd_ps(_mm512_mul_ps(dm, ad), _mm512_cvtepi32_ps(summ[k]), acc[k]);
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k)
    _mm512_mask_storeu_ps(y[k], static_cast<__mmask16>((1u << n_valid[k]) - 1u), acc[k]);
}

// The 2 high bits of quad s (0..3) of a packed Q6_K qh vector, moved to bits 4..5 of each
// byte (epi16 shifts: bits that cross into a neighbouring byte are masked off).
template <int S>
inline __m512i q6_high(__m512i qh, __m512i m30) {
  if constexpr (S == 0) return _mm512_and_si512(_mm512_slli_epi16(qh, 4), m30);
  if constexpr (S == 1) return _mm512_and_si512(_mm512_slli_epi16(qh, 2), m30);
  if constexpr (S == 2) return _mm512_and_si512(qh, m30);
  if constexpr (S == 3) return _mm512_and_si512(_mm512_srli_epi16(qh, 2), m30);
}

// Half `H` (quads 2H, 2H+1) of sub-block h: the two code vectors, one vpdpbusd per token each.
template <int NT, int H>
inline void q6_half(const PackedQ6K& p, int h, __m512i qh, const BlockQ8_K* const* x, int64_t i, __m512i m4,
                    __m512i m30, __m512i* dlo, __m512i* dhi) {
  const __m512i ql = _mm512_loadu_si512(p.ql[2 * h + H]);
  const __m512i lo = _mm512_or_si512(_mm512_and_si512(ql, m4), q6_high<2 * H>(qh, m30));
  const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), q6_high<2 * H + 1>(qh, m30));
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    dlo[t] = _mm512_dpbusd_epi32(dlo[t], lo, broadcast4(x[t][i].qs + 16 * h + 8 * H));
    dhi[t] = _mm512_dpbusd_epi32(dhi[t], hi, broadcast4(x[t][i].qs + 16 * h + 8 * H + 4));
  }
}

template <int NT>
void tile_q6k(int64_t K, const PackedQ6K* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
              int n_valid) {
  const BlockQ8_K* x[NT];
  __m512 acc[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    x[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride);
    acc[t] = _mm512_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const int64_t nb = K / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const PackedQ6K& p = g[i];
    __m512i sumi[NT], off[NT];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) sumi[t] = off[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int pp = 0; pp < 8; ++pp) {
      if constexpr (NT == 1) prefetch_lines<sizeof(PackedQ6K), 8>(g + i + kPrefetchBlocks, pp);
      // (sc_{2pp}, sc_{2pp+1}) as i16 pairs: the offset term takes them with the bsums pair
      // (one dword of bsums); the sub-block sums take each one sign-extended to i32.
      const __m512i sp = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.scales[pp])));
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t)
        off[t] = _mm512_dpwssd_epi32(off[t], sp, broadcast4(reinterpret_cast<const int8_t*>(x[t][i].bsums + 2 * pp)));
      const __m512i sc[2] = {_mm512_srai_epi32(_mm512_slli_epi32(sp, 16), 16), _mm512_srai_epi32(sp, 16)};
#pragma GCC unroll 2
      for (int hh = 0; hh < 2; ++hh) {
        const int h = 2 * pp + hh;
        const __m512i qh = _mm512_loadu_si512(p.qh[h]);
        __m512i dlo[NT], dhi[NT];
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) dlo[t] = dhi[t] = _mm512_setzero_si512();
        q6_half<NT, 0>(p, h, qh, x, i, m4, m30, dlo, dhi);
        q6_half<NT, 1>(p, h, qh, x, i, m4, m30, dlo, dhi);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t)
          sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(_mm512_add_epi32(dlo[t], dhi[t]), sc[hh]));
      }
    }
    const __m512 d = _mm512_loadu_ps(p.d);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const __m512i s = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(off[t], 5));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[t][i].d)), _mm512_cvtepi32_ps(s), acc[t]);
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << n_valid) - 1u);
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + t * ldy, keep, acc[t]);
}

// One token × NG groups in lockstep, as gemv_q4k; per lane the operations of tile_q6k<1>.
template <int NG>
void gemv_q6k(int64_t K, const PackedQ6K* const* g, const BlockQ8_K* x, float* const* y, const int* n_valid) {
  __m512 acc[NG];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const int64_t nb = K / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    __m512i sumi[NG], off[NG];
#pragma GCC unroll 4
    for (int k = 0; k < NG; ++k) sumi[k] = off[k] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int pp = 0; pp < 8; ++pp) {
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) prefetch_lines<sizeof(PackedQ6K), 8>(g[k] + i + kPrefetchBlocks, pp);
      const __m512i bpair = broadcast4(reinterpret_cast<const int8_t*>(x[i].bsums + 2 * pp));
      __m512i sc[NG][2];
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) {
        const __m512i sp =
            _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g[k][i].scales[pp])));
        off[k] = _mm512_dpwssd_epi32(off[k], sp, bpair);
        sc[k][0] = _mm512_srai_epi32(_mm512_slli_epi32(sp, 16), 16);
        sc[k][1] = _mm512_srai_epi32(sp, 16);
      }
#pragma GCC unroll 2
      for (int hh = 0; hh < 2; ++hh) {
        const int h = 2 * pp + hh;
        const __m512i a0 = broadcast4(x[i].qs + 16 * h), a1 = broadcast4(x[i].qs + 16 * h + 4),
                      a2 = broadcast4(x[i].qs + 16 * h + 8), a3 = broadcast4(x[i].qs + 16 * h + 12);
#pragma GCC unroll 4
        for (int k = 0; k < NG; ++k) {
          const PackedQ6K& p = g[k][i];
          const __m512i qh = _mm512_loadu_si512(p.qh[h]);
          const __m512i ql0 = _mm512_loadu_si512(p.ql[2 * h]), ql1 = _mm512_loadu_si512(p.ql[2 * h + 1]);
          __m512i dlo = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                            _mm512_or_si512(_mm512_and_si512(ql0, m4), q6_high<0>(qh, m30)), a0);
          __m512i dhi = _mm512_dpbusd_epi32(
              _mm512_setzero_si512(),
              _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql0, 4), m4), q6_high<1>(qh, m30)), a1);
          dlo = _mm512_dpbusd_epi32(dlo, _mm512_or_si512(_mm512_and_si512(ql1, m4), q6_high<2>(qh, m30)), a2);
          dhi = _mm512_dpbusd_epi32(
              dhi, _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql1, 4), m4), q6_high<3>(qh, m30)), a3);
          sumi[k] = _mm512_add_epi32(sumi[k], _mm512_mullo_epi32(_mm512_add_epi32(dlo, dhi), sc[k][hh]));
        }
      }
    }
    const __m512 ad = _mm512_set1_ps(x[i].d);
#pragma GCC unroll 4
    for (int k = 0; k < NG; ++k) {
      const __m512i s = _mm512_sub_epi32(sumi[k], _mm512_slli_epi32(off[k], 5));
      acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_loadu_ps(g[k][i].d), ad), _mm512_cvtepi32_ps(s), acc[k]);
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k)
    _mm512_mask_storeu_ps(y[k], static_cast<__mmask16>((1u << n_valid[k]) - 1u), acc[k]);
}

// Q4_1: per block and token, 8 vpdpbusd over the group's four 64-byte quads (low and
// high nibbles kept in two accumulators: two dependency chains), then the d and m terms
// as the reference orders them. The exact integer sums make it bit for bit the reference.
template <int NT>
void tile_q41(int64_t K, const PackedQ4_1* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
              int n_valid) {
  const BlockQ8_0* x[NT];
  const int16_t* sums[NT];
  __m512 acc[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    x[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
    sums[t] = act_block_sums(x[t], K);
    acc[t] = _mm512_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const int64_t nb = K / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const PackedQ4_1& p = g[i];
    __m512i lo_acc[NT], hi_acc[NT];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) lo_acc[t] = hi_acc[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m512i w = _mm512_loadu_si512(p.qs[q]);
      const __m512i lo = _mm512_and_si512(w, m4), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        lo_acc[t] = _mm512_dpbusd_epi32(lo_acc[t], lo, broadcast4(x[t][i].qs + 4 * q));
        hi_acc[t] = _mm512_dpbusd_epi32(hi_acc[t], hi, broadcast4(x[t][i].qs + 16 + 4 * q));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.d)));
    const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.m)));
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const __m512 ad = _mm512_set1_ps(_cvtsh_ss(x[t][i].d));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(_mm512_add_epi32(lo_acc[t], hi_acc[t])), acc[t]);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(m, ad), _mm512_set1_ps(static_cast<float>(sums[t][i])), acc[t]);
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << n_valid) - 1u);
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + t * ldy, keep, acc[t]);
}

// One token × NG groups in lockstep (several weight streams in flight), the token's
// broadcasts shared; per lane the operations of tile_q41<1>.
template <int NG>
void gemv_q41(int64_t K, const PackedQ4_1* const* g, const BlockQ8_0* x, float* const* y, const int* n_valid) {
  const int16_t* sums = act_block_sums(x, K);
  __m512 acc[NG];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const int64_t nb = K / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    __m512i alo[4], ahi[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) alo[q] = broadcast4(x[i].qs + 4 * q), ahi[q] = broadcast4(x[i].qs + 16 + 4 * q);
    const __m512 ad = _mm512_set1_ps(_cvtsh_ss(x[i].d));
    const __m512 sa = _mm512_set1_ps(static_cast<float>(sums[i]));
#pragma GCC unroll 4
    for (int k = 0; k < NG; ++k) {
      const PackedQ4_1& p = g[k][i];
      __m512i lo_acc = _mm512_setzero_si512(), hi_acc = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m512i w = _mm512_loadu_si512(p.qs[q]);
        lo_acc = _mm512_dpbusd_epi32(lo_acc, _mm512_and_si512(w, m4), alo[q]);
        hi_acc = _mm512_dpbusd_epi32(hi_acc, _mm512_and_si512(_mm512_srli_epi16(w, 4), m4), ahi[q]);
      }
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.d)));
      const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.m)));
      acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(_mm512_add_epi32(lo_acc, hi_acc)), acc[k]);
      acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(m, ad), sa, acc[k]);
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k)
    _mm512_mask_storeu_ps(y[k], static_cast<__mmask16>((1u << n_valid[k]) - 1u), acc[k]);
}

// Q8_0: per block and token, 8 vpdpbusd of the offset codes (two chains), minus 128·Σa,
// then one FMA as the reference orders it.
template <int NT>
void tile_q80(int64_t K, const PackedQ8_0* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
              int n_valid) {
  const BlockQ8_0* x[NT];
  const int16_t* sums[NT];
  __m512 acc[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    x[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
    sums[t] = act_block_sums(x[t], K);
    acc[t] = _mm512_setzero_ps();
  }
  const int64_t nb = K / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const PackedQ8_0& p = g[i];
    __m512i even[NT], odd[NT];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) even[t] = odd[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int q = 0; q < 8; q += 2) {
      const __m512i w0 = _mm512_loadu_si512(p.qs[q]), w1 = _mm512_loadu_si512(p.qs[q + 1]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        even[t] = _mm512_dpbusd_epi32(even[t], w0, broadcast4(x[t][i].qs + 4 * q));
        odd[t] = _mm512_dpbusd_epi32(odd[t], w1, broadcast4(x[t][i].qs + 4 * q + 4));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.d)));
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const __m512i sumi = _mm512_sub_epi32(_mm512_add_epi32(even[t], odd[t]), _mm512_set1_epi32(128 * sums[t][i]));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(_cvtsh_ss(x[t][i].d))), _mm512_cvtepi32_ps(sumi), acc[t]);
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << n_valid) - 1u);
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + t * ldy, keep, acc[t]);
}

// One token × NG groups in lockstep; per lane the operations of tile_q80<1>.
template <int NG>
void gemv_q80(int64_t K, const PackedQ8_0* const* g, const BlockQ8_0* x, float* const* y, const int* n_valid) {
  const int16_t* sums = act_block_sums(x, K);
  __m512 acc[NG];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k] = _mm512_setzero_ps();
  const int64_t nb = K / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    __m512i av[8];
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) av[q] = broadcast4(x[i].qs + 4 * q);
    const __m512 ad = _mm512_set1_ps(_cvtsh_ss(x[i].d));
    const __m512i offset = _mm512_set1_epi32(128 * sums[i]);
#pragma GCC unroll 4
    for (int k = 0; k < NG; ++k) {
      const PackedQ8_0& p = g[k][i];
      __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int q = 0; q < 8; q += 2) {
        even = _mm512_dpbusd_epi32(even, _mm512_loadu_si512(p.qs[q]), av[q]);
        odd = _mm512_dpbusd_epi32(odd, _mm512_loadu_si512(p.qs[q + 1]), av[q + 1]);
      }
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.d)));
      acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_add_epi32(even, odd), offset)),
                               acc[k]);
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k)
    _mm512_mask_storeu_ps(y[k], static_cast<__mmask16>((1u << n_valid[k]) - 1u), acc[k]);
}

}  // namespace

SQZ_PACKED_ENTRIES(avx512, q4_k, tile_q4k, gemv_q4k, PackedQ4K, BlockQ8_K)
SQZ_PACKED_ENTRIES(avx512, q6_k, tile_q6k, gemv_q6k, PackedQ6K, BlockQ8_K)
SQZ_PACKED_ENTRIES(avx512, q4_1, tile_q41, gemv_q41, PackedQ4_1, BlockQ8_0)
SQZ_PACKED_ENTRIES(avx512, q8_0, tile_q80, gemv_q80, PackedQ8_0, BlockQ8_0)
#undef SQZ_PACKED_ENTRIES

}  // namespace squeeze::quant::impl
