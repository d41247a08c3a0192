// model/weights.h — a model's weights bound to the tensors of its GGUF file (no copies
// of the matrices: each QMatrix points into the mapping; only the small norm vectors
// are converted to f32).
#pragma once

#include <vector>

#include "core/aligned_buffer.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "model/tensor_table.h"
#include "quant/matmul.h"

namespace squeeze::model {

// A stack of expert matrices in one tensor (GGUF dims {cols, rows, n_expert}), bound as
// one matrix of n_expert · rows rows; expert(e) is expert e's [rows, cols] view.
struct ExpertStack {
  quant::QMatrix all;
  int64_t n_expert = 0;
  quant::QMatrix expert(int64_t e) const;
  // Rows [first, first + count) of expert e (a fused gate/up's halves); packed when `all`
  // is and the view starts a packed group.
  quant::QMatrix rows_of(int64_t e, int64_t first, int64_t count) const;
  // Every expert's rows fill whole packed groups (quant/packed.h), so `all` may be packed.
  bool packable() const;
};

// One layer's tensors (model/tensor_table.h); what the config's options and the layer's
// kind leave out is empty.
struct LayerWeights {
  std::vector<float> attn_norm;   // [n_embd] (pre-norm placements)
  quant::QMatrix wq;              // [q_dim rows, n_embd cols]
  quant::QMatrix wk;              // [kv_dim, n_embd]
  quant::QMatrix wv;              // [kv_dim, n_embd]
  std::vector<float> bq, bk, bv;  // Q/K/V biases (attn_bias)
  quant::QMatrix wqkv;            // [q_dim + 2·kv_dim, n_embd] (fused_qkv)
  std::vector<float> bqkv;        // (fused_qkv and attn_bias)
  std::vector<float> q_norm;      // [head_dim] (qk_norm)
  std::vector<float> k_norm;      // [head_dim] (qk_norm)
  quant::QMatrix attn_gate;       // [q_dim, n_embd] (attn_gate)
  std::vector<float> attn_sinks;  // [n_head] (attn_sinks)
  quant::QMatrix wo;              // [n_embd, q_dim]
  std::vector<float> bo;          // [n_embd] (attn_output_bias)
  // Gated DeltaNet (linear-attention layers)
  quant::QMatrix ssm_in_qkv, ssm_in_gate, ssm_beta, ssm_alpha, ssm_out;
  std::vector<float> ssm_conv1d, ssm_dt_bias, ssm_a, ssm_norm;
  std::vector<float> post_attn_norm;  // [n_embd] (post-norm placements)
  std::vector<float> ffn_norm;        // [n_embd] (pre-norm placements)
  quant::QMatrix w_gate;              // [n_ff, n_embd] (dense FFN layers)
  quant::QMatrix w_up;                // [n_ff, n_embd]
  quant::QMatrix w_down;              // [n_embd, n_ff]
  // Experts (MoE layers)
  quant::QMatrix router;              // [n_expert, n_embd]
  std::vector<float> router_bias;     // [n_expert] (expert_bias)
  // Per-expert biases, expert e's at e · rows (expert_bias): gate and up [n_ff_exp], down [n_embd].
  std::vector<float> gate_exps_bias, up_exps_bias, down_exps_bias;
  ExpertStack gate_exps, up_exps;     // [n_ff_exp, n_embd] each
  ExpertStack gate_up_exps;           // [2·n_ff_exp, n_embd] each: gate rows, then up (fused_gate_up_exps)
  ExpertStack down_exps;              // [n_embd, n_ff_exp] each
  std::vector<float> shexp_gate_inp;  // [n_embd]
  quant::QMatrix shexp_gate, shexp_up, shexp_down;
  std::vector<float> post_ffn_norm;  // [n_embd] (post-norm placements)
};

struct Weights {
  quant::QMatrix token_embd;  // [n_vocab, n_embd]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;
  quant::QMatrix output;  // [n_vocab, n_embd]; token_embd when tied
  std::vector<float> rope_freqs;  // [head_dim / 2] RoPE frequency divisors (rope_freq_factors)
  // The repacked copies the matrices' `packed` point into (quant/packed.h).
  std::vector<AlignedBuffer> packed_storage;
};

// Binds every tensor of the tensor table the config has (weight_tensors); the 2-D matrices
// of types with a packed kernel for the active ISA (quant::packs) are also repacked into
// packed_storage (token_embd's rows stay unpacked for the embedding lookup). Errors name the tensor whose type
// squeeze cannot compute with. The file must outlive the Weights.
Weights bind_weights(const gguf::File& file, const ModelConfig& config);

// One tensor of `file` bound as a matrix (no copy), or read as f32 values (norm vectors);
// errors name the tensor whose type squeeze cannot compute with.
quant::QMatrix bind_matrix(const gguf::File& file, const std::string& name);
std::vector<float> read_f32(const gguf::File& file, const std::string& name);

// Row `row` of a matrix as f32 (embedding lookup). out holds m.cols floats.
void dequantize_row(const quant::QMatrix& m, int64_t row, float* out);

}  // namespace squeeze::model
