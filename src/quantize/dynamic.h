// quantize/dynamic.h — the dynamic planner: spend a bit budget where it lowers the
// (importance-weighted) reconstruction error most.
//
// 1. Measure: for every free tensor (make_plan's fixed = false) and every candidate type
//    that fits its rows, quantize and dequantize the tensor (or an evenly spaced sample
//    of its rows when it is larger than max_sample_elements) and take the relative
//    error e = sqrt(Σ w·err² / Σ w·x²), w = the imatrix's mean x² of the column (1
//    without an imatrix). The tensor's cost under that type is n_elements · e²: the
//    squared error it adds, in units of its own signal, summed over its elements.
// 2. Allocate: on each tensor's lower convex hull of (bits, cost), start every tensor at
//    its cheapest type and repeatedly take the upgrade with the largest cost decrease
//    per extra bit that still fits the budget (the greedy solution of the Lagrangian
//    relaxation; exact up to the last upgrade that does not fit), then spend what is left
//    on the single change that lowers the cost most, while one fits.
// The budget is bits for the whole file (fixed tensors — norms, overrides, fallbacks —
// included), target_bpw · total elements or 8 · target_bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "quant/imatrix.h"
#include "quantize/plan.h"

namespace squeeze::quantize {

struct DynamicOptions {
  double target_bpw = 0;     // one of target_bpw / target_bytes is set
  int64_t target_bytes = 0;
  // Q4_0 is left out by default: it has Q4_K's size and (without its sub-block scales and
  // mins) a larger error on every tensor we measured; measuring it costs a full pass.
  std::vector<GgmlType> candidates = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::F16};
  int64_t max_sample_elements = int64_t{1} << 20;  // per tensor, for the measurement
  const quant::ImportanceMatrix* imatrix = nullptr;
  ThreadPool* pool = nullptr;  // null: default_thread_pool()
  bool progress = true;        // a progress bar on stderr while measuring
};

// One measured option of a tensor.
struct TypeError {
  GgmlType type;
  double bits = 0;   // tensor bits under this type
  double error = 0;  // relative error
};

// Measures the candidates of one tensor (src with data): errors per fitting candidate.
std::vector<TypeError> measure_tensor(const SourceTensor& src, const DynamicOptions& o, bool* sampled);

// The measured options of every free tensor of a plan (step 1), reusable for several
// budgets (step 2).
struct Measurements {
  std::vector<size_t> free;                    // indices into plan.tensors
  std::vector<std::vector<TypeError>> options; // per free tensor
  std::vector<bool> sampled;
};
Measurements measure_plan(const Plan& plan, const DynamicOptions& o);
// Step 2 for the target in `o` (measurements of this plan's tensors).
void allocate(Plan& plan, const Measurements& m, const DynamicOptions& o);

// Both steps. Fills in the free tensors of `plan` (from make_plan with options.dynamic) so that
// plan.bpw() is as close under the target as whole-tensor choices allow. Throws when even
// the cheapest choices exceed the target by more than 2%.
void plan_dynamic(Plan& plan, const DynamicOptions& o);

}  // namespace squeeze::quantize
