// model/weight_estimate.cpp — weight bytes per type preset (see memory_plan.h for the rules).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "core/error.h"
#include "gguf/ggml_type.h"
#include "model/memory_plan.h"

namespace squeeze::model {

using gguf::GgmlType;

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

// llama.cpp's "use more bits" layers for Q4_K_M/Q5_K_M attn_v and ffn_down.
bool more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The type a row length can take: K-quants need rows of 256, 32-blocks rows of 32.
GgmlType fit_row(GgmlType t, int64_t row) {
  const auto info = gguf::ggml_type_info(t);
  if (row % info.block_size == 0) return t;
  GgmlType fallback = GgmlType::F16;
  switch (t) {
    case GgmlType::Q4_K: fallback = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: fallback = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: fallback = GgmlType::Q8_0; break;
    default: break;
  }
  return fallback == GgmlType::F16 ? fallback : fit_row(fallback, row);
}

struct Preset {
  GgmlType base;
  GgmlType output;               // output head (token_embd when tied)
  bool more_bits_rule = false;   // attn_v / ffn_down → Q6_K on more-bits layers
};

std::optional<Preset> preset(const std::string& name) {
  if (name == "Q4_K_M") return Preset{GgmlType::Q4_K, GgmlType::Q6_K, true};
  if (name == "Q5_K_M") return Preset{GgmlType::Q5_K, GgmlType::Q6_K, true};
  if (name == "Q4_K_S") return Preset{GgmlType::Q4_K, GgmlType::Q6_K, false};
  if (name == "Q4_0") return Preset{GgmlType::Q4_0, GgmlType::Q6_K, false};
  if (name == "Q6_K") return Preset{GgmlType::Q6_K, GgmlType::Q6_K, false};
  if (auto t = gguf::ggml_type_from_name(name)) return Preset{*t, *t, false};
  return std::nullopt;
}

// "5.3", "5.3bpw" → 5.3; nullopt if the text is not a number.
std::optional<double> parse_bpw(const std::string& s) {
  std::string num = s;
  if (num.size() > 3 && num.substr(num.size() - 3) == "BPW") num.resize(num.size() - 3);
  try {
    size_t used = 0;
    const double v = std::stod(num, &used);
    if (used == num.size()) return v;
  } catch (...) {
  }
  return std::nullopt;
}

}  // namespace

WeightEstimate estimate_weights(const ModelConfig& c, std::string_view type_name) {
  const std::string name = upper(type_name);
  const auto tensors = weight_tensors(c);
  const ParamCount params = count_params(c);
  WeightEstimate est;
  if (auto bpw = parse_bpw(name)) {
    SQZ_CHECK(*bpw > 0 && *bpw <= 32, "weight type '", type_name, "': bits per weight must be in (0, 32]");
    double bytes = 0;
    for (const auto& t : tensors) bytes += t.ne1 == 1 ? 4.0 * t.ne0 : t.elements() * *bpw / 8.0;
    est.bytes = static_cast<int64_t>(std::llround(bytes));
    est.description = name + " bits per weight on every matrix, norms F32";
  } else {
    const auto p = preset(name);
    SQZ_CHECK(p.has_value(), "unknown weight type '", type_name,
              "' (presets Q4_K_M, Q4_K_S, Q5_K_M, Q6_K, Q8_0, Q4_0, F16, BF16, F32; any ggml type name; "
              "or bits per weight like 4.85)");
    const auto base_info = gguf::ggml_type_info(p->base);
    SQZ_CHECK(base_info.block_size > 0 && p->base != GgmlType::Q8_K && p->base != GgmlType::I8 &&
                  p->base != GgmlType::I16 && p->base != GgmlType::I32 && p->base != GgmlType::I64,
              "weight type '", type_name, "' is not a weight storage type");
    std::map<std::string, int> count;  // type name → tensors
    for (const auto& t : tensors) {
      GgmlType ty = p->base;
      const bool is_output = t.name == "output.weight" || (c.tied_output && t.name == "token_embd.weight");
      if (t.ne1 == 1) {
        ty = GgmlType::F32;
      } else if (is_output) {
        ty = p->output;
      } else if (p->more_bits_rule && more_bits(t.layer, c.n_layer) &&
                 (t.name.ends_with(".attn_v.weight") || t.name.ends_with(".ffn_down.weight"))) {
        ty = GgmlType::Q6_K;
      }
      ty = fit_row(ty, t.ne0);
      const auto info = gguf::ggml_type_info(ty);
      est.bytes += t.ne1 * (t.ne0 / info.block_size) * info.block_bytes;
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
