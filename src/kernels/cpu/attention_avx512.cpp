// kernels/cpu/attention_avx512.cpp — the AVX-512 attention task kernel (compiled with
// squeeze_isa_sources(avx512 ...)). The AVX2 kernel's structure (attention_avx2.cpp) on
// 16-lane vectors: per tile of kTile keys the K rows are read once for every row of the task,
// scores go through the online softmax, then the V rows of the same tile are accumulated.
// A full tile that lies in one contiguous run of the cache is read in place and widened in
// registers (at depth this decodes ~15% faster than widening into an f32 tile first: the
// tile's stores and reloads competed with the loads from DRAM); other tiles are widened
// into the tile buffer. Scores are NR rows × NK keys (NR·NK = 16) of
// accumulators over head_dim, reduced to one vector of 16 dot products by a transpose-add
// tree. Needs head_dim % 16 == 0.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's own _mm512_undefined_* (see kernels/cpu/ops_avx512.cpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/attention_kernel.h"

// As in the AVX2 kernel, the small fixed-count loops must unroll so that their accumulators
// live in registers. Every helper has internal linkage: an AVX-512 copy of an inline
// function shared with other translation units could be the one the linker keeps.

namespace squeeze::kernels::cpu::attn {
namespace {

constexpr int64_t kTile = 32;
constexpr int64_t kPrefetchKeys = 4 * kTile;  // widening into the tile
// Reading in place: one tile ahead, spread over the tile's work (one to four tiles measured
// alike within noise, six slower; a burst at the tile's start was ~5% slower).
constexpr int64_t kInPlacePrefetchKeys = kTile;

inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// Rows of K or V read 16 lanes at a time (at element i of the rows from here): the
// widened f32 tile, or rows of a 16-bit or q8_0 cache widened in registers — scale · code
// in one rounding for q8_0, as kv_decode_row.
struct F32Rows {
  const float* p;
  F32Rows rows_from(int64_t j, int64_t D) const { return {p + j * D}; }
  __m512 load(int64_t i) const { return _mm512_loadu_ps(p + i); }
};
struct F16Rows {
  const uint16_t* p;
  F16Rows rows_from(int64_t j, int64_t D) const { return {p + j * D}; }
  __m512 load(int64_t i) const { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i))); }
};
struct BF16Rows {
  const uint16_t* p;
  BF16Rows rows_from(int64_t j, int64_t D) const { return {p + j * D}; }
  __m512 load(int64_t i) const {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16));
  }
};
struct Q8Rows {  // blocks of kKvQ8Block codes after an f16 scale; D % kKvQ8Block == 0
  const std::byte* p;
  Q8Rows rows_from(int64_t j, int64_t D) const { return {p + j * (D / kKvQ8Block) * (2 + kKvQ8Block)}; }
  __m512 load(int64_t i) const {
    const std::byte* blk = p + (i / kKvQ8Block) * (2 + kKvQ8Block);
    uint16_t h;
    std::memcpy(&h, blk, 2);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + i % kKvQ8Block));
    return _mm512_mul_ps(_mm512_set1_ps(half_to_float(h)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
};

// Calls body with the row reader of a non-f32 cache's rows starting at p.
template <typename Body>
void with_cache_rows(KvType type, const std::byte* p, Body&& body) {
  switch (type) {
    case KvType::F16: body(F16Rows{reinterpret_cast<const uint16_t*>(p)}); break;
    case KvType::BF16: body(BF16Rows{reinterpret_cast<const uint16_t*>(p)}); break;
    default: body(Q8Rows{p}); break;
  }
}

// Keys [k0, k0 + n) of one KV head's K (or V) as f32 rows [n][D]; prefetches the rows
// `ahead` positions later (below `limit`) into L2 while converting (as the AVX2 kernel).
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
  const auto prefetch = [&] {
    if (pf_done < pf_bytes) {
      _mm_prefetch(reinterpret_cast<const char*>(pf + pf_done), _MM_HINT_T1);
      pf_done += 64;
    }
  };
  for (int64_t done = 0; done < n;) {
    const KvLayerView::Run run = kv.run(head, k0 + done, n - done);
    const std::byte* src = values ? run.v : run.k;
    const int64_t count = run.len * D;
    if (kv.type == KvType::F32) {
      for (size_t off = 0; off < static_cast<size_t>(count) * 4; off += 64) prefetch();
      std::memcpy(dst, src, static_cast<size_t>(count) * 4);
    } else {
      // One 64-byte line prefetched per line read (a q8_0 line holds ~60 values).
      const int64_t per_line = kv.type == KvType::Q8_0 ? 64 : 32;
      with_cache_rows(kv.type, src, [&](auto rows) {
        for (int64_t i = 0; i < count; i += 16) {
          if (i % per_line == 0) prefetch();
          _mm512_storeu_ps(dst + i, rows.load(i));
        }
      });
    }
    dst += count;
    done += run.len;
  }
}

