// kernels/cpu/parallel.cpp
#include "kernels/cpu/parallel.h"

#include <algorithm>

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
  if (backend == GemmBackend::Blas || (backend == GemmBackend::Auto && flops >= kBlasMinFlops && M > 1)) {
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

void blas_sgemm_nt(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
                   int64_t N, int64_t K) {
  blas_gemm(GemmArgs<float>{.trans_b = true, .M = M, .N = N, .K = K, .A = A, .lda = lda, .B = B, .ldb = ldb, .C = C, .ldc = ldc});
}

}  // namespace squeeze::kernels::cpu
