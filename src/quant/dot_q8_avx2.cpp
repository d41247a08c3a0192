// quant/dot_q8_avx2.cpp — AVX2 dots of the 32-element types (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, MXFP4) with Q8_0 activations, and the AVX2 activation quantizers (Q8_0, Q8_K).
// Compiled for AVX2.
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/dtype.h"
#include "quant/avx2_common.h"
#include "quant/blocks.h"
#include "quant/kernels_impl.h"

namespace squeeze::quant::impl {
namespace {

using namespace avx2;

// The offset types (value d·q + m) have unsigned codes and a second term m·Σa; the
// others have signed codes and none.
template <typename Block> constexpr bool kOffset = false;
template <> constexpr bool kOffset<BlockQ4_1> = true;
template <> constexpr bool kOffset<BlockQ5_1> = true;

// The 32 nibbles of a 4-/5-bit block in element order: low nibbles are elements 0..15,
// high nibbles 16..31.
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
}

// 0xFF in byte j where bit j of qh (a little-endian u32) is set, else 0: byte j takes qh
// byte j/8, and OR-ing every bit but j%8 leaves 0xFF exactly when that bit is set.
inline __m256i bit_bytes(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, sizeof h);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(h)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
  return _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1));
}

// Decoded weight codes of one block as 32 bytes (signed, or unsigned for kOffset types).
inline __m256i codes(const BlockQ8_0& b) { return load(b.qs); }
inline __m256i codes(const BlockQ4_0& b) { return _mm256_sub_epi8(nibbles(b.qs), _mm256_set1_epi8(8)); }
inline __m256i codes(const BlockQ4_1& b) { return nibbles(b.qs); }
// q − 16 as a signed byte: nibble − 16 is 0xF0 | nibble where the fifth bit is clear.
inline __m256i codes(const BlockQ5_0& b) {
  return _mm256_or_si256(nibbles(b.qs), _mm256_andnot_si256(bit_bytes(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0))));
}
inline __m256i codes(const BlockQ5_1& b) {
  return _mm256_or_si256(nibbles(b.qs), _mm256_and_si256(bit_bytes(b.qh), _mm256_set1_epi8(0x10)));
}
// The table value of each nibble (kMxfp4Values), one pshufb per 32 codes.
inline __m256i codes(const BlockMXFP4& b) {
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values))),
                             nibbles(b.qs));
}

// The block scale as f32: the f16 d, or MXFP4's E8M0 power of two.
template <typename Block> inline float scale(const Block& b) { return half(b.d); }
inline float scale(const BlockMXFP4& b) { return e8m0_half(b.e); }

// NT activation rows share each decoded weight block (NT = 1 is the plain dot).
template <typename Block, int NT>
void dot_rows(int64_t n, const void* w, const void* a, int64_t stride, float* out) {
  const auto* x = static_cast<const Block*>(w);
  const BlockQ8_0* y[NT];
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const char*>(a) + t * stride);
    acc[t] = _mm256_setzero_ps();
  }
  const __m256i ones16 = _mm256_set1_epi16(1);
  // Two blocks per step into separate accumulators (the FMA chain is the latency
  // bound otherwise); one prefetch per pair (~one cache line of blocks).
  auto step = [&](int64_t i, __m256* acc_row) {
    const __m256i q = codes(x[i]);
    const float dx = half(x[i].d);
    if constexpr (kOffset<Block>) {
      // Unsigned codes go straight into maddubs (q ≤ 31: no i16 saturation). The offset
      // term m·da·Σc is added to the block's d-term before the accumulator, keeping the
      // accumulator chain one add long.
      const float mx = half(x[i].m);
      for (int t = 0; t < NT; ++t) {
        const __m256i ay = load(y[t][i].qs);
        const __m256i p32 = _mm256_madd_epi16(_mm256_maddubs_epi16(q, ay), ones16);
        const __m256i c32 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), ay), ones16);
        const float dy = half(y[t][i].d);
        const __m256 term = _mm256_fmadd_ps(_mm256_set1_ps(mx * dy), _mm256_cvtepi32_ps(c32),
                                            _mm256_mul_ps(_mm256_set1_ps(dx * dy), _mm256_cvtepi32_ps(p32)));
        acc_row[t] = _mm256_add_ps(acc_row[t], term);
      }
    } else {
      const __m256i aq = _mm256_sign_epi8(q, q);
      for (int t = 0; t < NT; ++t) {
        const __m256i p16 = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(load(y[t][i].qs), q));
        const __m256i p32 = _mm256_madd_epi16(p16, ones16);
        acc_row[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * half(y[t][i].d)), _mm256_cvtepi32_ps(p32), acc_row[t]);
      }
    }
  };
  __m256 acc2[NT];
  for (int t = 0; t < NT; ++t) acc2[t] = _mm256_setzero_ps();
  const int64_t nb = n / kQK;
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    prefetch_ahead<64>(x + i);  // a pair of blocks: 36 to 68 bytes, ~one line
    step(i, acc);
    step(i + 1, acc2);
  }
  if (i < nb) step(i, acc);
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_add_ps(acc[t], acc2[t]);
  for (int t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
}

