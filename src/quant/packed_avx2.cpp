// quant/packed_avx2.cpp — the packed Q4_K and Q6_K × Q8_K and Q4_1, Q8_0 and MXFP4 × Q8_0
// tiles and GEMVs with AVX2 (no VNNI). Compiled with squeeze_isa_sources(avx2 ...).
//
// A ymm holds 4 codes of each of 8 rows: a packed group (quant/packed.h) is two such halves
// per 64-byte slab, taken one after the other. `vpmaddubsw` multiplies the unsigned codes
// by a broadcast of the token's 4 activation codes and adds adjacent pairs into i16 lanes
// (row r owns lanes 2r and 2r+1); those lanes accumulate in i16 over a sub-block while the
// sums provably fit (below), then one `vpmaddwd` with the row's scale in both of its lanes
// folds them into the row's i32 sum. Every integer is exact, so the result is bit for bit
// the scalar reference (quant/packed.cpp) whatever the tile's token count.
//
// i16 bounds, with activation codes |a| ≤ 128 (the Q8_K quantizer writes ≤ 127):
// Q4_K: 8 quads of one sub-block, each lane 2 codes ≤ 15: 8·2·15·128 = 30720 < 32767.
// Q6_K: 2 quads, codes ≤ 63: 2·2·63·128 = 32256 < 32767 (a whole 16-element sub-block
// would not fit, so each sub-block is two `vpmaddwd`).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/packed.h"
#include "quant/packed_kernel_util.h"

namespace squeeze::quant::impl {
namespace {

inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Stores the first n (≤ 8) lanes.
inline void store_first(float* y, __m256 v, int n) {
  if (n >= 8) {
    _mm256_storeu_ps(y, v);
    return;
  }
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  std::memcpy(y, tmp, static_cast<size_t>(n) * sizeof(float));
}

// Rows 8h .. 8h+7 of a group: how many of them are valid.
inline int half_valid(int n_valid, int h) { return n_valid - 8 * h < 0 ? 0 : (n_valid - 8 * h > 8 ? 8 : n_valid - 8 * h); }

// Writes a group's valid rows from its two halves' accumulators.
inline void store_group(float* y, const __m256 (&acc)[2], int n_valid) {
  for (int h = 0; h < 2; ++h) store_first(y + 8 * h, acc[h], half_valid(n_valid, h));
}

// ---- Q4_K ----

// 8 unsigned byte scales (one per row) as i16 pairs (s, s): the vpmaddwd multiplier that
// sums a row's two i16 lanes times its scale.
inline __m256i q4k_scale_pairs(const uint8_t* s8) {
  const __m256i s = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8)));
  return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

// The activation's sub-block sums s_j = bsums[2j] + bsums[2j+1] (|s_j| ≤ 4096) as the four
// i16 pairs (s0,s1), (s2,s3), (s4,s5), (s6,s7), each broadcast to every dword.
struct Q4kMinPairs {
  __m256i pair[4];
};
inline Q4kMinPairs q4k_min_pairs(const BlockQ8_K& x) {
  const __m256i s = _mm256_madd_epi16(load256(x.bsums), _mm256_set1_epi16(1));
  const __m256i packed = _mm256_packs_epi32(s, s);  // dwords 0, 1, 4, 5 hold the pairs
  return {{_mm256_permutevar8x32_epi32(packed, _mm256_set1_epi32(0)),
           _mm256_permutevar8x32_epi32(packed, _mm256_set1_epi32(1)),
           _mm256_permutevar8x32_epi32(packed, _mm256_set1_epi32(4)),
           _mm256_permutevar8x32_epi32(packed, _mm256_set1_epi32(5))}};
}

// Σ_j m_j[r]·s_j for the 8 rows of half h: the (m_2p, m_2p+1) pairs are 16 bytes per p.
inline __m256i q4k_min_sum(const PackedQ4K& p, int h, const Q4kMinPairs& s) {
  __m256i m = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int pp = 0; pp < 4; ++pp)
    m = _mm256_add_epi32(m, _mm256_madd_epi16(_mm256_cvtepu8_epi16(load128(p.mins[pp][8 * h])), s.pair[pp]));
  return m;
}

