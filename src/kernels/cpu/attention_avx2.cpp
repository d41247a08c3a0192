// kernels/cpu/attention_avx2.cpp — the AVX2+FMA attention task kernel (compiled with
// -mavx2 -mfma -mf16c). Per tile of kTile keys: the K rows are converted to f32 once (F16C)
// and shared by all rows of the task (the KV head's query heads × its queries), scores go
// through the online softmax, then the V rows of the same tile are converted and
// accumulated. The score matrix never exists beyond one tile. Needs head_dim % 8 == 0.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.h"
#include "kernels/cpu/attention_kernel.h"
#include "kernels/cpu/avx2_math.h"

// The small fixed-count loops below must unroll so their accumulators live in registers
// (GCC at -O2 keeps them in memory otherwise: 3x slower).

namespace squeeze::kernels::cpu::attn {
namespace {

// 32 keys × 128 dims of f32 = 16 KiB: the tile stays in L1 beside the rows' accumulators.
constexpr int64_t kTile = 32;

// Keys [k0, k0 + n) of one KV head's K (or V) as f32 rows [n][D], walking the cache's
// contiguous runs (a ring wraps, global blocks end). While converting, prefetches the same
// rows `ahead` positions later (keys below `limit`), so that decode, which streams K and V
// from DRAM once, keeps enough misses in flight.
void load_tile(const KvLayerView& kv, int64_t head, int64_t k0, int64_t n, bool values, float* dst, int64_t ahead,
               int64_t limit) {
  const int64_t D = kv.head_dim;
  const size_t row_bytes = kv.row_bytes();
  const std::byte* pf = nullptr;
  size_t pf_bytes = 0;
  if (k0 + ahead < limit) {
    const KvLayerView::Run next = kv.run(head, k0 + ahead, std::min(n, limit - k0 - ahead));
    pf = values ? next.v : next.k;
    pf_bytes = static_cast<size_t>(next.len) * row_bytes;
  }
  size_t pf_done = 0;
  for (int64_t done = 0; done < n;) {
    const KvLayerView::Run run = kv.run(head, k0 + done, n - done);
    const std::byte* src = values ? run.v : run.k;
    const int64_t count = run.len * D;
    if (kv.type == KvType::F32) {
      for (size_t off = 0; off < static_cast<size_t>(count) * 4 && pf_done < pf_bytes; off += 64, pf_done += 64)
        _mm_prefetch(reinterpret_cast<const char*>(pf + pf_done), _MM_HINT_T1);
      std::memcpy(dst, src, static_cast<size_t>(count) * 4);
    } else if (kv.type == KvType::Q8_0) {
      // Blocks of 32 codes after an f16 scale: codes widen to i32 and convert exactly, so
      // scale · code is the same single rounding as kv_decode_row's.
      for (int64_t b = 0; b < count / kKvQ8Block; ++b) {
        const std::byte* blk = src + b * (2 + kKvQ8Block);
        if ((b & 1) == 0 && pf_done < pf_bytes) {  // a 64-byte line per two blocks (68 bytes) read
          _mm_prefetch(reinterpret_cast<const char*>(pf + pf_done), _MM_HINT_T1);
          pf_done += 64;
        }
        uint16_t h;
        std::memcpy(&h, blk, 2);
        const __m256 d = _mm256_set1_ps(f16_to_f32(h));
        const auto* q = reinterpret_cast<const int8_t*>(blk + 2);
        for (int j = 0; j < 4; ++j) {
          const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * j));
          _mm256_storeu_ps(dst + b * kKvQ8Block + 8 * j, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8))));
        }
      }
    } else {
      // f16 widens through F16C; bf16 is the top half of an f32, so widening is a zero
      // extension and a 16-bit shift (exact, like the scalar bf16_to_f32).
      const bool bf16 = kv.type == KvType::BF16;
      const auto* h = reinterpret_cast<const __m128i*>(src);
      for (int64_t i = 0; i < count; i += 8) {
        if ((i & 31) == 0 && pf_done < pf_bytes) {  // one 64-byte line per 32 halves read
          _mm_prefetch(reinterpret_cast<const char*>(pf + pf_done), _MM_HINT_T1);
          pf_done += 64;
        }
        const __m128i x = _mm_loadu_si128(h + i / 8);
        const __m256 f = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(x), 16)) : _mm256_cvtph_ps(x);
        _mm256_storeu_ps(dst + i, f);
      }
    }
    dst += count;
    done += run.len;
  }
}

