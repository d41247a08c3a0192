// convert/hf_arch.h — what `squeeze convert` knows about each Hugging Face architecture
// it reads (LlamaForCausalLM, Gemma3ForCausalLM, MuseGlimmerForConditionalGeneration's
// text model): config.json → ModelConfig, and every checkpoint tensor → the GGUF tensor
// llama.cpp's converter writes for it (name, row permutation, norm shift), plus the
// tensors that converter synthesises (Muse Glimmer's QK-norm weights).
//
// The transformations, as llama.cpp's converter applies them:
//   - llama, muse-glimmer: Q and K rows go from transformers' rotate-half layout (pair i
//     is (x_i, x_{i+D/2})) to interleaved pairs (x_{2i}, x_{2i+1}), per head, so RoPE
//     "normal" applies; gemma3 keeps rotate-half (RoPE NeoX).
//   - gemma3: every RMSNorm weight w is stored as 1 + w (Gemma's norms scale by 1 + w).
//   - muse-glimmer: the four per-layer norms are 1 + w; the final norm is plain. Its
//     scale-less QK-norm becomes attn_q_norm = qk_scale_factor and attn_k_norm = 1.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "safetensors/checkpoint.h"

namespace squeeze::convert {

struct TensorPlan {
  std::string gguf_name;
  std::vector<int64_t> dims;   // GGUF order: dims[0] is the row length
  std::string hf_name;         // the source tensor; empty when synthesised
  int64_t rope_heads = 0;      // > 0: rows regrouped from rotate-half to interleaved pairs, per head of rows / rope_heads
  float shift = 0.0f;          // added to every value (norm weights stored as 1 + w)
  float fill = 0.0f;           // the value of every element of a synthesised tensor
  std::vector<float> values = {};  // a synthesised tensor's elements, when they differ (Llama 3's RoPE divisors)
  // A stack of experts from one source tensor per expert, in expert-id order (hf_name is
  // the first); empty: hf_name holds every row (a fused [E, rows, cols] source included).
  std::vector<std::string> expert_sources = {};
  // gpt-oss's experts are stored x·W, [E, in, out], gate and up interleaved along out: a
  // strided gather. With rows_per_expert = dims[1] of a 3-D tensor (1 otherwise), element j of
  // GGUF row R = e·rows_per_expert + r is source element e·slab + offset + r·row_step + j·col_step.
  struct Gather {
    int64_t slab = 0;  // 0: no gather
    int64_t offset = 0, row_step = 0, col_step = 0;
  } gather = {};
  // An OpenAI MXFP4 checkpoint's `*_blocks` (hf_name, uint8 [E, out, in/32, 16]) and
  // `*_scales` (uint8 [E, out, in/32]), repacked into GGUF MXFP4 rows: GGUF row r of expert e
  // is source row mxfp4_row_offset + r·mxfp4_row_step of expert e (gate: even, up: odd rows).
  std::string mxfp4_scales = {};
  int64_t mxfp4_row_offset = 0, mxfp4_row_step = 1;
  bool is_norm() const { return dims.size() == 1; }
  // Vectors and biases (gpt-oss's per-expert biases are 2-D) stay F32, as llama.cpp writes them.
  bool stays_f32() const { return is_norm() || gguf_name.ends_with(".bias"); }
  int64_t rows() const { return (dims.size() > 1 ? dims[1] : 1) * (dims.size() > 2 ? dims[2] : 1); }
};

struct ConvertPlan {
  std::string hf_arch;              // config.json "architectures"[0]
  model::ModelConfig config;
  std::vector<TensorPlan> tensors;  // in the order they are written
  std::vector<std::string> skipped; // checkpoint tensors left out (vision tower, RoPE caches, ...)
  std::vector<float> rope_freqs;    // Llama 3.x RoPE scaling: the per-pair divisors llama.cpp stores
};

// The architectures convert reads, for messages.
std::string supported_hf_archs();

// A config.json as squeeze reads it: the architecture, the ModelConfig, and what the
// tensor mapping needs (tensor name prefix, Muse Glimmer's Q scale). `where` names the
// file in errors. For `plan` as well as conversion.
struct HfModel {
  std::string hf_arch;
  model::ModelConfig config;
  std::string tensor_prefix = "model.";
  float qk_scale = 1.0f;
  std::vector<float> rope_freqs;  // config.rope_freq_factors: the rope_freqs tensor's values
};
HfModel read_hf_config(const nlohmann::json& config_json, const std::string& where);

// Reads config.json, checks every field squeeze relies on (one-line errors naming
// config.json and the field; unsupported options such as RoPE scaling or biases are
// refused rather than ignored) and maps the checkpoint's tensors, checking each one's
// shape and that every needed tensor is present.
ConvertPlan plan_conversion(const safetensors::Checkpoint& checkpoint);

// Row `r` of the GGUF tensor comes from this row of the HF tensor (rope_heads as above).
int64_t source_row(const TensorPlan& t, int64_t r);

}  // namespace squeeze::convert