// Prefetches `bytes` from p into L2: per_call lines per step(), the rest by rest().
struct LinePrefetcher {
  const std::byte* p = nullptr;
  size_t bytes = 0, done = 0;
  int64_t per_call = 1;
  // Spreads the lines over `calls` steps (at least one line per step).
  void spread_over(int64_t calls) {
    const auto lines = static_cast<int64_t>((bytes + 63) / 64);
    per_call = std::max<int64_t>(1, (lines + calls - 1) / std::max<int64_t>(calls, 1));
  }
  void line() {
    _mm_prefetch(reinterpret_cast<const char*>(p + done), _MM_HINT_T1);
    done += 64;
  }
  void step() {
    for (int64_t i = 0; i < per_call && done < bytes; ++i) line();
  }
  void rest() {
    while (done < bytes) line();
  }
};

// exp on 16 lanes: the AVX2 kernel's range reduction and Cephes polynomial.
inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33654f)), _mm512_set1_ps(88.72283f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i ni = _mm512_cvtps_epi32(n);
  const __m512i n1 = _mm512_min_epi32(ni, _mm512_set1_epi32(127));
  const __m512i n2 = _mm512_sub_epi32(ni, n1);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, _mm512_set1_epi32(127)), 23));
  const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, _mm512_set1_epi32(127)), 23));
  return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}

// Four levels of pairwise shuffle-and-add, each halving the vectors and the lanes they still
// hold: lane L of the result is the sum of the lanes of a[hsum16_slot(L)].
constexpr int hsum16_slot(int lane) { return lane / 4 + 4 * (lane % 4); }

inline __m512 hsum16(const __m512* a) {
  __m512 b[8], c[4], d[2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i)  // 256-bit halves: lanes 0-7 from a[2i], 8-15 from a[2i+1]
    b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xEE));
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)  // 128-bit quarters: [b2i.q0, b2i.q2, b2i+1.q0, b2i+1.q2] + the q1/q3 ones
    c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xDD));
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)  // pairs of lanes within each 128-bit quarter
    d[i] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * i], c[2 * i + 1], 0x44), _mm512_shuffle_ps(c[2 * i], c[2 * i + 1], 0xEE));
  return _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xDD));
}

// s_r[j .. j + NK) = q_r · k_{j..} for NR rows and NK keys (NR · NK = 16; rows of k at
// stride D).
template <int NR, int NK, typename Rows>
inline void scores(const float* const* q, Rows k, int64_t D, float* const* s) {
  static_assert(NR * NK == 16);
  __m512 a[16];
#pragma GCC unroll 16
  for (auto& x : a) x = _mm512_setzero_ps();
  for (int64_t d = 0; d < D; d += 16) {
    __m512 qv[NR];
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) qv[r] = _mm512_loadu_ps(q[r] + d);
#pragma GCC unroll 16
    for (int j = 0; j < NK; ++j) {
      const __m512 kv = k.load(j * D + d);
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        // (row r, key j) accumulates where hsum16 puts lane r·NK + j.
        __m512& acc = a[hsum16_slot(r * NK + j)];
        acc = _mm512_fmadd_ps(qv[r], kv, acc);
      }
    }
  }
  alignas(64) float out[16];
  _mm512_store_ps(out, hsum16(a));
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) std::memcpy(s[r], out + r * NK, NK * sizeof(float));
}

// acc_r[d .. d + 16 NC) += Σ_t p_r[t] v_t[d ..] over t in [t0, t1), NR rows at once.
template <int NR, int NC, typename Rows>
inline void accumulate_pv(const float* const* p, Rows v, int64_t D, int64_t t0, int64_t t1, float* const* acc,
                          int64_t d, LinePrefetcher& pf) {
  __m512 a[NR][NC];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) a[r][c] = _mm512_loadu_ps(acc[r] + d + 16 * c);
  for (int64_t t = t0; t < t1; ++t) {
    pf.step();
    __m512 pr[NR];
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) pr[r] = _mm512_set1_ps(p[r][t]);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) {
      const __m512 vv = v.load(t * D + d + 16 * c);
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) a[r][c] = _mm512_fmadd_ps(pr[r], vv, a[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) _mm512_storeu_ps(acc[r] + d + 16 * c, a[r][c]);
}

