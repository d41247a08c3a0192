// quantize/plan.cpp — per-tensor type plans: preset rules, overrides, row fallbacks.
#include "quantize/plan.h"

#include <map>

#include "core/error.h"
#include "model/quant_rules.h"
#include "quant/quantize.h"
#include "quant/traits.h"
#include "model/tensor_table.h"

namespace squeeze::quantize {
namespace {

// The presets `squeeze quantize` accepts as TYPE (a subset of model/quant_rules.h's:
// those whose every type squeeze computes with).
constexpr const char* kPresets[] = {"Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q6_K", "Q8_0", "Q5_1",
                                    "Q5_0",   "Q4_1",   "Q4_0",   "F16",    "BF16", "F32"};

std::string type_name(GgmlType t) { return std::string(gguf::ggml_type_info(t).name); }

// Fits `t` to the tensor's row length, noting a fallback.
GgmlType fit(TensorPlan& tp, GgmlType t) {
  const GgmlType fitted = model::fit_row_type(t, tp.src->row_length(), model::RowFallback::computable);
  if (fitted != t)
    tp.note = "row " + std::to_string(tp.src->row_length()) + " not a multiple of " + type_name(t) + "'s " +
              std::to_string(gguf::ggml_type_info(t).block_size) + "-block: " + type_name(fitted);
  return fitted;
}

}  // namespace

int64_t SourceTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

SourceModel source_from_file(const gguf::File& f) {
  SourceModel m;
  int64_t max_layer = -1;
  bool has_output = false;
  for (const auto& t : f.tensors()) {
    m.tensors.push_back({.name = t.name, .dims = t.dims(), .type = t.type, .info = &t});
    max_layer = std::max(max_layer, model::layer_of(t.name));
    has_output = has_output || t.name == "output.weight";
  }
  m.n_layer = max_layer + 1;
  if (auto arch = f.metadata().get_string_opt("general.architecture"))
    if (auto n = f.metadata().get_u32_opt(*arch + ".block_count")) m.n_layer = *n;
  m.tied_output = !has_output;
  return m;
}

SourceModel source_from_config(const model::ModelConfig& c) {
  c.validate();
  SourceModel m;
  for (const auto& t : model::weight_tensors(c))
    m.tensors.push_back({.name = t.name, .dims = t.dims()});
  m.n_layer = c.n_layer;
  m.tied_output = c.tied_output;
  return m;
}

GgmlType parse_tensor_type(const std::string& text, const std::string& what) {
  const auto t = gguf::ggml_type_from_name(text);
  if (!t || !quant::is_supported(*t) || *t == GgmlType::Q8_K)
    fail(what, ": '", text, "' is not a type squeeze can store weights in (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, "
         "Q5_1, MXFP4, Q4_K, Q5_K, Q6_K)");
  return *t;
}

TypeOverride parse_override(const std::string& text) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    fail("--tensor-type '", text, "': expected REGEX=TYPE, e.g. attn_v=Q8_0");
  TypeOverride o;
  o.pattern = text.substr(0, eq);
  try {
    o.regex = std::regex(o.pattern);
  } catch (const std::regex_error& e) {
    fail("--tensor-type '", text, "': bad regular expression (", e.what(), ")");
  }
  o.type = parse_tensor_type(text.substr(eq + 1), "--tensor-type '" + text + "'");
  return o;
}

int64_t TensorPlan::bytes() const {
  const auto info = gguf::ggml_type_info(type);
  return src->n_rows() * (src->row_length() / info.block_size) * info.block_bytes;
}

int64_t Plan::bytes() const {
  int64_t b = 0;
  for (const auto& t : tensors) b += t.bytes();
  return b;
}

int64_t Plan::n_elements() const {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.src->n_elements();
  return n;
}

double Plan::bpw() const { return n_elements() ? 8.0 * static_cast<double>(bytes()) / static_cast<double>(n_elements()) : 0.0; }

std::string preset_names() {
  std::string s;
  for (const char* p : kPresets) s += (s.empty() ? "" : ", ") + std::string(p);
  return s;
}

