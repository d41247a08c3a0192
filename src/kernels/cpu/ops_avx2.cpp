// kernels/cpu/ops_avx2.cpp — AVX2+FMA variants of the f32 kernels (compiled with -mavx2 -mfma -mf16c).
// Row tails use masked loads/stores so every length is handled without a scalar loop.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "kernels/cpu/avx2_math.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/rope_tables.h"

namespace squeeze::kernels::cpu {
namespace {

using avx2::for_each8;
using avx2::hsum;
using avx2::tail_mask;

float dot(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
  }
  return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(va, _mm256_maskload_ps(x + i, m), _mm256_maskload_ps(y + i, m)));
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
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0;
    int64_t i = 0;
    for (; i + 16 <= cols; i += 16) {
      const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + i), x0, s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a1 + i), x0, s1);
      s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a2 + i), x0, s2);
      s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a3 + i), x0, s3);
      t0 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + i + 8), x1, t0);
      t1 = _mm256_fmadd_ps(_mm256_loadu_ps(a1 + i + 8), x1, t1);
      t2 = _mm256_fmadd_ps(_mm256_loadu_ps(a2 + i + 8), x1, t2);
      t3 = _mm256_fmadd_ps(_mm256_loadu_ps(a3 + i + 8), x1, t3);
    }
    for (; i < cols; i += 8) {
      const __m256i m = tail_mask(cols - i);
      const __m256 x0 = _mm256_maskload_ps(x + i, m);
      s0 = _mm256_fmadd_ps(_mm256_maskload_ps(a0 + i, m), x0, s0);
      s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a1 + i, m), x0, s1);
      s2 = _mm256_fmadd_ps(_mm256_maskload_ps(a2 + i, m), x0, s2);
      s3 = _mm256_fmadd_ps(_mm256_maskload_ps(a3 + i, m), x0, s3);
    }
    y[r] = hsum(_mm256_add_ps(s0, t0));
    y[r + 1] = hsum(_mm256_add_ps(s1, t1));
    y[r + 2] = hsum(_mm256_add_ps(s2, t2));
    y[r + 3] = hsum(_mm256_add_ps(s3, t3));
  }
  for (; r < rows; ++r) y[r] = dot(A + r * lda, x, cols);
}

// 4x4 register tile of dot products: each step loads 4 A rows and 4 B rows (8 loads)
// for 16 FMAs. Large GEMMs go to the BLAS (see parallel.h); this serves small shapes.
void gemm_nt(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
             int64_t K) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) {
    int64_t n = 0;
    for (; n + 4 <= N; n += 4) {
      __m256 acc[4][4];
      for (auto& row : acc)
        for (auto& v : row) v = _mm256_setzero_ps();
      for (int64_t k = 0; k < K; k += 8) {
        const __m256i mask = tail_mask(K - k);
        __m256 a[4], b[4];
        for (int i = 0; i < 4; ++i) a[i] = _mm256_maskload_ps(A + (m + i) * lda + k, mask);
        for (int j = 0; j < 4; ++j) b[j] = _mm256_maskload_ps(B + (n + j) * ldb + k, mask);
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) acc[i][j] = _mm256_fmadd_ps(a[i], b[j], acc[i][j]);
      }
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) C[(m + i) * ldc + n + j] = hsum(acc[i][j]);
    }
    for (; n < N; ++n)
      for (int i = 0; i < 4; ++i) C[(m + i) * ldc + n] = dot(A + (m + i) * lda, B + n * ldb, K);
  }
  for (; m < M; ++m) gemv(B, ldb, A + m * lda, C + m * ldc, N, K);
}

// MR rows of A times one packed panel (16 columns): 2·MR accumulators, two panel loads
// and MR broadcasts per k. MR = 6 keeps 12 FMA chains in flight (enough to cover the FMA
// latency on two pipes) with registers to spare for the operands.
template <int MR>
void panel_rows(const float* A, int64_t lda, const float* P, float* C, int64_t ldc, int nc, int64_t K,
                bool accumulate) {
  // Fully unrolled so that the accumulators live in registers.
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_load_ps(P + k * kGemmPanel), b1 = _mm256_load_ps(P + k * kGemmPanel + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 a = _mm256_broadcast_ss(A + i * lda + k);
      c0[i] = _mm256_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(a, b1, c1[i]);
    }
  }
  const __m256i m0 = tail_mask(nc), m1 = tail_mask(nc - 8);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    float* c = C + i * ldc;
    if (accumulate) {
      c0[i] = _mm256_add_ps(c0[i], _mm256_maskload_ps(c, m0));
      c1[i] = _mm256_add_ps(c1[i], _mm256_maskload_ps(c + 8, m1));
    }
    _mm256_maskstore_ps(c, m0, c0[i]);
    _mm256_maskstore_ps(c + 8, m1, c1[i]);
  }
}

