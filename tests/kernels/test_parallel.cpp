// tests/kernels/test_parallel.cpp — threaded GEMV/GEMM (own tile, packed panels and BLAS) vs float64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <thread>

#include "kernel_test_util.h"
#include "core/cpu_features.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/parallel.h"

namespace squeeze::kernels::cpu {
namespace {

TEST(Parallel, GemvMatchesFloat64) {
  ThreadPool pool(2);
  for (int64_t rows : {1, 15, 16, 17, 257}) {
    const int64_t cols = 4097;
    auto A = test::random_vector(rows * cols), x = test::random_vector(cols);
    std::vector<float> y(static_cast<size_t>(rows));
    gemv(pool, A.data(), cols, x.data(), y.data(), rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
      double exact = 0, sum_abs = 0;
      for (int64_t c = 0; c < cols; ++c) {
        exact += static_cast<double>(A[r * cols + c]) * x[c];
        sum_abs += std::fabs(static_cast<double>(A[r * cols + c]) * x[c]);
      }
      EXPECT_LE(std::fabs(y[r] - exact), test::dot_error_bound(cols, sum_abs));
    }
  }
}

TEST(Parallel, GemmBackendsMatchFloat64) {
  ThreadPool pool(2);
  for (auto backend : {GemmBackend::Own, GemmBackend::Blas, GemmBackend::Packed, GemmBackend::Auto}) {
    // K past 256 crosses the packed GEMM's K blocks; N past 64 its panel groups.
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 33, 70}, {37, 5, 129}, {64, 96, 256}, {130, 70, 33},
                           {53, 131, 600}, {7, 200, 513}}) {
      auto A = test::random_vector(M * K), B = test::random_vector(N * K);
      std::vector<float> C(static_cast<size_t>(M * N));
      gemm_nt(pool, A.data(), K, B.data(), K, C.data(), N, M, N, K, backend);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double exact = 0, sum_abs = 0;
          for (int64_t k = 0; k < K; ++k) {
            exact += static_cast<double>(A[m * K + k]) * B[n * K + k];
            sum_abs += std::fabs(static_cast<double>(A[m * K + k]) * B[n * K + k]);
          }
          ASSERT_LE(std::fabs(C[m * N + n] - exact), test::dot_error_bound(K, sum_abs))
              << "backend " << int(backend) << " " << M << "x" << N << "x" << K;
        }
    }
  }
}

}  // namespace
}  // namespace squeeze::kernels::cpu

namespace squeeze::kernels::cpu {
namespace {

// OpenBLAS's environment is set before main, on the main thread: ctest runs this test in a
// process of its own, where nothing has touched BLAS yet, so the variables can only be
// there if they were set at start-up (not lazily by the first call, which may come from a
// pool worker while other threads read the environment). Then the first call itself, from
// a worker thread, loads the library and computes correctly.
TEST(Blas, EnvironmentIsSetBeforeAnyCall) {
  EXPECT_NE(std::getenv("OPENBLAS_NUM_THREADS"), nullptr);
  if (cpu_features().has_avx2_fma()) {
    EXPECT_NE(std::getenv("OPENBLAS_CORETYPE"), nullptr);
  }
  const float a[2] = {1, 2}, b[2] = {3, 4};
  float c = 0;
  std::thread worker([&] { blas_gemm(GemmArgs<float>{.trans_b = true, .M = 1, .N = 1, .K = 2, .A = a, .lda = 2,
                                                     .B = b, .ldb = 2, .C = &c, .ldc = 1}); });
  worker.join();
  EXPECT_EQ(c, 11.0f);
}

}  // namespace
}  // namespace squeeze::kernels::cpu
