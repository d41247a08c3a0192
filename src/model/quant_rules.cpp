// model/quant_rules.cpp — per-tensor type rules of the quantization presets.
#include "model/quant_rules.h"

#include <cctype>
#include <charconv>

namespace squeeze::model {

std::string upper_ascii(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

using gguf::GgmlType;

namespace {

// general.file_type (llama_ftype) of a file that is mostly one type; the K-quants' are
// llama.cpp's "_S" presets (mostly Q4_K / Q5_K).
struct MostlyType {
  GgmlType type;
  uint32_t file_type;
};
constexpr MostlyType kMostlyFileTypes[] = {
    {GgmlType::F32, 0},   {GgmlType::F16, 1},   {GgmlType::Q4_0, 2},  {GgmlType::Q4_1, 3},
    {GgmlType::Q8_0, 7},  {GgmlType::Q5_0, 8},  {GgmlType::Q5_1, 9},  {GgmlType::Q4_K, 14},
    {GgmlType::Q5_K, 16}, {GgmlType::Q6_K, 18}, {GgmlType::BF16, 32},
};

}  // namespace

uint32_t mostly_file_type(GgmlType t) {
  for (const MostlyType& m : kMostlyFileTypes)
    if (m.type == t) return m.file_type;
  return 0;
}

std::optional<QuantPreset> find_quant_preset(std::string_view name_in) {
  const std::string name = upper_ascii(name_in);
  if (name == "Q4_K_M") return QuantPreset{name, GgmlType::Q4_K, GgmlType::Q6_K, true, 15};
  if (name == "Q5_K_M") return QuantPreset{name, GgmlType::Q5_K, GgmlType::Q6_K, true, 17};
  if (name == "Q4_K_S") return QuantPreset{name, GgmlType::Q4_K, GgmlType::Q6_K, false, 14};
  if (name == "Q5_K_S") return QuantPreset{name, GgmlType::Q5_K, GgmlType::Q6_K, false, 16};
  if (name == "Q4_0") return QuantPreset{name, GgmlType::Q4_0, GgmlType::Q6_K, false, 2};
  if (name == "Q4_1") return QuantPreset{name, GgmlType::Q4_1, GgmlType::Q6_K, false, 3};
  if (name == "Q5_0") return QuantPreset{name, GgmlType::Q5_0, GgmlType::Q6_K, false, 8};
  if (name == "Q5_1") return QuantPreset{name, GgmlType::Q5_1, GgmlType::Q6_K, false, 9};
  if (name == "Q6_K") return QuantPreset{name, GgmlType::Q6_K, GgmlType::Q6_K, false, 18};
  // llama.cpp's MOSTLY_MXFP4_MOE (gpt-oss's release format): experts MXFP4, the rest Q8_0.
  if (name == "MXFP4_MOE") return QuantPreset{name, GgmlType::Q8_0, GgmlType::Q8_0, false, 38, GgmlType::MXFP4};
  if (auto t = gguf::ggml_type_from_name(name)) return QuantPreset{name, *t, *t, false, mostly_file_type(*t)};
  return std::nullopt;
}

bool more_bits_layer(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

GgmlType fit_row_type(GgmlType t, int64_t row, RowFallback policy) {
  const auto info = gguf::ggml_type_info(t);
  if (row % info.block_size == 0) return t;
  if (policy == RowFallback::computable) {
    const bool is_quant = info.block_size > 1;
    return is_quant && row % 32 == 0 ? GgmlType::Q8_0 : (is_quant ? GgmlType::F16 : t);
  }
  GgmlType fallback = GgmlType::F16;
  switch (t) {
    case GgmlType::Q4_K: fallback = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: fallback = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: fallback = GgmlType::Q8_0; break;
    default: break;
  }
  return fallback == GgmlType::F16 ? fallback : fit_row_type(fallback, row, policy);
}

int64_t layer_of(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (!name.starts_with(kPrefix)) return -1;
  const char* begin = name.data() + kPrefix.size();
  const char* end = name.data() + name.size();
  int64_t layer = -1;
  const auto [ptr, ec] = std::from_chars(begin, end, layer);
  if (ec != std::errc() || ptr == begin || ptr == end || *ptr != '.') return -1;
  return layer;
}

bool is_output_head(const TensorRole& t) {
  return t.name == "output.weight" || (t.tied_output && t.name == "token_embd.weight");
}

GgmlType preset_tensor_type(const QuantPreset& p, const TensorRole& t) {
  // Routers stay F32 as llama.cpp keeps them: a few KB per layer that pick every expert;
  // biases too, gpt-oss's per-expert [n_ff_exp, n_expert] ones included.
  if (t.n_dims < 2 || t.name.find("_norm") != std::string_view::npos || t.name.ends_with(".ffn_gate_inp.weight") ||
      t.name.ends_with(".bias"))
    return GgmlType::F32;
  if (is_output_head(t)) return p.output;
  if (p.experts && t.n_dims == 3) return *p.experts;
  if (p.more_bits_rule && t.layer >= 0 && more_bits_layer(t.layer, t.n_layer) &&
      (t.name.ends_with(".attn_v.weight") || t.name.ends_with(".ffn_down.weight") ||
       t.name.ends_with(".ffn_down_exps.weight")))
    return GgmlType::Q6_K;
  return p.base;
}

FittedType fitted_preset_type(const QuantPreset& p, const TensorRole& t) {
  const GgmlType want = preset_tensor_type(p, t);
  const GgmlType got = fit_row_type(want, t.row_length, RowFallback::computable);
  if (got == want) return {got, {}};
  return {got, std::string(t.name) + ": " + std::string(gguf::ggml_type_info(want).name) + " → " +
                   std::string(gguf::ggml_type_info(got).name) + " (row " + std::to_string(t.row_length) + ")"};
}

}  // namespace squeeze::model