template <int NT>
void tile_q4k(int64_t K, const PackedQ4K* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
              int n_valid) {
  const BlockQ8_K* x[NT];
  __m256 acc[NT][2];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    x[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride);
    acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const int64_t nb = K / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const PackedQ4K& p = g[i];
    __m256i summ[NT][2];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const Q4kMinPairs pairs = q4k_min_pairs(x[t][i]);
      summ[t][0] = q4k_min_sum(p, 0, pairs), summ[t][1] = q4k_min_sum(p, 1, pairs);
    }
    // Loops not unrolled past the quads: fully unrolled, the tile's 8 accumulators and
    // its decoded codes no longer fit the 16 ymm registers and spill on every quad.
#pragma GCC unroll 1
    for (int h = 0; h < 2; ++h) {
      __m256i sumi[NT];
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 1
      for (int c = 0; c < 4; ++c) {
        __m256i lo16[NT], hi16[NT];
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) lo16[t] = hi16[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q) {
          const __m256i w = load256(p.qs[c][q][8 * h]);
          const __m256i lo = _mm256_and_si256(w, m4), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
#pragma GCC unroll 4
          for (int t = 0; t < NT; ++t) {
            lo16[t] = _mm256_add_epi16(lo16[t], _mm256_maddubs_epi16(lo, broadcast4(x[t][i].qs + 64 * c + 4 * q)));
            hi16[t] = _mm256_add_epi16(hi16[t], _mm256_maddubs_epi16(hi, broadcast4(x[t][i].qs + 64 * c + 32 + 4 * q)));
          }
        }
        const __m256i sl = q4k_scale_pairs(p.scales[2 * c] + 8 * h), sh = q4k_scale_pairs(p.scales[2 * c + 1] + 8 * h);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t)
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(_mm256_madd_epi16(lo16[t], sl), _mm256_madd_epi16(hi16[t], sh)));
      }
      const __m256 d = _mm256_cvtph_ps(load128(p.d + 8 * h)), dm = _mm256_cvtph_ps(load128(p.dmin + 8 * h));
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const __m256 ad = _mm256_set1_ps(x[t][i].d);
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(sumi[t]), acc[t][h]);
        acc[t][h] = _mm256_fnmadd_ps(_mm256_mul_ps(dm, ad), _mm256_cvtepi32_ps(summ[t][h]), acc[t][h]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) store_group(y + t * ldy, acc[t], n_valid);
}

// One token × NG groups in lockstep (NG weight streams in flight), half by half; per lane
// the operations of tile_q4k<1>: bit-identical.
template <int NG>
void gemv_q4k(int64_t K, const PackedQ4K* const* g, const BlockQ8_K* x, float* const* y, const int* n_valid) {
  __m256 acc[NG][2];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const int64_t nb = K / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const Q4kMinPairs pairs = q4k_min_pairs(x[i]);
    const __m256 ad = _mm256_set1_ps(x[i].d);
#pragma GCC unroll 1
    for (int h = 0; h < 2; ++h) {
      __m256i sumi[NG];
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) sumi[k] = _mm256_setzero_si256();
#pragma GCC unroll 1  // as tile_q4k: unrolled further, the accumulators spill
      for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 4
        for (int k = 0; k < NG; ++k) prefetch_lines<sizeof(PackedQ4K), 8>(g[k] + i + kPrefetchBlocks, 4 * h + c);
        __m256i lo16[NG], hi16[NG];
#pragma GCC unroll 4
        for (int k = 0; k < NG; ++k) lo16[k] = hi16[k] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q) {
          const __m256i alo = broadcast4(x[i].qs + 64 * c + 4 * q), ahi = broadcast4(x[i].qs + 64 * c + 32 + 4 * q);
#pragma GCC unroll 4
          for (int k = 0; k < NG; ++k) {
            const __m256i w = load256(g[k][i].qs[c][q][8 * h]);
            lo16[k] = _mm256_add_epi16(lo16[k], _mm256_maddubs_epi16(_mm256_and_si256(w, m4), alo));
            hi16[k] = _mm256_add_epi16(hi16[k], _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(w, 4), m4), ahi));
          }
        }
