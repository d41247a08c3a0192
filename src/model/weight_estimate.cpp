// model/weight_estimate.cpp — weight bytes per type preset (see memory_plan.h for the rules).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>

#include "core/error.h"
#include "gguf/ggml_type.h"
#include "model/memory_plan.h"
#include "model/quant_rules.h"
#include "model/tensor_table.h"

namespace squeeze::model {

using gguf::GgmlType;

namespace {


// "5.3", "5.3bpw" → 5.3; nullopt if the text is not a number.
std::optional<double> parse_bpw(const std::string& s) {
  std::string num = s;
  if (num.size() > 3 && num.substr(num.size() - 3) == "BPW") num.resize(num.size() - 3);
  // from_chars, not stod: the whole text, no leading space, hex float, inf or nan.
  double v = 0;
  const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v, std::chars_format::general);
  if (num.empty() || ec != std::errc() || p != num.data() + num.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

WeightEstimate estimate_weights(const ModelConfig& c, std::string_view type_name) {
  const std::string name = upper_ascii(type_name);
  const auto tensors = weight_tensors(c);
  const ParamCount params = count_params(c);
  WeightEstimate est;
  if (auto bpw = parse_bpw(name)) {
    SQZ_CHECK(*bpw > 0 && *bpw <= 32, "weight type '", type_name, "': bits per weight must be in (0, 32]");
    double bytes = 0;
    for (const auto& t : tensors) bytes += t.kind != TensorKind::matrix || t.is_vector() ? 4.0 * t.elements() : t.elements() * *bpw / 8.0;
    est.bytes = static_cast<int64_t>(std::llround(bytes));
    est.description = name + " bits per weight on every matrix, norms F32";
  } else {
    const auto p = find_quant_preset(name);
    SQZ_CHECK(p.has_value(), "unknown weight type '", type_name,
              "' (presets Q4_K_M, Q4_K_S, Q5_K_M, Q5_K_S, Q6_K, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16, F32; "
              "any ggml type name; "
              "or bits per weight like 4.85)");
    const auto base_info = gguf::ggml_type_info(p->base);
    SQZ_CHECK(base_info.block_size > 0 && p->base != GgmlType::Q8_K && p->base != GgmlType::I8 &&
                  p->base != GgmlType::I16 && p->base != GgmlType::I32 && p->base != GgmlType::I64,
              "weight type '", type_name, "' is not a weight storage type");
    std::map<std::string, int> count;  // type name → tensors
    for (const auto& t : tensors) {
      const TensorRole role{.name = t.name, .row_length = t.ne0, .n_dims = static_cast<int>(t.dims().size()), .layer = t.layer,
                            .n_layer = c.n_layer, .tied_output = c.tied_output};
      const GgmlType ty = fit_row_type(preset_tensor_type(*p, role), t.ne0, RowFallback::llama_cpp);
      const auto info = gguf::ggml_type_info(ty);
      est.bytes += t.ne1 * t.ne2 * (t.ne0 / info.block_size) * info.block_bytes;
      ++count[std::string(info.name)];
    }
    std::vector<std::pair<std::string, int>> order(count.begin(), count.end());
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    est.description = name + ":";
    for (size_t i = 0; i < order.size(); ++i) {
      est.description += (i ? ", " : " ") + std::to_string(order[i].second) + " x " + order[i].first;
    }
  }
  est.bpw = static_cast<double>(est.bytes) * 8.0 / static_cast<double>(params.total);
  return est;
}

}  // namespace squeeze::model
