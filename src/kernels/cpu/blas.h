// kernels/cpu/blas.h — the BLAS (OpenBLAS), loaded on first use with the right kernels.
//
// Debian's OpenBLAS 0.3.21 does not recognise some current CPUs (e.g. the virtual "Intel
// Xeon Processor" of this project's machines) and falls back to its SSE3 "Prescott"
// kernels, 5x slower than its AVX2/AVX-512 ones. The library reads OPENBLAS_CORETYPE once,
// when it is loaded, so squeeze loads it itself (dlopen) after setting that variable from
// its own CPU detection (SkylakeX with AVX-512, Haswell with AVX2+FMA), unless the user set
// it. OpenBLAS is kept at one thread: squeeze spreads BLAS calls over its own pool. The
// variables are set once, before main on the main thread (setenv is not thread-safe, and
// the first BLAS call may come from a pool worker); loading happens at first use.
#pragma once

#include <cstdint>

namespace squeeze::kernels::cpu {

// Row-major C[M,N] = alpha * op(A)[M,K] · op(B)[K,N] + beta * C, single-threaded.
// op(X) = X or Xᵀ as trans_a / trans_b say (leading dimensions as stored).
template <typename T>
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  T alpha = 1;
  const T* A = nullptr;
  int64_t lda = 0;
  const T* B = nullptr;
  int64_t ldb = 0;
  T beta = 0;
  T* C = nullptr;
  int64_t ldc = 0;
};
void blas_gemm(const GemmArgs<float>& a);   // sgemm
void blas_gemm(const GemmArgs<double>& a);  // dgemm (float64 references, training checks)

// "OpenBLAS 0.3.21 ... (core Haswell)" for reports; loads the library if needed.
const char* blas_name();

}  // namespace squeeze::kernels::cpu