#pragma GCC unroll 4
        for (int k = 0; k < NG; ++k) {
          const __m256i sl = q4k_scale_pairs(g[k][i].scales[2 * c] + 8 * h);
          const __m256i sh = q4k_scale_pairs(g[k][i].scales[2 * c + 1] + 8 * h);
          sumi[k] = _mm256_add_epi32(sumi[k], _mm256_add_epi32(_mm256_madd_epi16(lo16[k], sl), _mm256_madd_epi16(hi16[k], sh)));
        }
      }
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) {
        const PackedQ4K& p = g[k][i];
        const __m256 d = _mm256_cvtph_ps(load128(p.d + 8 * h)), dm = _mm256_cvtph_ps(load128(p.dmin + 8 * h));
        acc[k][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(sumi[k]), acc[k][h]);
        acc[k][h] = _mm256_fnmadd_ps(_mm256_mul_ps(dm, ad), _mm256_cvtepi32_ps(q4k_min_sum(p, h, pairs)), acc[k][h]);
      }
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) store_group(y[k], acc[k], n_valid[k]);
}

// ---- Q6_K ----

// The 2 high bits of quad s (0..3) of a packed Q6_K qh vector, moved to bits 4..5 of each
// byte (epi16 shifts: bits that cross into a neighbouring byte are masked off).
template <int S>
inline __m256i q6_high(__m256i qh, __m256i m30) {
  if constexpr (S == 0) return _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30);
  if constexpr (S == 1) return _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30);
  if constexpr (S == 2) return _mm256_and_si256(qh, m30);
  if constexpr (S == 3) return _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30);
}

// The four code vectors (quads 0..3) of sub-block hb, rows 8h .. 8h+7.
struct Q6kCodes {
  __m256i u[4];
};
inline Q6kCodes q6k_codes(const PackedQ6K& p, int hb, int h, __m256i m4, __m256i m30) {
  const __m256i qh = load256(p.qh[hb][8 * h]);
  const __m256i ql0 = load256(p.ql[2 * hb][8 * h]), ql1 = load256(p.ql[2 * hb + 1][8 * h]);
  return {{_mm256_or_si256(_mm256_and_si256(ql0, m4), q6_high<0>(qh, m30)),
           _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), q6_high<1>(qh, m30)),
           _mm256_or_si256(_mm256_and_si256(ql1, m4), q6_high<2>(qh, m30)),
           _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), q6_high<3>(qh, m30))}};
}

// Σ_k u·a over the sub-block (16 codes of `qs`) times the row's scale: two i16 halves, each
// folded by vpmaddwd.
inline __m256i q6k_scaled_dot(const Q6kCodes& c, const int8_t* qs, __m256i sc) {
  const __m256i d01 = _mm256_add_epi16(_mm256_maddubs_epi16(c.u[0], broadcast4(qs)),
                                       _mm256_maddubs_epi16(c.u[1], broadcast4(qs + 4)));
  const __m256i d23 = _mm256_add_epi16(_mm256_maddubs_epi16(c.u[2], broadcast4(qs + 8)),
                                       _mm256_maddubs_epi16(c.u[3], broadcast4(qs + 12)));
  return _mm256_add_epi32(_mm256_madd_epi16(d01, sc), _mm256_madd_epi16(d23, sc));
}

