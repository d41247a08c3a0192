// model/quant_rules.h — the per-tensor type rules of the quantization presets (Q4_K_M,
// Q5_K_M, ...): one definition shared by the memory planner's estimate and `squeeze
// quantize` (and its --dry-run), so a plan and a written file cannot disagree.
//
// Rules (the choices of llama.cpp's llama_tensor_get_type):
//  - 1-D tensors and *_norm weights stay F32;
//  - the output head (token_embd when the output is tied) gets the preset's output type
//    (Q6_K for the 4/5/6-bit presets and Q4_0/Q4_1/Q5_0/Q5_1; the type itself for
//    Q8_0/F16/BF16/F32);
//  - Q4_K_M / Q5_K_M: attn_v and ffn_down → Q6_K on the "more bits" layers (the first
//    n/8, the last n/8 and every third in between); the rest gets the base type;
//  - Q4_K_S / Q5_K_S: our simplification, base type everywhere but the output head
//    (llama.cpp's Q4_K_S also lifts a few early attn_v/ffn_down to Q5_K);
//  - a row length that does not fit the type's block falls back (fit_row_type).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gguf/ggml_type.h"

namespace squeeze::model {

struct QuantPreset {
  std::string name;          // upper case: "Q4_K_M"
  gguf::GgmlType base;
  gguf::GgmlType output;     // output head (token_embd when tied)
  bool more_bits_rule = false;
  uint32_t file_type = 0;    // general.file_type (llama_ftype); 0 when none fits
  // Stacked expert tensors (3-D); nullopt: the base type. MXFP4_MOE's experts are MXFP4.
  std::optional<gguf::GgmlType> experts = std::nullopt;
};

// ASCII upper case ("q4_k_m" -> "Q4_K_M"), for case-insensitive type and preset names.
std::string upper_ascii(std::string_view s);

// A preset by name (any case), or any ggml type name as a "pure" preset of that type;
// nullopt when neither.
std::optional<QuantPreset> find_quant_preset(std::string_view name);

// general.file_type (llama_ftype) of a file that is mostly type `t`; 0 (all F32) when
// llama_ftype has no such value.
uint32_t mostly_file_type(gguf::GgmlType t);

// llama.cpp's use_more_bits(i, n).
bool more_bits_layer(int64_t layer, int64_t n_layer);

// What a fallback may pick for a row length that does not fit a type's block:
//  llama_cpp  — llama.cpp's chain (Q4_K→Q5_0, Q5_K→Q5_1, Q6_K→Q8_0, then F16), for
//               estimating files other tools write;
//  computable — only types squeeze has kernels for (a 32-block type → Q8_0 when the row
//               is a multiple of 32, else F16), what `squeeze quantize` writes.
enum class RowFallback { llama_cpp, computable };
// `t` if a row of `row_length` fits its block, else the fallback.
gguf::GgmlType fit_row_type(gguf::GgmlType t, int64_t row_length, RowFallback policy);

// One tensor as the rules see it.
struct TensorRole {
  std::string_view name;     // "blk.3.attn_v.weight"
  int64_t row_length = 0;    // ne[0]
  int n_dims = 2;
  int64_t layer = -1;        // block index, -1 outside blocks
  int64_t n_layer = 0;
  bool tied_output = false;  // no output.weight: token_embd is also the output head
};
// Block index of "blk.N.…", -1 for other names.
int64_t layer_of(std::string_view tensor_name);
bool is_output_head(const TensorRole& t);
// The preset's type for the tensor, before fitting the row (fit_row_type).
gguf::GgmlType preset_tensor_type(const QuantPreset& p, const TensorRole& t);

// The preset's type fitted to the row as squeeze writes files (RowFallback::computable),
// with the note a fallback leaves ("blk.0.ffn_down.weight: Q4_K → Q8_0 (row 576)"; empty
// when the preset's type fits): what `squeeze convert` and `make-model --type PRESET` write.
struct FittedType {
  gguf::GgmlType type;
  std::string fallback;
};
FittedType fitted_preset_type(const QuantPreset& p, const TensorRole& t);

}  // namespace squeeze::model