void gemm_panel(const float* A, int64_t lda, const float* P, float* C, int64_t ldc, int64_t M, int nc, int64_t K,
                bool accumulate) {
  int64_t m = 0;
  for (; m + 6 <= M; m += 6) panel_rows<6>(A + m * lda, lda, P, C + m * ldc, ldc, nc, K, accumulate);
  switch (M - m) {
    case 5: return panel_rows<5>(A + m * lda, lda, P, C + m * ldc, ldc, nc, K, accumulate);
    case 4: return panel_rows<4>(A + m * lda, lda, P, C + m * ldc, ldc, nc, K, accumulate);
    case 3: return panel_rows<3>(A + m * lda, lda, P, C + m * ldc, ldc, nc, K, accumulate);
    case 2: return panel_rows<2>(A + m * lda, lda, P, C + m * ldc, ldc, nc, K, accumulate);
    case 1: return panel_rows<1>(A + m * lda, lda, P, C + m * ldc, ldc, nc, K, accumulate);
    default: return;
  }
}

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  const float ss = dot(x, x, n);
  const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(ss / static_cast<float>(n) + eps));
  for_each8(n, [&](int64_t i, auto io) {
    __m256 v = _mm256_mul_ps(io.load(x + i), scale);
    if (w) v = _mm256_mul_ps(v, io.load(w + i));
    io.store(y + i, v);
  });
}