// The scales of sub-blocks 2pp, 2pp+1 for rows 8h .. 8h+7: `pairs` as stored (i16 lanes
// (sc_2pp, sc_2pp+1) per row, for the offset term), `even` / `odd` each one duplicated into
// both lanes of its row (the vpmaddwd multipliers).
struct Q6kScales {
  __m256i pairs, even, odd;
};
inline Q6kScales q6k_scales(const PackedQ6K& p, int pp, int h) {
  const __m256i sp = _mm256_cvtepi8_epi16(load128(p.scales[pp][8 * h]));
  const __m256i even = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8,
                                        9, 8, 9, 12, 13, 12, 13);
  const __m256i odd = _mm256_add_epi8(even, _mm256_set1_epi8(2));
  return {sp, _mm256_shuffle_epi8(sp, even), _mm256_shuffle_epi8(sp, odd)};
}

template <int NT>
void tile_q6k(int64_t K, const PackedQ6K* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
              int n_valid) {
  const BlockQ8_K* x[NT];
  __m256 acc[NT][2];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    x[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride);
    acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  const int64_t nb = K / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const PackedQ6K& p = g[i];
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m256i sumi[NT], off[NT];
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) sumi[t] = off[t] = _mm256_setzero_si256();
      for (int pp = 0; pp < 8; ++pp) {
        const Q6kScales s = q6k_scales(p, pp, h);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t)
          off[t] = _mm256_add_epi32(off[t], _mm256_madd_epi16(s.pairs, broadcast4(x[t][i].bsums + 2 * pp)));
#pragma GCC unroll 2
        for (int hh = 0; hh < 2; ++hh) {
          const int hb = 2 * pp + hh;
          const Q6kCodes codes = q6k_codes(p, hb, h, m4, m30);
#pragma GCC unroll 4
          for (int t = 0; t < NT; ++t)
            sumi[t] = _mm256_add_epi32(sumi[t], q6k_scaled_dot(codes, x[t][i].qs + 16 * hb, hh ? s.odd : s.even));
        }
      }
      const __m256 d = _mm256_loadu_ps(p.d + 8 * h);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const __m256i si = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(off[t], 5));
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x[t][i].d)), _mm256_cvtepi32_ps(si), acc[t][h]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) store_group(y + t * ldy, acc[t], n_valid);
}

// One token × NG groups in lockstep, half by half; per lane the operations of tile_q6k<1>.
template <int NG>
void gemv_q6k(int64_t K, const PackedQ6K* const* g, const BlockQ8_K* x, float* const* y, const int* n_valid) {
  __m256 acc[NG][2];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  const int64_t nb = K / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const __m256 ad = _mm256_set1_ps(x[i].d);
    for (int h = 0; h < 2; ++h) {
      __m256i sumi[NG], off[NG];
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) sumi[k] = off[k] = _mm256_setzero_si256();
      for (int pp = 0; pp < 8; ++pp) {
#pragma GCC unroll 4
        for (int k = 0; k < NG; ++k) prefetch_lines<sizeof(PackedQ6K), 16>(g[k] + i + kPrefetchBlocks, 8 * h + pp);
        const __m256i bpair = broadcast4(x[i].bsums + 2 * pp);
#pragma GCC unroll 4
        for (int k = 0; k < NG; ++k) {
          const Q6kScales s = q6k_scales(g[k][i], pp, h);
          off[k] = _mm256_add_epi32(off[k], _mm256_madd_epi16(s.pairs, bpair));
#pragma GCC unroll 2
          for (int hh = 0; hh < 2; ++hh) {
            const int hb = 2 * pp + hh;
            sumi[k] = _mm256_add_epi32(sumi[k], q6k_scaled_dot(q6k_codes(g[k][i], hb, h, m4, m30), x[i].qs + 16 * hb,
                                                               hh ? s.odd : s.even));
          }
        }
      }
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) {
        const __m256i si = _mm256_sub_epi32(sumi[k], _mm256_slli_epi32(off[k], 5));
        acc[k][h] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(g[k][i].d + 8 * h), ad), _mm256_cvtepi32_ps(si), acc[k][h]);
      }
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) store_group(y[k], acc[k], n_valid[k]);
}

