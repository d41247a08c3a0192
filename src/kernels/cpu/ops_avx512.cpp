// kernels/cpu/ops_avx512.cpp — AVX-512 (F/BW/VL/DQ) variants of the f32 kernels that carry the
// FLOPs and bytes: dot, axpy, GEMV, the small GEMM tile, the packed GEMM's panel kernel and
// the f16/bf16 row conversions. The element-wise ops (norms, activations, RoPE, softmax)
// are a few percent of a step and keep their AVX2 versions in this table. Row tails use
// AVX-512 masks, never a scalar loop. Nothing here calls an inline function shared with
// other translation units (an out-of-line copy compiled for AVX-512 could be the one the
// linker keeps for everyone).
// GCC 12 flags the deliberately undefined upper parts inside its own AVX-512 headers
// (_mm512_undefined_*) as uninitialised: a known false positive, silenced here only.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/cpu/ops.h"

namespace squeeze::kernels::cpu {

const Ops& avx2_ops();

namespace {

inline __mmask16 tail16(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

float dot(const float* a, const float* b, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  if (i < n) {
    const __mmask16 m = tail16(n - i);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = tail16(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

// Four rows at a time share each load of x; two accumulators per row hide FMA latency.
void gemv(const float* A, int64_t lda, const float* x, float* y, int64_t rows, int64_t cols) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* a0 = A + r * lda;
    const float* a1 = a0 + lda;
    const float* a2 = a1 + lda;
    const float* a3 = a2 + lda;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0;
    int64_t i = 0;
    for (; i + 32 <= cols; i += 32) {
      const __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
      s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + i), x0, s0);
      s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a1 + i), x0, s1);
      s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a2 + i), x0, s2);
      s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a3 + i), x0, s3);
      t0 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + i + 16), x1, t0);
      t1 = _mm512_fmadd_ps(_mm512_loadu_ps(a1 + i + 16), x1, t1);
      t2 = _mm512_fmadd_ps(_mm512_loadu_ps(a2 + i + 16), x1, t2);
      t3 = _mm512_fmadd_ps(_mm512_loadu_ps(a3 + i + 16), x1, t3);
    }
    for (; i < cols; i += 16) {
      const __mmask16 m = tail16(cols - i);
      const __m512 x0 = _mm512_maskz_loadu_ps(m, x + i);
      s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a0 + i), x0, s0);
      s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a1 + i), x0, s1);
      s2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a2 + i), x0, s2);
      s3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a3 + i), x0, s3);
    }
    y[r] = _mm512_reduce_add_ps(_mm512_add_ps(s0, t0));
    y[r + 1] = _mm512_reduce_add_ps(_mm512_add_ps(s1, t1));
    y[r + 2] = _mm512_reduce_add_ps(_mm512_add_ps(s2, t2));
    y[r + 3] = _mm512_reduce_add_ps(_mm512_add_ps(s3, t3));
  }
  for (; r < rows; ++r) y[r] = dot(A + r * lda, x, cols);
}

// 4x4 register tile of dot products, 16 lanes per step (the small shapes; large GEMMs
// take the packed path).
void gemm_nt(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
             int64_t K) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) {
    int64_t n = 0;
    for (; n + 4 <= N; n += 4) {
      __m512 acc[4][4];
      for (auto& row : acc)
        for (auto& v : row) v = _mm512_setzero_ps();
      for (int64_t k = 0; k < K; k += 16) {
        const __mmask16 mask = tail16(K - k);
        __m512 a[4], b[4];
        for (int i = 0; i < 4; ++i) a[i] = _mm512_maskz_loadu_ps(mask, A + (m + i) * lda + k);
        for (int j = 0; j < 4; ++j) b[j] = _mm512_maskz_loadu_ps(mask, B + (n + j) * ldb + k);
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_fmadd_ps(a[i], b[j], acc[i][j]);
      }
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) C[(m + i) * ldc + n + j] = _mm512_reduce_add_ps(acc[i][j]);
    }
    for (; n < N; ++n)
      for (int i = 0; i < 4; ++i) C[(m + i) * ldc + n] = dot(A + (m + i) * lda, B + n * ldb, K);
  }
  for (; m < M; ++m) gemv(B, ldb, A + m * lda, C + m * ldc, N, K);
}

// MR rows of A times one packed panel: a panel row is exactly one zmm, so each k costs
// one panel load and MR broadcast-FMAs. MR = 12 keeps 12 FMA chains in flight (two
// 512-bit FMA pipes × 4–6 cycles of latency) and 13 of the 32 registers busy.
template <int MR>
void panel_rows(const float* A, int64_t lda, const float* P, float* C, int64_t ldc, int nc, int64_t K,
                bool accumulate) {
  __m512 c[MR];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) c[i] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 b = _mm512_loadu_ps(P + k * kGemmPanel);  // panels are 32-byte aligned
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) c[i] = _mm512_fmadd_ps(_mm512_set1_ps(A[i * lda + k]), b, c[i]);
  }
  const __mmask16 m = tail16(nc);
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    float* out = C + i * ldc;
    if (accumulate) c[i] = _mm512_add_ps(c[i], _mm512_maskz_loadu_ps(m, out));
    _mm512_mask_storeu_ps(out, m, c[i]);
  }
}