void rope(float* x, const RopeParams& p) {
  const int64_t rot = p.rot_dim > 0 ? p.rot_dim : p.head_dim;
  const int64_t half = rot / 2;
  // The angles depend only on the pair index: compute once, apply to every head. The last
  // set is kept per thread: Q and then K of a token rotate by the same angles.
  constexpr int64_t kMaxHalf = 1024;
  struct Angles {
    int64_t position = -1, rot = 0, i0 = -1;
    float base = 0, scale = 0;
    bool has_factors = false;  // and then their values, compared (a pointer may be reused)
    float factors[kMaxHalf];
    alignas(32) float cs[kMaxHalf], sn[kMaxHalf];
  };
  thread_local Angles last;
  float* cs = last.cs;
  float* sn = last.sn;
  for (int64_t i0 = 0; i0 < half; i0 += kMaxHalf) {
    const int64_t cnt = std::min(kMaxHalf, half - i0);
    if (last.position != p.position || last.rot != rot || last.i0 != i0 || last.base != p.freq_base ||
        last.scale != p.freq_scale || last.has_factors != (p.freq_factors != nullptr) ||
        (p.freq_factors && !std::equal(p.freq_factors + i0, p.freq_factors + i0 + cnt, last.factors))) {
      for (int64_t i = 0; i < cnt; ++i) rope_angle(p, i0 + i, rot, &cs[i], &sn[i]);
      last.position = p.position, last.rot = rot, last.i0 = i0, last.base = p.freq_base, last.scale = p.freq_scale;
      last.has_factors = p.freq_factors != nullptr;
      if (p.freq_factors) std::copy_n(p.freq_factors + i0, cnt, last.factors);
    }
    for (int64_t h = 0; h < p.n_heads; ++h) {
      float* v = x + h * p.head_dim;
      if (p.style == RopeStyle::NeoX) {
        float* lo = v + i0;
        float* hi = v + half + i0;
        for_each8(cnt, [&](int64_t i, auto io) {
          const __m256 a = io.load(lo + i), b = io.load(hi + i);
          const __m256 c = _mm256_load_ps(cs + i), s = _mm256_load_ps(sn + i);
          io.store(lo + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
          io.store(hi + i, _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
        });
      } else {
        // interleaved pairs: 4 pairs per vector of 8 floats
        float* base = v + 2 * i0;
        int64_t i = 0;
        for (; i + 4 <= cnt; i += 4) {
          const __m256 xv = _mm256_loadu_ps(base + 2 * i);
          const __m128 c4 = _mm_load_ps(cs + i), s4 = _mm_load_ps(sn + i);
          // duplicate each angle to both lanes of its pair
          const __m256 c = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
          const __m256 s = _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4));
          const __m256 swapped = _mm256_permute_ps(xv, 0xB1);  // (b, a) per pair
          // even lanes: a*c - b*s ; odd lanes: b*c + a*s
          _mm256_storeu_ps(base + 2 * i, _mm256_fmaddsub_ps(xv, c, _mm256_mul_ps(swapped, s)));
        }
        for (; i < cnt; ++i) {
          const float a = base[2 * i], b = base[2 * i + 1];
          base[2 * i] = a * cs[i] - b * sn[i];
          base[2 * i + 1] = a * sn[i] + b * cs[i];
        }
      }
    }
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  for_each8(n, [&](int64_t i, auto io) { vmax = _mm256_max_ps(vmax, io.keep(io.load(x + i), -INFINITY)); });
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  const __m256 mx = _mm256_set1_ps(_mm_cvtss_f32(h));
  __m256 sum = _mm256_setzero_ps();
  for_each8(n, [&](int64_t i, auto io) {
    const __m256 e = io.keep(avx2::exp(_mm256_sub_ps(io.load(x + i), mx)), 0.0f);
    io.store(x + i, e);
    sum = _mm256_add_ps(sum, e);
  });
  const __m256 inv = _mm256_set1_ps(1.0f / hsum(sum));
  for_each8(n, [&](int64_t i, auto io) { io.store(x + i, _mm256_mul_ps(io.load(x + i), inv)); });
}

void silu(const float* x, float* y, int64_t n) {
  for_each8(n, [&](int64_t i, auto io) {
    const __m256 v = io.load(x + i);
    io.store(y + i, _mm256_mul_ps(v, avx2::sigmoid(v)));
  });
}

void swiglu(const float* gate, const float* up, float* y, int64_t n) {
  for_each8(n, [&](int64_t i, auto io) {
    const __m256 g = io.load(gate + i);
    io.store(y + i, _mm256_mul_ps(_mm256_mul_ps(g, avx2::sigmoid(g)), io.load(up + i)));
  });
}

// 0.5*x*(1 + tanh(z)) == x * sigmoid(2z), z = sqrt(2/pi) * (x + 0.044715 x^3): one exp,
// and no cancellation in 1 + tanh(z) for negative x.
inline __m256 gelu8(__m256 v) {
  const __m256 k2 = _mm256_set1_ps(2.0f * 0.7978845608028654f), c = _mm256_set1_ps(0.044715f);
  const __m256 inner = _mm256_mul_ps(k2, _mm256_fmadd_ps(_mm256_mul_ps(c, v), _mm256_mul_ps(v, v), v));
  return _mm256_mul_ps(v, avx2::sigmoid(inner));
}

void gelu(const float* x, float* y, int64_t n) {
  for_each8(n, [&](int64_t i, auto io) { io.store(y + i, gelu8(io.load(x + i))); });
}

void geglu(const float* gate, const float* up, float* y, int64_t n) {
  for_each8(n, [&](int64_t i, auto io) { io.store(y + i, _mm256_mul_ps(gelu8(io.load(gate + i)), io.load(up + i))); });
}

void add(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_add_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
}

void mul(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

void bf16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

// Round-to-nearest-even on the top 16 bits, NaN kept quiet: the scalar rule, 8 lanes at a time.
void f32_to_bf16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x00400000);
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_castps_si256(_mm256_loadu_ps(x + i));
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(v, abs_mask), inf);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(v, 16), one);
    __m256i r = _mm256_add_epi32(v, _mm256_add_epi32(bias, lsb));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(v, quiet), is_nan);
    r = _mm256_srli_epi32(r, 16);
    // pack 8 x u32 (each < 65536) into 8 x u16
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), packed);
  }
  for (; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

}  // namespace

const Ops& avx2_ops() {
  static const Ops table{
      .isa = Isa::Avx2,
      .dot = dot,
      .axpy = axpy,
      .gemv = gemv,
      .gemm_nt = gemm_nt,
      .gemm_panel = gemm_panel,
      .rmsnorm = rmsnorm,
      .rope = rope,
      .softmax = softmax,
      .silu = silu,
      .swiglu = swiglu,
      .gelu = gelu,
      .geglu = geglu,
      .add = add,
      .mul = mul,
      .f16_to_f32 = f16_to_f32_row,
      .bf16_to_f32 = bf16_to_f32_row,
      .f32_to_f16 = f32_to_f16_row,
      .f32_to_bf16 = f32_to_bf16_row,
  };
  return table;
}

}  // namespace squeeze::kernels::cpu