template <int NR, typename Rows>
void accumulate_rows(const float* const* p, Rows v, int64_t D, int64_t t0, int64_t t1, float* const* acc,
                     LinePrefetcher& pf) {
  int64_t d = 0;
  for (; d + 64 <= D; d += 64) accumulate_pv<NR, 4>(p, v, D, t0, t1, acc, d, pf);
  switch ((D - d) / 16) {
    case 3: accumulate_pv<NR, 3>(p, v, D, t0, t1, acc, d, pf); break;
    case 2: accumulate_pv<NR, 2>(p, v, D, t0, t1, acc, d, pf); break;
    case 1: accumulate_pv<NR, 1>(p, v, D, t0, t1, acc, d, pf); break;
    default: break;
  }
}


}  // namespace

void run_task_avx512(const Task& t) {
  const KvLayerView& kv = *t.kv;
  const int64_t D = kv.head_dim, R = t.rows();
  const TaskScratch w = begin_task(t, kTile);
  const int64_t* row_lo = w.lo;
  const int64_t* row_hi = w.hi;
  // Key tiles start at multiples of kTile, not at the task's first key: every key then sits
  // in the same tile lane whichever queries share the task, so a query's output has the same
  // bits alone (a decode step) or in any chunk (a verify, a prefill from any position), also
  // under a sliding window. Keys of the first tile below every row's range are masked.
  const int64_t k_begin = row_lo[0] - row_lo[0] % kTile, k_end = row_hi[R - 1];
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const auto row_q = [&](int64_t a) { return w.qs + w.active[static_cast<size_t>(a)] * D; };
  const auto row_s = [&](int64_t a, int64_t j) { return w.s + w.active[static_cast<size_t>(a)] * kTile + j; };
  const size_t row_bytes = kv.row_bytes();

  // Scores of every active row against the tile's n keys (padded to the key step; the
  // padding's scores are masked below, and only the f32 tile is ever padded).
  const auto tile_scores = [&](int64_t n_active, int64_t n, auto k, LinePrefetcher& pf) {
    const auto steps = [&](int64_t nk) { return (n + nk - 1) / nk; };
    pf.spread_over(n_active / 4 * steps(4) + n_active % 4 / 2 * steps(8) + n_active % 2 * steps(16));
    int64_t i = 0;
    for (; i + 4 <= n_active; i += 4) {
      const float* q[4] = {row_q(i), row_q(i + 1), row_q(i + 2), row_q(i + 3)};
      for (int64_t j = 0; j < n; j += 4) {
        float* s[4] = {row_s(i, j), row_s(i + 1, j), row_s(i + 2, j), row_s(i + 3, j)};
        scores<4, 4>(q, k.rows_from(j, D), D, s);
        pf.step();
      }
    }
    for (; i + 2 <= n_active; i += 2) {
      const float* q[2] = {row_q(i), row_q(i + 1)};
      for (int64_t j = 0; j < n; j += 8) {
        float* s[2] = {row_s(i, j), row_s(i + 1, j)};
        scores<2, 8>(q, k.rows_from(j, D), D, s);
        pf.step();
      }
    }
    if (i < n_active) {
      const float* q[1] = {row_q(i)};
      for (int64_t j = 0; j < n; j += 16) {
        float* s[1] = {row_s(i, j)};
        scores<1, 16>(q, k.rows_from(j, D), D, s);
        pf.step();
      }
    }
  };
  // acc += p · V over the tile, up to four rows per pass so each V load feeds several FMAs.
  const auto tile_accumulate = [&](int64_t n_active, int64_t k0, int64_t n, auto v, LinePrefetcher& pf) {
    pf.spread_over((n_active + 3) / 4 * ((D + 63) / 64) * n);  // one step per key of each pass
    const auto accumulate = [&](auto nr_tag, int64_t first) {
      constexpr int NR = decltype(nr_tag)::value;
      const float* p[NR];
      float* acc[NR];
      int64_t t0 = k0 + n, t1 = k0;
      for (int j = 0; j < NR; ++j) {
        const int64_t r = w.active[static_cast<size_t>(first + j)];
        p[j] = w.s + r * kTile;
        acc[j] = w.acc + r * D;
        t0 = std::min(t0, row_lo[r]);
        t1 = std::max(t1, row_hi[r]);
      }
      accumulate_rows<NR>(p, v, D, std::max(t0, k0) - k0, std::min(t1, k0 + n) - k0, acc, pf);
    };
    int64_t i = 0;
    for (; i + 4 <= n_active; i += 4) accumulate(std::integral_constant<int, 4>{}, i);
    switch (n_active - i) {
      case 3: accumulate(std::integral_constant<int, 3>{}, i); break;
      case 2: accumulate(std::integral_constant<int, 2>{}, i); break;
      case 1: accumulate(std::integral_constant<int, 1>{}, i); break;
      default: break;
    }
  };

  for (int64_t k0 = k_begin; k0 < k_end; k0 += kTile) {
    const int64_t n = std::min(kTile, k_end - k0);
    const int64_t n_active = active_rows(w, R, k0, n);
    if (n_active == 0) continue;
    // A full tile of a 16-bit or q8_0 cache inside one run is read in place; anything else
    // (a partial tile, one across a block or ring boundary, an f32 cache) is widened into the tile.
    const KvLayerView::Run run = kv.run(t.kv_head, k0, n);
    const bool in_place = kv.type != KvType::F32 && n == kTile && run.len == n;
    LinePrefetcher pf_k, pf_v;
    if (in_place && k0 + kInPlacePrefetchKeys < k_end) {
      const KvLayerView::Run next =
          kv.run(t.kv_head, k0 + kInPlacePrefetchKeys, std::min(n, k_end - k0 - kInPlacePrefetchKeys));
      const size_t bytes = static_cast<size_t>(next.len) * row_bytes;
      pf_k = {next.k, bytes}, pf_v = {next.v, bytes};
    }
    if (in_place) {
      with_cache_rows(kv.type, run.k, [&](auto k) { tile_scores(n_active, n, k, pf_k); });
    } else {
      load_tile(kv, t.kv_head, k0, n, false, w.tile, kPrefetchKeys, k_end);
      tile_scores(n_active, n, F32Rows{w.tile}, pf_k);
    }
    pf_k.rest();

    // Online softmax: keys outside each row's range masked, the running max raised,
    // scores turned into weights p = exp(s - m) (0 where masked) in place.
    const int64_t n16 = (n + 15) / 16 * 16;
    for (int64_t a = 0; a < n_active; ++a) {
      const int64_t r = w.active[static_cast<size_t>(a)];
      const __m512i lo = _mm512_set1_epi32(static_cast<int>(std::max(row_lo[r], k0) - k0));
      const __m512i hi = _mm512_set1_epi32(static_cast<int>(std::min(row_hi[r], k0 + n) - k0));
      float* s = w.s + r * kTile;
      __m512 vmax = neg_inf;
      __mmask16 masks[kTile / 16];
      for (int64_t j = 0; j < n16; j += 16) {
        const __m512i idx = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int>(j)));
        masks[j / 16] = _mm512_cmpge_epi32_mask(idx, lo) & _mm512_cmplt_epi32_mask(idx, hi);
        vmax = _mm512_mask_max_ps(vmax, masks[j / 16], vmax, _mm512_loadu_ps(s + j));
      }
      const float m_new = std::max(w.m[r], _mm512_reduce_max_ps(vmax));
      const __m512 mv = _mm512_set1_ps(m_new);
      __m512 sum = _mm512_setzero_ps();
      for (int64_t j = 0; j < n16; j += 16) {
        const __m512 pj = _mm512_maskz_mov_ps(masks[j / 16], exp16(_mm512_sub_ps(_mm512_loadu_ps(s + j), mv)));
        _mm512_storeu_ps(s + j, pj);
        sum = _mm512_add_ps(sum, pj);
      }
      if (m_new > w.m[r]) {
        const float corr = std::exp(w.m[r] - m_new);  // 0 on the row's first tile
        const __m512 cv = _mm512_set1_ps(corr);
        float* acc = w.acc + r * D;
        for (int64_t d = 0; d < D; d += 16) _mm512_storeu_ps(acc + d, _mm512_mul_ps(cv, _mm512_loadu_ps(acc + d)));
        w.l[r] *= corr;
        w.m[r] = m_new;
      }
      w.l[r] += _mm512_reduce_add_ps(sum);
    }

    if (in_place) {
      with_cache_rows(kv.type, run.v, [&](auto v) { tile_accumulate(n_active, k0, n, v, pf_v); });
    } else {
      load_tile(kv, t.kv_head, k0, n, true, w.tile, kPrefetchKeys, k_end);
      tile_accumulate(n_active, k0, n, F32Rows{w.tile}, pf_v);
    }
    pf_v.rest();
  }

  finish_task(t, w);
}

}  // namespace squeeze::kernels::cpu::attn