template <typename Block>
void dot_multi(int64_t n, const void* w, const void* a, int64_t stride, int nt, float* out) {
  switch (nt) {
    case 1: return dot_rows<Block, 1>(n, w, a, stride, out);
    case 2: return dot_rows<Block, 2>(n, w, a, stride, out);
    case 3: return dot_rows<Block, 3>(n, w, a, stride, out);
    default: return dot_rows<Block, 4>(n, w, a, stride, out);
  }
}

// ---- The 4-/5-bit types: unsigned codes, four blocks per step, scales as vectors ----
//
// Per block the integer dot Σ u·a of the unsigned codes u (nibble, or nibble | 16·bit;
// MXFP4's table value + 12) with the activation codes a is exact; the type's offset
// (−8 / −16 / −12 for Q4_0 / Q5_0 / MXFP4, m for Q4_1 / Q5_1) is applied through the
// activation block's Σa, so no sign trick and no per-row Σa. Four blocks' integer sums
// are merged into one i32 vector (two madds and an unpack/add transpose instead of a
// madd, a conversion and a broadcast FMA per block), and their four scales come as one
// vector (from f16, or MXFP4's E8M0 bytes). The activation side (dy, dy·Σa)
// is computed once per step for up to four weight rows (the GEMV's row group).

// Unsigned codes of one block: elements 0..15 in lo, 16..31 in hi.
inline void ucodes(const uint8_t* qs, __m128i& lo, __m128i& hi) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  lo = _mm_and_si128(raw, m4);
  hi = _mm_and_si128(_mm_srli_epi16(raw, 4), m4);
}

// 0x10 in byte j of lo (hi) where bit j (16 + j) of qh is set.
inline void fifth_bits(const uint8_t* qh, __m128i& lo, __m128i& hi) {
  uint32_t h;
  std::memcpy(&h, qh, sizeof h);
  const __m128i v = _mm_cvtsi32_si128(static_cast<int>(h));
  const __m128i bit = _mm_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  const __m128i b16 = _mm_set1_epi8(0x10);
  const __m128i slo = _mm_shuffle_epi8(v, _mm_set_epi64x(0x0101010101010101, 0));
  const __m128i shi = _mm_shuffle_epi8(v, _mm_set_epi64x(0x0303030303030303, 0x0202020202020202));
  lo = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(slo, bit), bit), b16);
  hi = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(shi, bit), bit), b16);
}

template <typename Block> inline void block_codes(const Block& b, __m128i& lo, __m128i& hi) {
  ucodes(b.qs, lo, hi);
  if constexpr (std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>) {
    __m128i h0, h1;
    fifth_bits(b.qh, h0, h1);
    lo = _mm_or_si128(lo, h0);
    hi = _mm_or_si128(hi, h1);
  } else if constexpr (std::is_same_v<Block, BlockMXFP4>) {
    // kMxfp4Values + 12: unsigned, so they go into maddubs as the nibbles do.
    const __m128i biased = _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
    lo = _mm_shuffle_epi8(biased, lo);
    hi = _mm_shuffle_epi8(biased, hi);
  }
}

// i16 pair sums Σ u·a of one block (8 lanes, each ≤ 4·31·127 = 15748 in magnitude, so
// two of them still fit an i16 in merge4; MXFP4's u ≤ 24).
inline __m128i block_p16(__m128i lo, __m128i hi, const BlockQ8_0& y) {
  return _mm_add_epi16(_mm_maddubs_epi16(lo, _mm_loadu_si128(reinterpret_cast<const __m128i*>(y.qs))),
                       _mm_maddubs_epi16(hi, _mm_loadu_si128(reinterpret_cast<const __m128i*>(y.qs + 16))));
}