// ---- Q4_1 and Q8_0 (× Q8_0 activations with block sums) ----

// Q4_1: per block, half and token, 8 vpmaddubsw over the group's four quads into one i16
// accumulator (4·2·2·15·128 = 30720 fits), one vpmaddwd to i32, then the d and m terms as
// the reference orders them.
template <int NT>
void tile_q41(int64_t K, const PackedQ4_1* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
              int n_valid) {
  const BlockQ8_0* x[NT];
  const int16_t* sums[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    x[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
    sums[t] = act_block_sums(x[t], K);
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones16 = _mm256_set1_epi16(1);
  const int64_t nb = K / kQK;
  // Half by half over the whole row: a block is too small to amortise keeping both halves'
  // accumulators live (they spilled).
#pragma GCC unroll 1
  for (int h = 0; h < 2; ++h) {
    __m256 acc[NT];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const PackedQ4_1& p = g[i];
      __m256i d16[NT];
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) d16[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m256i w = load256(p.qs[q][8 * h]);
        const __m256i lo = _mm256_and_si256(w, m4), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t)
          d16[t] = _mm256_add_epi16(d16[t], _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast4(x[t][i].qs + 4 * q)),
                                                             _mm256_maddubs_epi16(hi, broadcast4(x[t][i].qs + 16 + 4 * q))));
      }
      const __m256 d = _mm256_cvtph_ps(load128(p.d + 8 * h)), m = _mm256_cvtph_ps(load128(p.m + 8 * h));
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const __m256 ad = _mm256_set1_ps(_cvtsh_ss(x[t][i].d));
        const __m256i sumi = _mm256_madd_epi16(d16[t], ones16);
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(sumi), acc[t]);
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(m, ad), _mm256_set1_ps(static_cast<float>(sums[t][i])), acc[t]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) store_first(y + t * ldy + 8 * h, acc[t], half_valid(n_valid, h));
  }
}

// One token × NG groups in lockstep, half by half; per lane the operations of tile_q41<1>.
template <int NG>
void gemv_q41(int64_t K, const PackedQ4_1* const* g, const BlockQ8_0* x, float* const* y, const int* n_valid) {
  const int16_t* sums = act_block_sums(x, K);
  __m256 acc[NG][2];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones16 = _mm256_set1_epi16(1);
  const int64_t nb = K / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    __m256i alo[4], ahi[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) alo[q] = broadcast4(x[i].qs + 4 * q), ahi[q] = broadcast4(x[i].qs + 16 + 4 * q);
    const __m256 ad = _mm256_set1_ps(_cvtsh_ss(x[i].d));
    const __m256 sa = _mm256_set1_ps(static_cast<float>(sums[i]));
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) {
        const PackedQ4_1& p = g[k][i];
        __m256i d16 = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          const __m256i w = load256(p.qs[q][8 * h]);
          d16 = _mm256_add_epi16(d16, _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(w, m4), alo[q]),
                                                       _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(w, 4), m4), ahi[q])));
        }
        const __m256 d = _mm256_cvtph_ps(load128(p.d + 8 * h)), m = _mm256_cvtph_ps(load128(p.m + 8 * h));
        acc[k][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(_mm256_madd_epi16(d16, ones16)), acc[k][h]);
        acc[k][h] = _mm256_fmadd_ps(_mm256_mul_ps(m, ad), sa, acc[k][h]);
      }
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) store_group(y[k], acc[k], n_valid[k]);
}

// Q8_0: the stored codes u = q + 128 back to signed q (xor 0x80); vpmaddubsw takes |q| and
// the activation with q's sign (exact: |q| ≤ 128, |a| ≤ 127, so a pair is ≤ 32512), one
// vpmaddwd per quad widens to i32 (two pairs would not fit i16). Σ q·a is the reference's
// Σ u·a − 128·Σ a, the same integer.
struct Q80Codes {
  __m256i mag, sgn;
};
inline Q80Codes q80_codes(const void* p) {
  const __m256i q = _mm256_xor_si256(load256(p), _mm256_set1_epi8(static_cast<char>(0x80)));
  return {_mm256_abs_epi8(q), q};
}
inline __m256i q80_quad(const Q80Codes& c, const int8_t* a, __m256i ones16) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(c.mag, _mm256_sign_epi8(broadcast4(a), c.sgn)), ones16);
}