// Prefetch distance in keys: four tiles (32 KiB of K and of V per head at D = 128), into L2.
constexpr int64_t kPrefetchKeys = 4 * kTile;

// Eight horizontal sums in one vector: lane i = sum of the lanes of a_i.
inline __m256 hsum8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4, __m256 a5, __m256 a6, __m256 a7) {
  const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(a4, a5), _mm256_hadd_ps(a6, a7));
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// s[j] = q · k_j for 8 keys (rows of k at stride D).
inline void scores_1x8(const float* q, const float* k, int64_t D, float* s) {
  __m256 a[8];
#pragma GCC unroll 8
  for (auto& x : a) x = _mm256_setzero_ps();
  for (int64_t d = 0; d < D; d += 8) {
    const __m256 qv = _mm256_loadu_ps(q + d);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) a[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + j * D + d), a[j]);
  }
  _mm256_storeu_ps(s, hsum8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]));
}

// Two rows × 4 keys: each K load feeds two FMAs.
inline void scores_2x4(const float* q0, const float* q1, const float* k, int64_t D, float* s0, float* s1) {
  __m256 a[8];
#pragma GCC unroll 8
  for (auto& x : a) x = _mm256_setzero_ps();
  for (int64_t d = 0; d < D; d += 8) {
    const __m256 q0v = _mm256_loadu_ps(q0 + d), q1v = _mm256_loadu_ps(q1 + d);
#pragma GCC unroll 8
    for (int j = 0; j < 4; ++j) {
      const __m256 kv = _mm256_loadu_ps(k + j * D + d);
      a[j] = _mm256_fmadd_ps(q0v, kv, a[j]);
      a[4 + j] = _mm256_fmadd_ps(q1v, kv, a[4 + j]);
    }
  }
  const __m256 r = hsum8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
  _mm_storeu_ps(s0, _mm256_castps256_ps128(r));
  _mm_storeu_ps(s1, _mm256_extractf128_ps(r, 1));
}

// Three rows × 4 keys: 12 accumulators, each K load feeds three FMAs (7 loads per 12 FMAs,
// which keeps large query groups and prefill tiles off the load ports' limit).
inline void scores_3x4(const float* q0, const float* q1, const float* q2, const float* k, int64_t D, float* s0,
                       float* s1, float* s2) {
  __m256 a[12];
#pragma GCC unroll 12
  for (auto& x : a) x = _mm256_setzero_ps();
  for (int64_t d = 0; d < D; d += 8) {
    const __m256 q0v = _mm256_loadu_ps(q0 + d), q1v = _mm256_loadu_ps(q1 + d), q2v = _mm256_loadu_ps(q2 + d);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256 kv = _mm256_loadu_ps(k + j * D + d);
      a[j] = _mm256_fmadd_ps(q0v, kv, a[j]);
      a[4 + j] = _mm256_fmadd_ps(q1v, kv, a[4 + j]);
      a[8 + j] = _mm256_fmadd_ps(q2v, kv, a[8 + j]);
    }
  }
  const __m256 r01 = hsum8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
  const __m256 r2 = hsum8(a[8], a[9], a[10], a[11], a[8], a[9], a[10], a[11]);
  _mm_storeu_ps(s0, _mm256_castps256_ps128(r01));
  _mm_storeu_ps(s1, _mm256_extractf128_ps(r01, 1));
  _mm_storeu_ps(s2, _mm256_castps256_ps128(r2));
}