// Four blocks' i16 pair sums -> their four exact i32 totals [A, B, C, D].
inline __m128i merge4(__m128i a, __m128i b, __m128i c, __m128i d) {
  const __m128i ones = _mm_set1_epi16(1);
  const __m128i ab = _mm_madd_epi16(_mm_add_epi16(_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b)), ones);
  const __m128i cd = _mm_madd_epi16(_mm_add_epi16(_mm_unpacklo_epi32(c, d), _mm_unpackhi_epi32(c, d)), ones);
  return _mm_add_epi32(_mm_unpacklo_epi64(ab, cd), _mm_unpackhi_epi64(ab, cd));
}

// Four f16 values (k < cnt; 0 after) -> f32 vector.
inline __m128 halves4(uint64_t h0, uint64_t h1, uint64_t h2, uint64_t h3) {
  return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(h0 | h1 << 16 | h2 << 32 | h3 << 48)));
}

template <typename Block> constexpr float kZero = 0.0f;  // the offset types use m
template <> constexpr float kZero<BlockQ4_0> = -8.0f;
template <> constexpr float kZero<BlockQ5_0> = -16.0f;
template <> constexpr float kZero<BlockMXFP4> = -12.0f;

// e8m0_half of every byte: a 1 KiB table in L1 measured ~9% faster per MXFP4 dot than
// building the four bit patterns in vector registers (shifts and a blend).
alignas(64) constexpr std::array<float, 256> kE8m0Half = [] {
  std::array<float, 256> t{};
  for (int e = 0; e < 256; ++e) t[e] = e8m0_half(static_cast<uint8_t>(e));
  return t;
}();

// The scales of blocks k < CNT as f32 (0 after): four f16 d, or four E8M0 bytes.
template <typename Block, int CNT>
inline __m128 scales4(const Block* b) {
  if constexpr (std::is_same_v<Block, BlockMXFP4>) {
    return _mm_setr_ps(kE8m0Half[b[0].e], CNT > 1 ? kE8m0Half[b[1].e] : 0.0f, CNT > 2 ? kE8m0Half[b[2].e] : 0.0f,
                       CNT > 3 ? kE8m0Half[b[3].e] : 0.0f);
  } else {
    uint64_t h[4] = {0, 0, 0, 0};
#pragma GCC unroll 4
    for (int k = 0; k < CNT; ++k) h[k] = b[k].d;
    return halves4(h[0], h[1], h[2], h[3]);
  }
}

// One step of CNT ≤ 4 blocks from block i (CNT < 4 only at a row's end) for NR weight
// rows × NT activation rows: each token's activation sums (sy) are computed once for the
// NR rows and each row's codes once for the NT tokens. Every (row, token) pair runs the
// same arithmetic whatever NR and NT, so vec_dot (1 × 1), the GEMV's row groups (NR × 1),
// the GEMM's dot_multi (1 × NT) and its micro-tile (4 × NT) agree bit for bit.
template <typename Block, int NR, int NT, int CNT>
__attribute__((always_inline)) inline void gstep(const Block* const* x, const BlockQ8_0* const* y, int64_t i,
                                                 __m128 (*acc)[NT], __m128 (*off)[NT]) {
  const __m128i ones8 = _mm_set1_epi8(1);
  __m128 dy[NT], sy[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
    __m128i sa[4];
    uint64_t hy[4] = {0, 0, 0, 0};
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      if (k < CNT) {
        sa[k] = block_p16(ones8, ones8, y[t][i + k]);
        hy[k] = y[t][i + k].d;
      } else {
        sa[k] = _mm_setzero_si128();
      }
    }
    dy[t] = halves4(hy[0], hy[1], hy[2], hy[3]);
    sy[t] = _mm_mul_ps(dy[t], _mm_cvtepi32_ps(merge4(sa[0], sa[1], sa[2], sa[3])));
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
    const Block* b = x[r] + i;
    if constexpr (CNT == 4) {
      _mm_prefetch(reinterpret_cast<const char*>(b) + kPrefetchBytes, _MM_HINT_T0);
      if constexpr (4 * sizeof(Block) > 64) _mm_prefetch(reinterpret_cast<const char*>(b) + kPrefetchBytes + 64, _MM_HINT_T0);
    }
    __m128i lo[4], hi[4];
    uint64_t hm[4] = {0, 0, 0, 0};
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      if (k < CNT) {
        block_codes(b[k], lo[k], hi[k]);
        if constexpr (kOffset<Block>) hm[k] = b[k].m;
      }
    }
    const __m128 dx = scales4<Block, CNT>(b);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      __m128i p[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) p[k] = k < CNT ? block_p16(lo[k], hi[k], y[t][i + k]) : _mm_setzero_si128();
      acc[r][t] = _mm_fmadd_ps(_mm_mul_ps(dx, dy[t]), _mm_cvtepi32_ps(merge4(p[0], p[1], p[2], p[3])), acc[r][t]);
      if constexpr (kOffset<Block>) off[r][t] = _mm_fmadd_ps(halves4(hm[0], hm[1], hm[2], hm[3]), sy[t], off[r][t]);
      else off[r][t] = _mm_fmadd_ps(dx, sy[t], off[r][t]);
    }
  }
}