template <int NT>
void tile_q80(int64_t K, const PackedQ8_0* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
              int n_valid) {
  const BlockQ8_0* x[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const int64_t nb = K / kQK;
#pragma GCC unroll 1
  for (int h = 0; h < 2; ++h) {  // half by half over the row, as tile_q41
    __m256 acc[NT];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const PackedQ8_0& p = g[i];
      __m256i sumi[NT];
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const Q80Codes c = q80_codes(p.qs[q][8 * h]);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) sumi[t] = _mm256_add_epi32(sumi[t], q80_quad(c, x[t][i].qs + 4 * q, ones16));
      }
      const __m256 d = _mm256_cvtph_ps(load128(p.d + 8 * h));
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const __m256 ad = _mm256_set1_ps(_cvtsh_ss(x[t][i].d));
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) store_first(y + t * ldy + 8 * h, acc[t], half_valid(n_valid, h));
  }
}

// One token × NG groups in lockstep, half by half; per lane the operations of tile_q80<1>.
template <int NG>
void gemv_q80(int64_t K, const PackedQ8_0* const* g, const BlockQ8_0* x, float* const* y, const int* n_valid) {
  __m256 acc[NG][2];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
  const __m256i ones16 = _mm256_set1_epi16(1);
  const int64_t nb = K / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const __m256 ad = _mm256_set1_ps(_cvtsh_ss(x[i].d));
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) {
        const PackedQ8_0& p = g[k][i];
        __m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int q = 0; q < 8; q += 2) {
          even = _mm256_add_epi32(even, q80_quad(q80_codes(p.qs[q][8 * h]), x[i].qs + 4 * q, ones16));
          odd = _mm256_add_epi32(odd, q80_quad(q80_codes(p.qs[q + 1][8 * h]), x[i].qs + 4 * q + 4, ones16));
        }
        const __m256 d = _mm256_cvtph_ps(load128(p.d + 8 * h));
        acc[k][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(_mm256_add_epi32(even, odd)), acc[k][h]);
      }
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) store_group(y[k], acc[k], n_valid[k]);
}

// ---- MXFP4 (× Q8_0 activations with block sums) ----

// The codes u = kMxfp4Values[nibble] + 12 (0..24, unsigned for vpmaddubsw), one pshufb per
// nibble vector.
inline __m256i mxfp4_table() {
  return _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, 12, 13, 14, 15, 16, 18, 20, 24, 12,
                          11, 10, 9, 8, 6, 4, 0);
}

// e8m0_half of the 8 exponent bytes at e8 (quant/blocks.h), bit for bit: (e − 1) << 23 as
// f32 bits is 2^(e − 128) for e ≥ 2 (e = 255: 2^127); e = 0 and 1 are the subnormals
// 0x00200000 << e. All integer, so no FTZ / DAZ setting can change it.
inline __m256 mxfp4_scales(const uint8_t* e8) {
  const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(e8)));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}

// Σ u·a over quads q0, q0+1 of rows 8h .. 8h+7 (one i16 accumulator: 4 vpmaddubsw of
// pairs ≤ 2·24·127 = 6096 give ≤ 24384; all four quads (48768) would wrap, hence two
// halves, each widened by its own vpmaddwd).
inline __m256i mxfp4_pair_dot(const PackedMXFP4& p, int q0, int h, const int8_t* a, __m256i table, __m256i m4,
                              __m256i ones16) {
  __m256i d16 = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int q = q0; q < q0 + 2; ++q) {
    const __m256i w = load256(p.qs[q][8 * h]);
    const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(w, m4));
    const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(w, 4), m4));
    d16 = _mm256_add_epi16(d16, _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast4(a + 4 * q)),
                                                 _mm256_maddubs_epi16(hi, broadcast4(a + 16 + 4 * q))));
  }
  return _mm256_madd_epi16(d16, ones16);
}

