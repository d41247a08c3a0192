// train/ops_rows.h — helpers shared by the ops files (not part of the ops API): shape
// checks and row-parallel loops over the tape's pool.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/ops.h"
#include "train/tape.h"

namespace squeeze::train::detail {

template <typename T>
void check_same(const Tape<T>& t, Var a, Var b, const char* op) {
  SQZ_CHECK(t.rows(a) == t.rows(b) && t.cols(a) == t.cols(b), op, ": shapes [", t.rows(a), ", ", t.cols(a), "] and [",
            t.rows(b), ", ", t.cols(b), "] differ");
}

// Head-sized dot and axpy of the attention ops: the SIMD kernels for float (the scalar
// loops do not vectorise their reductions), plain loops for the float64 gradient checks.
inline float head_dot(const float* a, const float* b, int64_t n) { return kernels::cpu::ops().dot(a, b, n); }
inline double head_dot(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}
inline void head_axpy(float alpha, const float* x, float* y, int64_t n) { kernels::cpu::ops().axpy(alpha, x, y, n); }
inline void head_axpy(double alpha, const double* x, double* y, int64_t n) {
  for (int64_t d = 0; d < n; ++d) y[d] += alpha * x[d];
}

// Rows in parallel, in chunks big enough to be worth a wake-up.
template <typename F>
void for_rows(ThreadPool& pool, int64_t n, int64_t width, F&& fn) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, width));
  pool.parallel_for(0, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) fn(r);
  }, {ThreadPool::Schedule::Static, grain});
}

}  // namespace squeeze::train::detail