// acc_r[d .. d + 8 NC) += Σ_t p_r[t] v_t[d ..] over t in [t0, t1), for NR rows at once.
template <int NR, int NC>
inline void accumulate_pv(const float* const* p, const float* v, int64_t D, int64_t t0, int64_t t1, float* const* acc,
                          int64_t d) {
  __m256 a[NR][NC];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) a[r][c] = _mm256_loadu_ps(acc[r] + d + 8 * c);
  for (int64_t t = t0; t < t1; ++t) {
    // The row weights first, then each V chunk loaded once for all rows (NR = 3, NC = 4
    // uses all 16 registers: 7 loads per 12 FMAs).
    __m256 pr[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) pr[r] = _mm256_broadcast_ss(p[r] + t);
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) {
      const __m256 vv = _mm256_loadu_ps(v + t * D + d + 8 * c);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) a[r][c] = _mm256_fmadd_ps(pr[r], vv, a[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) _mm256_storeu_ps(acc[r] + d + 8 * c, a[r][c]);
}

template <int NR>
void accumulate_rows(const float* const* p, const float* v, int64_t D, int64_t t0, int64_t t1, float* const* acc) {
  int64_t d = 0;
  for (; d + 32 <= D; d += 32) accumulate_pv<NR, 4>(p, v, D, t0, t1, acc, d);
  switch ((D - d) / 8) {
    case 3: accumulate_pv<NR, 3>(p, v, D, t0, t1, acc, d); break;
    case 2: accumulate_pv<NR, 2>(p, v, D, t0, t1, acc, d); break;
    case 1: accumulate_pv<NR, 1>(p, v, D, t0, t1, acc, d); break;
    default: break;
  }
}


}  // namespace

