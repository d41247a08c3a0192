// tests/kernels/kernel_test_util.h — random inputs and error bounds for kernel tests.
#pragma once

#include <cmath>
#include <random>
#include <vector>

namespace squeeze::test {

// Fresh random inputs each run (seed printed on failure through the returned value).
inline std::mt19937& rng() {
  static std::mt19937 gen(std::random_device{}());
  return gen;
}

inline std::vector<float> random_vector(int64_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng());
  return v;
}

// Unit roundoff of f32.
constexpr double kEpsF32 = 5.96e-8;

// Bound for an f32 sum of n products against the exact value: the classic
// |fl(sum) - sum| <= gamma_n * sum|a_i b_i| with gamma_n ~ n*u (Higham, Thm 3.1);
// blocked/SIMD summation only shrinks the effective n, so this holds for all variants.
inline double dot_error_bound(int64_t n, double sum_abs) { return 1.01 * static_cast<double>(n + 2) * kEpsF32 * sum_abs + 1e-30; }

inline const std::vector<int64_t>& awkward_sizes() {
  static const std::vector<int64_t> sizes{1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 255, 1000, 4097};
  return sizes;
}

}  // namespace squeeze::test
