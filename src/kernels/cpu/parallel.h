// kernels/cpu/parallel.h — multithreaded f32 GEMV/GEMM over the active kernel table,
// with the BLAS (OpenBLAS) taking large GEMMs where it is faster than our tile.
#pragma once

#include <cstdint>
#include <functional>

#include "core/thread_pool.h"
#include "kernels/cpu/ops.h"

namespace squeeze::kernels::cpu {

// y[rows] = A[rows, cols] · x, rows split across the pool.
void gemv(ThreadPool& pool, const float* A, int64_t lda, const float* x, float* y, int64_t rows, int64_t cols);

// Own: the 4×4 dot tile (small products). Packed: gemm_packed over f32 weight rows.
// Blas: OpenBLAS, one single-threaded call per column panel (kept for comparison).
enum class GemmBackend { Auto, Own, Blas, Packed };

// C[M, N] = A[M, K] · B[N, K]^T. Auto sends products of >= kPackedMinFlops with M > 1 to
// gemm_packed (faster than the BLAS calls on these shapes, see docs/benchmarks.md) and
// smaller ones to the dot tile.
void gemm_nt(ThreadPool& pool, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
             int64_t M, int64_t N, int64_t K, GemmBackend backend = GemmBackend::Auto);

inline constexpr double kPackedMinFlops = 2.0 * 64 * 64 * 64;

// Writes weight rows [n0, n0 + nr) (nr <= kGemmPanel), columns [k0, k0 + kc), into a packed
// panel: panel[k * kGemmPanel + j] = B[n0 + j][k0 + k]. Called from pool workers.
using PanelPacker = std::function<void(int64_t n0, int nr, int64_t k0, int64_t kc, float* panel)>;

// C[M, N] = A[M, K] · B[N, K]^T with B reached only through `pack` (f32 rows, or quantized
// rows dequantized on the fly): each thread packs a group of panels one K block at a
// time (k0 a multiple of k_align, so quantized blocks are never split) and runs
// Ops::gemm_panel over all M rows. Every weight element is packed once per call.
void gemm_packed(ThreadPool& pool, const float* A, int64_t lda, const PanelPacker& pack, float* C, int64_t ldc,
                 int64_t M, int64_t N, int64_t K, int64_t k_align = 1);

// One single-threaded BLAS call: C[M, N] = A[M, K] · B[N, K]^T. squeeze threads BLAS work
// through its own pool (OpenBLAS is kept at one thread, so two pools never fight over
// the cores); call this from inside a pool job.
void blas_sgemm_nt(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
                   int64_t N, int64_t K);


}  // namespace squeeze::kernels::cpu
