// model/weights.h — a model's weights bound to the tensors of its GGUF file (no copies
// of the matrices: each QMatrix points into the mapping; only the small norm vectors
// are converted to f32).
#pragma once

#include <vector>

#include "core/aligned_buffer.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "quant/matmul.h"

namespace squeeze::model {

// Norm vectors the config's options leave out are empty.
struct LayerWeights {
  std::vector<float> attn_norm;  // [n_embd] (pre-norm placements)
  quant::QMatrix wq;             // [q_dim rows, n_embd cols]
  quant::QMatrix wk;             // [kv_dim, n_embd]
  quant::QMatrix wv;             // [kv_dim, n_embd]
  std::vector<float> q_norm;     // [head_dim] (qk_norm)
  std::vector<float> k_norm;     // [head_dim] (qk_norm)
  quant::QMatrix attn_gate;      // [q_dim, n_embd] (attn_gate)
  quant::QMatrix wo;             // [n_embd, q_dim]
  std::vector<float> post_attn_norm;  // [n_embd] (post-norm placements)
  std::vector<float> ffn_norm;   // [n_embd] (pre-norm placements)
  quant::QMatrix w_gate;         // [n_ff, n_embd]
  quant::QMatrix w_up;           // [n_ff, n_embd]
  quant::QMatrix w_down;         // [n_embd, n_ff]
  std::vector<float> post_ffn_norm;   // [n_embd] (post-norm placements)
};

struct Weights {
  quant::QMatrix token_embd;     // [n_vocab, n_embd]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;
  quant::QMatrix output;         // [n_vocab, n_embd]; token_embd when tied
  // The repacked copies the matrices' `packed` point into (quant/packed.h).
  std::vector<AlignedBuffer> packed_storage;
};

// Binds every tensor weight_tensors(config) names; the projection matrices of types with a
// packed kernel for the active ISA (quant::packs) are also repacked into packed_storage
// (token_embd's rows stay unpacked for the embedding lookup). Errors name the tensor whose type
// squeeze cannot compute with. The file must outlive the Weights.
Weights bind_weights(const gguf::File& file, const ModelConfig& config);

// One tensor of `file` bound as a matrix (no copy), or read as f32 values (norm vectors);
// errors name the tensor whose type squeeze cannot compute with.
quant::QMatrix bind_matrix(const gguf::File& file, const std::string& name);
std::vector<float> read_f32(const gguf::File& file, const std::string& name);

// Row `row` of a matrix as f32 (embedding lookup). out holds m.cols floats.
void dequantize_row(const quant::QMatrix& m, int64_t row, float* out);

}  // namespace squeeze::model