template <int MR>
void panel_tail(const float* A, int64_t lda, const float* P, float* C, int64_t ldc, int64_t rows, int nc, int64_t K,
                bool accumulate) {
  if constexpr (MR > 0) {
    if (rows == MR) return panel_rows<MR>(A, lda, P, C, ldc, nc, K, accumulate);
    return panel_tail<MR - 1>(A, lda, P, C, ldc, rows, nc, K, accumulate);
  }
}

void gemm_panel(const float* A, int64_t lda, const float* P, float* C, int64_t ldc, int64_t M, int nc, int64_t K,
                bool accumulate) {
  constexpr int kMr = 12;
  int64_t m = 0;
  for (; m + kMr <= M; m += kMr) panel_rows<kMr>(A + m * lda, lda, P, C + m * ldc, ldc, nc, K, accumulate);
  if (m < M) panel_tail<kMr - 1>(A + m * lda, lda, P, C + m * ldc, ldc, M - m, nc, K, accumulate);
}

// MR rows × two panels: 2·MR accumulators, two panel loads and MR broadcasts per k, so
// each broadcast of A feeds two FMAs (one per panel). MR = 8 (16 accumulators) measured
// 215 GFLOP/s on one core in isolation against 180 for the one-panel MR = 12 kernel.
template <int MR>
void pair_rows(const float* A, int64_t lda, const float* P0, const float* P1, float* C, int64_t ldc, int nc1, int64_t K,
               bool accumulate) {
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_loadu_ps(P0 + k * kGemmPanel), b1 = _mm512_loadu_ps(P1 + k * kGemmPanel);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 a = _mm512_set1_ps(A[i * lda + k]);
      c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
    }
  }
  const __mmask16 m1 = tail16(nc1);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    float* out = C + i * ldc;
    if (accumulate) {
      c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(out));
      c1[i] = _mm512_add_ps(c1[i], _mm512_maskz_loadu_ps(m1, out + kGemmPanel));
    }
    _mm512_storeu_ps(out, c0[i]);
    _mm512_mask_storeu_ps(out + kGemmPanel, m1, c1[i]);
  }
}

template <int MR>
void pair_tail(const float* A, int64_t lda, const float* P0, const float* P1, float* C, int64_t ldc, int64_t rows,
               int nc1, int64_t K, bool accumulate) {
  if constexpr (MR > 0) {
    if (rows == MR) return pair_rows<MR>(A, lda, P0, P1, C, ldc, nc1, K, accumulate);
    return pair_tail<MR - 1>(A, lda, P0, P1, C, ldc, rows, nc1, K, accumulate);
  }
}

void gemm_panel_pair(const float* A, int64_t lda, const float* P0, const float* P1, float* C, int64_t ldc, int64_t M,
                     int nc1, int64_t K, bool accumulate) {
  constexpr int kMr = 8;
  int64_t m = 0;
  for (; m + kMr <= M; m += kMr) pair_rows<kMr>(A + m * lda, lda, P0, P1, C + m * ldc, ldc, nc1, K, accumulate);
  if (m < M) pair_tail<kMr - 1>(A + m * lda, lda, P0, P1, C + m * ldc, ldc, M - m, nc1, K, accumulate);
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}

void bf16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(y + i, m, h);
  }
}

// Round-to-nearest-even on the top 16 bits with NaN kept quiet: the scalar rule. (The
// BF16 extension's vcvtneps2bf16 treats denormal inputs as zero, which the rule does not.)
void f32_to_bf16_row(const float* x, uint16_t* y, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x00400000);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i);
    const __m512i v = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
    const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(v, abs_mask), inf);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(v, 16), one);
    __m512i r = _mm512_add_epi32(v, _mm512_add_epi32(bias, lsb));
    r = _mm512_mask_mov_epi32(r, is_nan, _mm512_or_si512(v, quiet));
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
  }
}

}  // namespace

const Ops& avx512_ops() {
  static const Ops table = [] {
    Ops t = avx2_ops();
    t.isa = Isa::Avx512;
    t.dot = dot;
    t.axpy = axpy;
    t.gemv = gemv;
    t.gemm_nt = gemm_nt;
    t.gemm_panel = gemm_panel;
    t.gemm_panel_pair = gemm_panel_pair;
    t.f16_to_f32 = f16_to_f32_row;
    t.bf16_to_f32 = bf16_to_f32_row;
    t.f32_to_f16 = f32_to_f16_row;
    t.f32_to_bf16 = f32_to_bf16_row;
    return t;
  }();
  return table;
}

}  // namespace squeeze::kernels::cpu
