// quantize/plan.h — which type each tensor of a model gets: a preset's rules
// (model/quant_rules.h), then the user's overrides (--output-tensor-type,
// --token-embedding-type, --tensor-type REGEX=TYPE), then the fit of the row length to
// the type's block (falling back to Q8_0, then F16, and saying so). The dynamic planner
// (quantize/dynamic.h) starts from the same tensor list and fills in the free choices.
//
// A plan knows every tensor's exact byte size, so `--dry-run` reports the size of the
// file `squeeze quantize` would write, with or without the data (a ModelConfig alone).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/ggml_type.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "quant/imatrix.h"

namespace squeeze::quantize {

using gguf::GgmlType;

// One tensor of the source: shape, and its bytes when planning from a file.
struct SourceTensor {
  std::string name = {};
  std::vector<int64_t> dims = {};       // ne order: dims[0] = row length
  GgmlType type = GgmlType::F32;        // of the source data
  const gguf::TensorInfo* info = nullptr;  // null for a config (no data)
  int64_t row_length() const { return dims.empty() ? 1 : dims[0]; }
  int64_t n_elements() const;
  int64_t n_rows() const { return n_elements() / row_length(); }
  int n_dims() const { return static_cast<int>(dims.size()); }
};

struct SourceModel {
  std::vector<SourceTensor> tensors;
  int64_t n_layer = 0;
  bool tied_output = false;  // no output.weight: token_embd is the output head
};
// The tensors of a GGUF file (n_layer from <arch>.block_count, else from blk.N names).
SourceModel source_from_file(const gguf::File& f);
// The tensors a model of this config has (weight_tensors), as F32 sources without data.
SourceModel source_from_config(const model::ModelConfig& c);

struct TypeOverride {
  std::string pattern;  // as given, for messages
  std::regex regex;     // matched with regex_search against the tensor name
  GgmlType type;
};
// "REGEX=TYPE" → an override; errors name the text.
TypeOverride parse_override(const std::string& text);
// A type a user may ask for a tensor ("q6_k", "F16", ...): one squeeze can compute with.
GgmlType parse_tensor_type(const std::string& text, const std::string& what);

struct PlanOptions {
  std::string preset = "";                 // "Q4_K_M", ... (ignored when dynamic)
  bool dynamic = false;
  std::optional<GgmlType> output_type = std::nullopt;     // --output-tensor-type
  std::optional<GgmlType> token_embd_type = std::nullopt; // --token-embedding-type
  std::vector<TypeOverride> overrides = {};     // --tensor-type, first match wins
};

struct TensorPlan {
  const SourceTensor* src = nullptr;
  GgmlType type = GgmlType::F32;
  bool fixed = true;       // dynamic plans: false = the allocator chooses the type
  bool copy = false;       // the source bytes are written unchanged (same type)
  std::string note = {};   // why the type differs from the rule ("row 200 ∤ 256 → Q8_0", "override")
  double est_error = -1;   // dynamic: the measured relative error of `type` (-1 unknown)
  bool sampled = false;    // est_error measured on a sample of rows
  int64_t bytes() const;
};

struct Plan {
  std::string name;                 // "Q4_K_M", "dynamic 5.30 bpw"
  uint32_t file_type = 0;           // general.file_type to write
  std::vector<TensorPlan> tensors;  // in source order
  int64_t bytes() const;
  int64_t n_elements() const;
  double bpw() const;
};

// The names of the presets `squeeze quantize` takes, for messages and --help.
std::string preset_names();
// Preset plan (or, when options.dynamic, the fixed part of a dynamic plan: norms,
// overrides fixed, every other matrix `fixed = false` at Q4_K, or its row fallback, for now).
// The plan points into `m`, which must outlive it.
Plan make_plan(const SourceModel& m, const PlanOptions& options);
Plan make_plan(SourceModel&& m, const PlanOptions& options) = delete;
// general.file_type of a plan: the "mostly <type>" file type of the type that holds
// the most elements (dynamic plans have no preset name).
uint32_t mostly_file_type(const Plan& plan);

// rows [row0, row0 + n) of a source tensor with data, as f32 (dst[n, row_length]).
void source_rows_f32(ThreadPool& pool, const SourceTensor& src, int64_t row0, int64_t n, float* dst);
// The imatrix's per-column mean x² for the tensor; nullopt when it has no entry (or no
// imatrix). Throws when the entry's column count differs from the row length.
std::optional<std::vector<float>> importance_for(const quant::ImportanceMatrix* im, const SourceTensor& src);

}  // namespace squeeze::quantize
