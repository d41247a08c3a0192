// kernels/cpu/attention_kernel.h — internal: one attention task (a KV head, a tile of
// queries, a key range) as the per-ISA kernels see it. Not part of the public API.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention.h"

namespace squeeze::kernels::cpu::attn {

// Rows of a task: the group's query heads for each of its queries, row r = (query r / group,
// head kv_head * group + r % group). Row r's query sits at position pos0 + r / group and
// sees keys [max(key_begin, first_key(p)), min(key_end, p + 1)).
struct Task {
  const KvLayerView* kv = nullptr;
  int64_t kv_head = 0;
  int64_t group = 1;        // query heads per KV head
  int64_t n_q = 0;          // queries in this task
  const float* q = nullptr; // query 0, head kv_head * group; query i at q + i * q_stride
  int64_t q_stride = 0;
  int64_t pos0 = 0;
  int64_t window = 0;
  float scale = 1.0f;
  const float* sinks = nullptr;  // the group's sink logits (row r: sinks[r % group]); null: none
  int64_t key_begin = 0;
  int64_t key_end = 0;
  // finalize: out rows (same addressing as q) get acc / l. Otherwise partial gets, per
  // row, [m, l, acc[D]] unnormalised (m = -inf, l = 0 when the row saw no key).
  bool finalize = true;
  float* out = nullptr;
  int64_t out_stride = 0;
  float* partial = nullptr;

  int64_t rows() const { return n_q * group; }
  int64_t first_key(int64_t pos) const { return window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0; }
  int64_t row_lo(int64_t r) const {
    const int64_t lo = first_key(pos0 + r / group);
    return lo > key_begin ? lo : key_begin;
  }
  int64_t row_hi(int64_t r) const {
    const int64_t hi = pos0 + r / group + 1;
    return hi < key_end ? hi : key_end;
  }
  const float* q_row(int64_t r) const { return q + (r / group) * q_stride + (r % group) * kv->head_dim; }
  float* out_row(int64_t r) const { return out + (r / group) * out_stride + (r % group) * kv->head_dim; }
};

using Kernel = void (*)(const Task& task);

// What a finished row's accumulator is multiplied by: 1 / l, or with a sink s,
// e^(m−M) / (l·e^(m−M) + e^(s−M)) with M = max(m, s) so that neither exponent overflows.
// (Compiled for the baseline ISA, in attention.cpp, like the rest of a task's plumbing.)
float finish_scale(const Task& t, int64_t r, float m, float l);
// The same for merged split partials: the sink joins the merged max M and sum L.
float merged_scale(const float* sink, float M, float L);

// A task kernel's per-thread scratch: rows × (2·head_dim + tile + 2) + tile × head_dim floats
// (queries scaled, accumulators, scores, the widened K/V tile, running max and sum) and
// three index arrays of `rows`; the tile rows start zeroed, so padding stays finite.
// The ISA-independent parts of a task live in attention.cpp, compiled for the baseline
// ISA: the ISA kernels' translation units instantiate no library templates, because a
// std::vector member emitted there with AVX-512 could be the copy the linker keeps for
// every caller, AVX2-only CPUs included.
struct TaskScratch {
  float *qs, *acc, *s, *tile, *m, *l;
  int64_t *active, *lo, *hi;
};
// The scratch of this thread for task t, initialised: queries scaled by t.scale,
// accumulators 0, running max −inf and sum 0, each row's key range [lo, hi).
TaskScratch begin_task(const Task& t, int64_t tile);
// Rows whose key range meets the tile [k0, k0 + n), in row order, into w.active; their count.
int64_t active_rows(const TaskScratch& w, int64_t rows, int64_t k0, int64_t n);
// Writes the task's rows: acc / l to t.out, or [m, l, acc] to t.partial.
void finish_task(const Task& t, const TaskScratch& w);

// Online-softmax kernels. The scalar one handles any head_dim; AVX2 needs head_dim % 8 == 0,
// AVX-512 head_dim % 16 == 0.
void run_task_scalar(const Task& task);
void run_task_avx2(const Task& task);
void run_task_avx512(const Task& task);

}  // namespace squeeze::kernels::cpu::attn