void run_task_avx2(const Task& t) {
  const int64_t D = t.kv->head_dim, R = t.rows();
  const TaskScratch w = begin_task(t, kTile);
  const int64_t* row_lo = w.lo;
  const int64_t* row_hi = w.hi;
  // Key tiles start at multiples of kTile, not at the task's first key: every key then sits
  // in the same tile lane whichever queries share the task, so a query's output has the same
  // bits alone (a decode step) or in any chunk (a verify, a prefill from any position), also
  // under a sliding window. Keys of the first tile below every row's range are masked.
  const int64_t k_begin = row_lo[0] - row_lo[0] % kTile, k_end = row_hi[R - 1];
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

  for (int64_t k0 = k_begin; k0 < k_end; k0 += kTile) {
    const int64_t n = std::min(kTile, k_end - k0), n8 = (n + 7) / 8 * 8;
    const int64_t n_active = active_rows(w, R, k0, n);
    if (n_active == 0) continue;

    // Scores of every active row against the tile's keys.
    load_tile(*t.kv, t.kv_head, k0, n, false, w.tile, kPrefetchKeys, k_end);
    int64_t i = 0;
    for (; i + 3 <= n_active; i += 3) {
      const int64_t r0 = w.active[static_cast<size_t>(i)], r1 = w.active[static_cast<size_t>(i + 1)],
                    r2 = w.active[static_cast<size_t>(i + 2)];
      for (int64_t j = 0; j < n8; j += 4)
        scores_3x4(w.qs + r0 * D, w.qs + r1 * D, w.qs + r2 * D, w.tile + j * D, D, w.s + r0 * kTile + j,
                   w.s + r1 * kTile + j, w.s + r2 * kTile + j);
    }
    for (; i + 2 <= n_active; i += 2) {
      const int64_t r0 = w.active[static_cast<size_t>(i)], r1 = w.active[static_cast<size_t>(i + 1)];
      for (int64_t j = 0; j < n8; j += 4)
        scores_2x4(w.qs + r0 * D, w.qs + r1 * D, w.tile + j * D, D, w.s + r0 * kTile + j, w.s + r1 * kTile + j);
    }
    if (i < n_active) {
      const int64_t r = w.active[static_cast<size_t>(i)];
      for (int64_t j = 0; j < n8; j += 8) scores_1x8(w.qs + r * D, w.tile + j * D, D, w.s + r * kTile + j);
    }

    // Online softmax: mask keys outside each row's range, raise the running max, turn the
    // scores into weights p = exp(s - m) (0 where masked) in place.
    for (int64_t a = 0; a < n_active; ++a) {
      const int64_t r = w.active[static_cast<size_t>(a)];
      const __m256i lo = _mm256_set1_epi32(static_cast<int>(std::max(row_lo[r], k0) - k0));
      const __m256i hi = _mm256_set1_epi32(static_cast<int>(std::min(row_hi[r], k0 + n) - k0));
      float* s = w.s + r * kTile;
      __m256 vmax = neg_inf;
      __m256 masks[kTile / 8];
      for (int64_t j = 0; j < n8; j += 8) {
        const __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(static_cast<int>(j)));
        // lo <= idx < hi
        const __m256i in = _mm256_andnot_si256(_mm256_cmpgt_epi32(lo, idx), _mm256_cmpgt_epi32(hi, idx));
        masks[j / 8] = _mm256_castsi256_ps(in);
        vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(neg_inf, _mm256_loadu_ps(s + j), masks[j / 8]));
      }
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
      const float tile_max = _mm_cvtss_f32(m4);
      const float m_new = std::max(w.m[r], tile_max);
      const __m256 mv = _mm256_set1_ps(m_new);
      __m256 sum = _mm256_setzero_ps();
      for (int64_t j = 0; j < n8; j += 8) {
        const __m256 pj = _mm256_and_ps(avx2::exp(_mm256_sub_ps(_mm256_loadu_ps(s + j), mv)), masks[j / 8]);
        _mm256_storeu_ps(s + j, pj);
        sum = _mm256_add_ps(sum, pj);
      }
      if (m_new > w.m[r]) {
        const float corr = std::exp(w.m[r] - m_new);  // 0 on the row's first tile
        const __m256 cv = _mm256_set1_ps(corr);
        float* acc = w.acc + r * D;
        for (int64_t d = 0; d < D; d += 8) _mm256_storeu_ps(acc + d, _mm256_mul_ps(cv, _mm256_loadu_ps(acc + d)));
        w.l[r] *= corr;
        w.m[r] = m_new;
      }
      w.l[r] += avx2::hsum(sum);
    }

    // acc += p · V over the tile, three (then two) rows per pass so each V load feeds
    // several FMAs.
    load_tile(*t.kv, t.kv_head, k0, n, true, w.tile, kPrefetchKeys, k_end);
    i = 0;
    for (; i + 3 <= n_active; i += 3) {
      const int64_t r0 = w.active[static_cast<size_t>(i)], r1 = w.active[static_cast<size_t>(i + 1)],
                    r2 = w.active[static_cast<size_t>(i + 2)];
      const float* p[3] = {w.s + r0 * kTile, w.s + r1 * kTile, w.s + r2 * kTile};
      float* acc[3] = {w.acc + r0 * D, w.acc + r1 * D, w.acc + r2 * D};
      const int64_t t0 = std::min({row_lo[r0], row_lo[r1], row_lo[r2]});
      const int64_t t1 = std::max({row_hi[r0], row_hi[r1], row_hi[r2]});
      accumulate_rows<3>(p, w.tile, D, std::max(t0, k0) - k0, std::min(t1, k0 + n) - k0, acc);
    }
    for (; i + 2 <= n_active; i += 2) {
      const int64_t r0 = w.active[static_cast<size_t>(i)], r1 = w.active[static_cast<size_t>(i + 1)];
      const float* p[2] = {w.s + r0 * kTile, w.s + r1 * kTile};
      float* acc[2] = {w.acc + r0 * D, w.acc + r1 * D};
      const int64_t t0 = std::min(row_lo[r0], row_lo[r1]), t1 = std::max(row_hi[r0], row_hi[r1]);
      accumulate_rows<2>(p, w.tile, D, std::max(t0, k0) - k0, std::min(t1, k0 + n) - k0, acc);
    }
    if (i < n_active) {
      const int64_t r = w.active[static_cast<size_t>(i)];
      const float* p[1] = {w.s + r * kTile};
      float* acc[1] = {w.acc + r * D};
      accumulate_rows<1>(p, w.tile, D, std::max(row_lo[r], k0) - k0, std::min(row_hi[r], k0 + n) - k0, acc);
    }
  }

  finish_task(t, w);
}

}  // namespace squeeze::kernels::cpu::attn