// Σ v·a of one block for rows 8h .. 8h+7: Σ u·a − 12·Σ a, exact in i32.
inline __m256i mxfp4_sumi(const PackedMXFP4& p, int h, const int8_t* a, int16_t sum, __m256i table, __m256i m4,
                          __m256i ones16) {
  const __m256i dot = _mm256_add_epi32(mxfp4_pair_dot(p, 0, h, a, table, m4, ones16),
                                       mxfp4_pair_dot(p, 2, h, a, table, m4, ones16));
  return _mm256_sub_epi32(dot, _mm256_set1_epi32(12 * sum));
}

// Half by half over the whole row as tile_q41; one FMA per block as the reference.
template <int NT>
void tile_mxfp4(int64_t K, const PackedMXFP4* g, const uint8_t* a, int64_t a_stride, float* y, int64_t ldy,
                int n_valid) {
  const BlockQ8_0* x[NT];
  const int16_t* sums[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    x[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
    sums[t] = act_block_sums(x[t], K);
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones16 = _mm256_set1_epi16(1), table = mxfp4_table();
  const int64_t nb = K / kQK;
#pragma GCC unroll 1
  for (int h = 0; h < 2; ++h) {
    __m256 acc[NT];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const PackedMXFP4& p = g[i];
      const __m256 d = mxfp4_scales(p.e + 8 * h);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const __m256i sumi = mxfp4_sumi(p, h, x[t][i].qs, sums[t][i], table, m4, ones16);
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(_cvtsh_ss(x[t][i].d))), _mm256_cvtepi32_ps(sumi), acc[t]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) store_first(y + t * ldy + 8 * h, acc[t], half_valid(n_valid, h));
  }
}

// One token × NG groups in lockstep, half by half; per lane the operations of tile_mxfp4<1>.
template <int NG>
void gemv_mxfp4(int64_t K, const PackedMXFP4* const* g, const BlockQ8_0* x, float* const* y, const int* n_valid) {
  const int16_t* sums = act_block_sums(x, K);
  __m256 acc[NG][2];
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones16 = _mm256_set1_epi16(1), table = mxfp4_table();
  const int64_t nb = K / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const __m256 ad = _mm256_set1_ps(_cvtsh_ss(x[i].d));
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
      for (int k = 0; k < NG; ++k) {
        const PackedMXFP4& p = g[k][i];
        const __m256i sumi = mxfp4_sumi(p, h, x[i].qs, sums[i], table, m4, ones16);
        acc[k][h] = _mm256_fmadd_ps(_mm256_mul_ps(mxfp4_scales(p.e + 8 * h), ad), _mm256_cvtepi32_ps(sumi), acc[k][h]);
      }
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < NG; ++k) store_group(y[k], acc[k], n_valid[k]);
}

}  // namespace

SQZ_PACKED_ENTRIES(avx2, q4_k, tile_q4k, gemv_q4k, PackedQ4K, BlockQ8_K)
SQZ_PACKED_ENTRIES(avx2, q6_k, tile_q6k, gemv_q6k, PackedQ6K, BlockQ8_K)
SQZ_PACKED_ENTRIES(avx2, q4_1, tile_q41, gemv_q41, PackedQ4_1, BlockQ8_0)
SQZ_PACKED_ENTRIES(avx2, q8_0, tile_q80, gemv_q80, PackedQ8_0, BlockQ8_0)
SQZ_PACKED_ENTRIES(avx2, mxfp4, tile_mxfp4, gemv_mxfp4, PackedMXFP4, BlockQ8_0)
#undef SQZ_PACKED_ENTRIES

}  // namespace squeeze::quant::impl