// out[r * NT + t] = dot(weight row r, activation row t), NR weight rows at `ws` bytes.
template <typename Block, int NR, int NT>
void tile(int64_t n, const void* w, int64_t ws, const void* a, int64_t as, float* out) {
  const Block* x[NR];
  const BlockQ8_0* y[NT];
  __m128 acc[NR][NT], off[NR][NT];
  for (int r = 0; r < NR; ++r) {
    x[r] = reinterpret_cast<const Block*>(static_cast<const char*>(w) + r * ws);
    for (int t = 0; t < NT; ++t) acc[r][t] = off[r][t] = _mm_setzero_ps();
  }
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const char*>(a) + t * as);
  const int64_t nb = n / kQK;
  int64_t i = 0;
  for (; i + 4 <= nb; i += 4) gstep<Block, NR, NT, 4>(x, y, i, acc, off);
  switch (nb - i) {
    case 1: gstep<Block, NR, NT, 1>(x, y, i, acc, off); break;
    case 2: gstep<Block, NR, NT, 2>(x, y, i, acc, off); break;
    case 3: gstep<Block, NR, NT, 3>(x, y, i, acc, off); break;
    default: break;
  }
  for (int r = 0; r < NR; ++r)
    for (int t = 0; t < NT; ++t) {
      const __m128 v = kOffset<Block> ? _mm_add_ps(acc[r][t], off[r][t])
                                      : _mm_fmadd_ps(_mm_set1_ps(kZero<Block>), off[r][t], acc[r][t]);
      out[r * NT + t] = hsum(v);
    }
}

template <typename Block, int NR>
void tile_nt(int64_t n, const void* w, int64_t ws, const void* a, int64_t as, int nt, float* out) {
  switch (nt) {
    case 1: return tile<Block, NR, 1>(n, w, ws, a, as, out);
    case 2: return tile<Block, NR, 2>(n, w, ws, a, as, out);
    case 3: return tile<Block, NR, 3>(n, w, ws, a, as, out);
    default: return tile<Block, NR, 4>(n, w, ws, a, as, out);
  }
}

// nr ≤ 4 weight rows × nt ≤ 4 activation rows.
template <typename Block>
void tile_any(int64_t n, const void* w, int64_t ws, int nr, const void* a, int64_t as, int nt, float* out) {
  switch (nr) {
    case 1: return tile_nt<Block, 1>(n, w, ws, a, as, nt, out);
    case 2: return tile_nt<Block, 2>(n, w, ws, a, as, nt, out);
    case 3: return tile_nt<Block, 3>(n, w, ws, a, as, nt, out);
    default: return tile_nt<Block, 4>(n, w, ws, a, as, nt, out);
  }
}

// Codes round(x·id) of 32 floats, packed to 32 i8 in element order.
inline __m256i round_pack(const float* x, __m256 id) {
  __m256i v[4];
  for (int k = 0; k < 4; ++k) v[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), id));
  // packs interleave 128-bit lanes; the permute restores element order.
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

inline float abs_max(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// The scalar reference's d·code (+ m) per element — a multiply then an add, two f32
// roundings, as ggml rounds — 8 elements per step: bit-identical to ref_dequantize_*.
template <typename Block>
void dequantize_blocks(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const __m256i q = codes(b[i]);
    const __m256 d = _mm256_set1_ps(scale(b[i]));
    for (int t = 0; t < 4; ++t) {
      const __m128i part = t < 2 ? _mm256_castsi256_si128(q) : _mm256_extracti128_si256(q, 1);
      const __m128i eight = (t % 2) ? _mm_srli_si128(part, 8) : part;
      __m256 v = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(eight)));
      if constexpr (kOffset<Block>) v = _mm256_add_ps(v, _mm256_set1_ps(half(b[i].m)));
      _mm256_storeu_ps(y + 8 * t, v);
    }
  }
}

}  // namespace

