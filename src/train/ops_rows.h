// train/ops_rows.h — helpers shared by the ops files (not part of the ops API): shape
// checks and row-parallel loops over the tape's pool.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "core/thread_pool.h"
#include "train/tape.h"

namespace squeeze::train::detail {

template <typename T>
void check_same(const Tape<T>& t, Var a, Var b, const char* op) {
  SQZ_CHECK(t.rows(a) == t.rows(b) && t.cols(a) == t.cols(b), op, ": shapes [", t.rows(a), ", ", t.cols(a), "] and [",
            t.rows(b), ", ", t.cols(b), "] differ");
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
