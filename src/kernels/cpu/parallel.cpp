// kernels/cpu/parallel.cpp
#include "kernels/cpu/parallel.h"

#include <algorithm>

#include "core/aligned_buffer.h"
#include "core/error.h"

#include "kernels/cpu/blas.h"
#include "kernels/cpu/ops.h"


namespace squeeze::kernels::cpu {

void gemv(ThreadPool& pool, const float* A, int64_t lda, const float* x, float* y, int64_t rows, int64_t cols) {
  const auto kernel = ops().gemv;
  // Chunks of 16 rows keep each thread streaming long contiguous stretches of A.
  pool.parallel_for(0, rows, [&](int64_t r0, int64_t r1) { kernel(A + r0 * lda, lda, x, y + r0, r1 - r0, cols); },
                    {ThreadPool::Schedule::Static, 16});
}

void gemm_nt(ThreadPool& pool, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
             int64_t M, int64_t N, int64_t K, GemmBackend backend) {
  if (M <= 0 || N <= 0) return;
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (backend == GemmBackend::Packed || (backend == GemmBackend::Auto && flops >= kPackedMinFlops && M > 1)) {
    gemm_packed(pool, A, lda, [&](int64_t n0, int nr, int64_t k0, int64_t kc, float* panel) {
      for (int j = 0; j < nr; ++j) {
        const float* b = B + (n0 + j) * ldb + k0;
        for (int64_t k = 0; k < kc; ++k) panel[k * kGemmPanel + j] = b[k];
      }
    }, C, ldc, M, N, K);
    return;
  }
  if (backend == GemmBackend::Blas) {
    // Column panels of C (weight rows) over the pool, one single-threaded BLAS call each.
    const int64_t panel = std::max<int64_t>(16, (N + 4 * pool.size() - 1) / (4 * pool.size()));
    pool.parallel_for(0, N, [&](int64_t n0, int64_t n1) {
      blas_sgemm_nt(A, lda, B + n0 * ldb, ldb, C + n0, ldc, M, n1 - n0, K);
    }, {ThreadPool::Schedule::Dynamic, panel});
    return;
  }
  const auto kernel = ops().gemm_nt;
  if (M >= N) {
    pool.parallel_for(0, M, [&](int64_t m0, int64_t m1) {
      kernel(A + m0 * lda, lda, B, ldb, C + m0 * ldc, ldc, m1 - m0, N, K);
    }, {ThreadPool::Schedule::Static, 4});
  } else {
    pool.parallel_for(0, N, [&](int64_t n0, int64_t n1) {
      kernel(A, lda, B + n0 * ldb, ldb, C + n0, ldc, M, n1 - n0, K);
    }, {ThreadPool::Schedule::Static, 4});
  }
}

namespace {
// K block: a packed panel is kKBlock × 16 floats (16 KiB, in L1); kPanelGroup panels
// (64 KiB) share every pass over a block of kMBlock activation rows (48 KiB), which
// stays in L1/L2 while the group's panels use it.
constexpr int64_t kKBlock = 256;
constexpr int64_t kPanelGroup = 4;
constexpr int64_t kMBlock = 48;
thread_local AlignedBuffer t_panels;
}  // namespace

void gemm_packed(ThreadPool& pool, const float* A, int64_t lda, const PanelPacker& pack, float* C, int64_t ldc,
                 int64_t M, int64_t N, int64_t K, int64_t k_align) {
  if (M <= 0 || N <= 0) return;
  SQZ_CHECK(k_align > 0 && K % k_align == 0, "gemm_packed: K = ", K, " is not a multiple of ", k_align);
  const int64_t kb = std::max<int64_t>(k_align, kKBlock / k_align * k_align);
  const auto kernel = ops().gemm_panel;
  const auto pair_kernel = ops().gemm_panel_pair;
  const int64_t group_rows = kPanelGroup * kGemmPanel;
  pool.parallel_for(0, (N + group_rows - 1) / group_rows, [&](int64_t g0, int64_t g1) {
    const size_t need = static_cast<size_t>(kPanelGroup * kb * kGemmPanel) * sizeof(float);
    if (t_panels.size() < need) t_panels = AlignedBuffer(need);
    float* panels = t_panels.as<float>();
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t n0 = g * group_rows, n1 = std::min(N, n0 + group_rows);
      const int np = static_cast<int>((n1 - n0 + kGemmPanel - 1) / kGemmPanel);
      for (int64_t k0 = 0; k0 < K; k0 += kb) {
        const int64_t kc = std::min(kb, K - k0);
        for (int p = 0; p < np; ++p) {
          const int64_t p0 = n0 + p * kGemmPanel;
          pack(p0, static_cast<int>(std::min<int64_t>(kGemmPanel, n1 - p0)), k0, kc, panels + p * kb * kGemmPanel);
        }
        for (int64_t m0 = 0; m0 < M; m0 += kMBlock) {
          const int64_t mc = std::min(kMBlock, M - m0);
          for (int p = 0; p < np;) {
            const int64_t p0 = n0 + p * kGemmPanel;
            const float* panel = panels + p * kb * kGemmPanel;
            if (pair_kernel && p + 1 < np) {  // panel p is full when another follows it
              pair_kernel(A + m0 * lda + k0, lda, panel, panel + kb * kGemmPanel, C + m0 * ldc + p0, ldc, mc,
                          static_cast<int>(std::min<int64_t>(kGemmPanel, n1 - p0 - kGemmPanel)), kc, k0 > 0);
              p += 2;
            } else {
              kernel(A + m0 * lda + k0, lda, panel, C + m0 * ldc + p0, ldc, mc,
                     static_cast<int>(std::min<int64_t>(kGemmPanel, n1 - p0)), kc, k0 > 0);
              p += 1;
            }
          }
        }
      }
    }
  }, {ThreadPool::Schedule::Dynamic, 1});
}

void blas_sgemm_nt(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
                   int64_t N, int64_t K) {
  blas_gemm(GemmArgs<float>{.trans_b = true, .M = M, .N = N, .K = K, .A = A, .lda = lda, .B = B, .ldb = ldb, .C = C, .ldc = ldc});
}

}  // namespace squeeze::kernels::cpu
