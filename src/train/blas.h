// train/blas.h — row-major GEMM C = alpha·op(A)·op(B) + beta·C for float and double,
// through the BLAS (the products of training and their gradients).
#pragma once

#include <cstdint>

namespace squeeze::train {

struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;  // C is [M, N]; the product runs over K
  double alpha = 1.0, beta = 0.0;
  int64_t lda = 0, ldb = 0, ldc = 0;
};
void gemm(const GemmArgs& g, const float* A, const float* B, float* C);
void gemm(const GemmArgs& g, const double* A, const double* B, double* C);

}  // namespace squeeze::train
