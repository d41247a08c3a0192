// quantize/run.h — carries out a plan: quantizes the source tensors one at a time
// (dequantized to f32 in row chunks, quantized with the imatrix's importance, streamed
// into gguf::Writer, so memory stays at a chunk per tensor), prints the per-tensor table
// and the totals; or, for a dry run, only prints them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/reader.h"
#include "quant/imatrix.h"
#include "quantize/plan.h"

namespace squeeze::quantize {

struct RunOptions {
  const gguf::File* input = nullptr;       // the source file (null: a config dry run)
  std::string output_path;                  // empty: dry run
  const quant::ImportanceMatrix* imatrix = nullptr;
  std::string imatrix_path = "";            // recorded in the output's metadata
  bool allow_requantize = false;            // else a tensor already quantized (and not kept) is an error
  ThreadPool* pool = nullptr;               // null: default_thread_pool()
  std::FILE* table = stdout;                // the table and totals; null: silent
  bool progress = true;                     // progress bar on stderr
  std::vector<std::pair<std::string, gguf::Value>> extra_metadata = {};  // set in the output (added or replaced)
};

struct TensorResult {
  std::string name;
  std::vector<int64_t> dims;
  GgmlType src_type = GgmlType::F32;
  GgmlType type = GgmlType::F32;
  int64_t bytes = 0;
  double error = -1;        // relative (importance-weighted with an imatrix) error; -1 not measured
  bool error_estimated = false;  // from the dynamic planner's measurement (dry run)
  bool sampled = false;
  std::string note;
};

struct RunResult {
  std::string plan_name;
  std::vector<TensorResult> tensors;
  int64_t n_elements = 0;
  int64_t tensor_bytes = 0;   // sum of tensor data sizes
  uint64_t file_bytes = 0;    // the written file (0 on a dry run)
  double bpw = 0;             // 8 · tensor_bytes / n_elements
  // Over the quantized matrices (tensors whose error is known), weighted by elements:
  double mean_error = 0;      // Σ n·e / Σ n
  double rms_error = 0;       // sqrt(Σ n·e² / Σ n) — the dynamic planner's objective
  int requantized = 0;
};

RunResult run_plan(const Plan& plan, const RunOptions& o);

// The result as JSON text (for --report and tests).
std::string result_json(const RunResult& r);

}  // namespace squeeze::quantize