void avx2_dequantize_q8_0(const void* src, float* y, int64_t n) { dequantize_blocks<BlockQ8_0>(src, y, n); }
void avx2_dequantize_q4_0(const void* src, float* y, int64_t n) { dequantize_blocks<BlockQ4_0>(src, y, n); }
void avx2_dequantize_q4_1(const void* src, float* y, int64_t n) { dequantize_blocks<BlockQ4_1>(src, y, n); }
void avx2_dequantize_q5_0(const void* src, float* y, int64_t n) { dequantize_blocks<BlockQ5_0>(src, y, n); }
void avx2_dequantize_q5_1(const void* src, float* y, int64_t n) { dequantize_blocks<BlockQ5_1>(src, y, n); }
void avx2_dequantize_mxfp4(const void* src, float* y, int64_t n) { dequantize_blocks<BlockMXFP4>(src, y, n); }

#define SQZ_DOT_32(T, B)                                                                \
  float avx2_dot_##T(int64_t n, const void* w, const void* a) {                          \
    float r;                                                                             \
    dot_rows<B, 1>(n, w, a, 0, &r);                                                      \
    return r;                                                                            \
  }                                                                                      \
  void avx2_multi_##T(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) { \
    dot_multi<B>(n, w, a, s, nt, out);                                                   \
  }
SQZ_DOT_32(q8_0, BlockQ8_0)
#undef SQZ_DOT_32

// The 4-/5-bit types and MXFP4: vec_dot, the GEMV's row groups, dot_multi and the GEMM's
// micro-tile are all the one tile above (bit for bit the same per row and token).
#define SQZ_DOT_45(T, B)                                                                 \
  float avx2_dot_##T(int64_t n, const void* w, const void* a) {                          \
    float r;                                                                             \
    tile<B, 1, 1>(n, w, 0, a, 0, &r);                                                    \
    return r;                                                                            \
  }                                                                                      \
  void avx2_multi_##T(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) { \
    tile_nt<B, 1>(n, w, 0, a, s, nt, out);                                               \
  }                                                                                      \
  void avx2_wrows_##T(int64_t n, const void* w, int64_t stride, int nr, const void* a, float* out) { \
    tile_any<B>(n, w, stride, nr, a, 0, 1, out);                                         \
  }                                                                                      \
  void avx2_tile_##T(int64_t n, const void* w, int64_t ws, int nr, const void* a, int64_t as, int nt, float* out) { \
    tile_any<B>(n, w, ws, nr, a, as, nt, out);                                           \
  }
SQZ_DOT_45(q4_0, BlockQ4_0)
SQZ_DOT_45(q4_1, BlockQ4_1)
SQZ_DOT_45(q5_0, BlockQ5_0)
SQZ_DOT_45(q5_1, BlockQ5_1)
SQZ_DOT_45(mxfp4, BlockMXFP4)
#undef SQZ_DOT_45

// Same arithmetic as ref_quantize_act_q8_0 (x·(127/amax), ties to even), same bytes.
void avx2_quantize_act_q8_0(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float amax = abs_max(x, kQK);
    b[i].d = f32_to_f16(amax / 127.0f);
    const __m256 id = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs), round_pack(x, id));
  }
}

void avx2_quantize_act_q8_k(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    const float amax = abs_max(x, kQK_K);
    b[i].d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
    for (int k = 0; k < kQK_K / 32; ++k) {
      const __m256i q = round_pack(x + 32 * k, id);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs + 32 * k), q);
      // Sums of 16 codes: i8 -> i16, pairwise adds down to one per 16-group.
      const __m256i s16 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
      // s16 holds 8 i32 sums of 4 codes: lanes 0-3 group 2k, lanes 4-7 group 2k+1.
      const __m128i lo = _mm256_castsi256_si128(s16), hi = _mm256_extracti128_si256(s16, 1);
      const __m128i h = _mm_hadd_epi32(_mm_hadd_epi32(lo, hi), _mm_setzero_si128());
      b[i].bsums[2 * k] = static_cast<int16_t>(_mm_extract_epi32(h, 0));
      b[i].bsums[2 * k + 1] = static_cast<int16_t>(_mm_extract_epi32(h, 1));
    }
  }
}

}  // namespace squeeze::quant::impl