Plan make_plan(const SourceModel& m, const PlanOptions& options) {
  model::QuantPreset preset;
  Plan plan;
  if (options.dynamic) {
    preset = *model::find_quant_preset("Q4_K");
  } else {
    bool known = false;
    for (const char* p : kPresets) known = known || options.preset == p;
    if (!known) {
      const auto as_preset = model::find_quant_preset(options.preset);
      known = as_preset && gguf::ggml_type_from_name(options.preset) &&
              parse_tensor_type(options.preset, "TYPE") == as_preset->base;  // a pure supported type: Q4_K, Q5_K
    }
    SQZ_CHECK(known, "unknown quantization type '", options.preset, "' (one of ", preset_names(),
              "; or a pure type Q4_K, Q5_K)");
    preset = *model::find_quant_preset(options.preset);
    plan.name = preset.name;
    plan.file_type = preset.file_type;
  }
  for (const SourceTensor& s : m.tensors) {
    TensorPlan tp{.src = &s};
    const model::TensorRole role{.name = s.name, .row_length = s.row_length(), .n_dims = s.n_dims(),
                                 .layer = model::layer_of(s.name), .n_layer = m.n_layer, .tied_output = m.tied_output};
    GgmlType t = model::preset_tensor_type(preset, role);
    const bool matrix = t != GgmlType::F32 || preset.base == GgmlType::F32;
    tp.fixed = !options.dynamic || !matrix || s.n_dims() < 2;
    // Overrides, most specific last so it wins: the output head and embedding flags,
    // then --tensor-type patterns (first matching pattern).
    if (matrix && s.n_dims() >= 2) {
      if (options.token_embd_type && s.name == "token_embd.weight") t = *options.token_embd_type, tp.fixed = true, tp.note = "--token-embedding-type";
      if (options.output_type && model::is_output_head(role) && s.name == (m.tied_output ? "token_embd.weight" : "output.weight"))
        t = *options.output_type, tp.fixed = true, tp.note = "--output-tensor-type";
      for (const auto& o : options.overrides)
        if (std::regex_search(s.name, o.regex)) {
          t = o.type, tp.fixed = true, tp.note = "--tensor-type " + o.pattern;
          break;
        }
    }
    tp.type = fit(tp, t);
    // A free tensor whose row fits no K-quant stays free: the dynamic planner measures
    // every candidate whose block divides the row (Q8_0, F16, ...) and may spend bits on
    // it; `type` is only its starting point (plan_dynamic fixes it there when no
    // candidate fits at all).
    if (!tp.fixed && tp.type != t) tp.note = "row " + std::to_string(s.row_length()) + ": no K-quant fits";
    tp.copy = s.info != nullptr && tp.type == s.type;
    plan.tensors.push_back(std::move(tp));
  }
  return plan;
}

uint32_t mostly_file_type(const Plan& plan) {
  std::map<GgmlType, int64_t> elements;
  for (const auto& t : plan.tensors) elements[t.type] += t.src->n_elements();
  GgmlType best = GgmlType::F32;
  int64_t most = -1;
  for (const auto& [t, n] : elements)
    if (n > most) best = t, most = n;
  return model::mostly_file_type(best);
}

void source_rows_f32(ThreadPool& pool, const SourceTensor& src, int64_t row0, int64_t n, float* dst) {
  SQZ_CHECK(src.info != nullptr, "tensor '", src.name, "' has no data (planning from a config)");
  SQZ_CHECK(row0 >= 0 && n >= 0 && row0 + n <= src.n_rows(), "rows out of range of '", src.name, "'");
  const int64_t rb = static_cast<int64_t>(src.info->row_bytes());
  quant::dequantize_rows(pool, src.type, src.info->data.data() + row0 * rb, n, src.row_length(), dst);
}

std::optional<std::vector<float>> importance_for(const quant::ImportanceMatrix* im, const SourceTensor& src) {
  if (!im) return std::nullopt;
  auto mean = im->mean_sq(src.name);
  if (mean && static_cast<int64_t>(mean->size()) != src.row_length())
    fail("imatrix entry '", src.name, "' has ", mean->size(), " columns but the tensor's rows have ", src.row_length(),
         " (an imatrix of another model?)");
  return mean;
}

}  // namespace squeeze::quantize
