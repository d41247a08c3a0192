// kernels/cpu/parallel.h — multithreaded f32 GEMV/GEMM over the active kernel table,
// with the BLAS (OpenBLAS) taking large GEMMs where it is faster than our tile.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace squeeze::kernels::cpu {

// y[rows] = A[rows, cols] · x, rows split across the pool.
void gemv(ThreadPool& pool, const float* A, int64_t lda, const float* x, float* y, int64_t rows, int64_t cols);

enum class GemmBackend { Auto, Own, Blas };

// C[M, N] = A[M, K] · B[N, K]^T. Auto sends products of >= kBlasMinFlops to the BLAS
// (measured faster there, see docs/benchmarks.md) and smaller ones to our kernel.
void gemm_nt(ThreadPool& pool, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
             int64_t M, int64_t N, int64_t K, GemmBackend backend = GemmBackend::Auto);

inline constexpr double kBlasMinFlops = 2.0 * 64 * 64 * 64;

// One single-threaded BLAS call: C[M, N] = A[M, K] · B[N, K]^T. squeeze threads BLAS work
// through its own pool (OpenBLAS is kept at one thread, so two pools never fight over
// the cores); call this from inside a pool job.
void blas_sgemm_nt(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
                   int64_t N, int64_t K);


}  // namespace squeeze::kernels::cpu
