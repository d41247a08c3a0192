// train/blas.cpp — see blas.h.
#include "train/blas.h"

#include <cblas.h>

namespace squeeze::train {

namespace {
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }
int i(int64_t v) { return static_cast<int>(v); }
}  // namespace

void gemm(const GemmArgs& g, const float* A, const float* B, float* C) {
  if (g.M <= 0 || g.N <= 0) return;
  cblas_sgemm(CblasRowMajor, tr(g.trans_a), tr(g.trans_b), i(g.M), i(g.N), i(g.K), static_cast<float>(g.alpha), A,
              i(g.lda), B, i(g.ldb), static_cast<float>(g.beta), C, i(g.ldc));
}

void gemm(const GemmArgs& g, const double* A, const double* B, double* C) {
  if (g.M <= 0 || g.N <= 0) return;
  cblas_dgemm(CblasRowMajor, tr(g.trans_a), tr(g.trans_b), i(g.M), i(g.N), i(g.K), g.alpha, A, i(g.lda), B, i(g.ldb),
              g.beta, C, i(g.ldc));
}

}  // namespace squeeze::train
