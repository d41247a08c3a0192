// model/tensor_table.h — every weight tensor of every architecture, described once: one
// table of rows (what the tensor is, its GGUF name, its shape from the config, and when a
// layer has it). Weight binding (model/weights.cpp), the GGUF shape check
// (model/gguf_config.cpp), the random-model writer, the quantization planner, the
// trainer's parameters and convert's Hugging Face mapping all walk weight_tensors(), so
// adding a tensor to an architecture touches this table and the forward pass only.
//
// The table already holds the layouts the next families need (a row is present only when
// the config asks for it, so the current files are unchanged): layers of different kinds
// in one model (attention or linear attention; dense or expert FFN), 3-D stacked expert
// tensors, Q/K/V and output biases, fused Q/K/V and fused expert gate/up, tied or separate
// output. Names as llama.cpp writes them (gguf-py constants, src/llama-arch.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"

namespace squeeze::model {

// What a tensor is to the forward pass. Two ids may share a GGUF name on layers of
// different kinds (Gated DeltaNet's output gate is "attn_gate" too), never on one layer.
// clang-format off
enum class TensorId : uint8_t {
  token_embd,
  // attention / linear attention sublayer
  attn_norm,
  attn_q, attn_q_bias, attn_k, attn_k_bias, attn_v, attn_v_bias,
  attn_qkv, attn_qkv_bias,                // fused Q/K/V: rows [q | k | v]
  attn_q_norm, attn_k_norm,
  attn_gate,                              // Muse Glimmer's sigmoid output gate
  attn_sinks,                             // gpt-oss: one logit per query head
  attn_output, attn_output_bias,
  ssm_in_qkv,                             // Gated DeltaNet: in_proj_qkv, rows [q | k | v]
  ssm_in_gate,                            // in_proj_z, the output gate
  ssm_conv1d, ssm_dt_bias, ssm_a, ssm_beta, ssm_alpha, ssm_norm, ssm_out,
  post_attention_norm,
  // FFN sublayer
  ffn_norm,
  ffn_norm_post_attention_name,           // the same norm stored as post_attention_norm (gpt-oss)
  ffn_gate, ffn_up, ffn_down,             // dense
  ffn_gate_inp,                           // router [n_embd, n_expert]
  ffn_gate_inp_bias,                      // router bias [n_expert] (gpt-oss)
  ffn_gate_exps, ffn_up_exps,             // stacked experts [n_embd, n_ff_exp, n_expert]
  ffn_gate_up_exps,                       // fused: gate rows first, then up
  ffn_down_exps,                          // [n_ff_exp, n_embd, n_expert]
  ffn_gate_exps_bias, ffn_up_exps_bias,   // per-expert biases [n_ff_exp, n_expert] (gpt-oss)
  ffn_down_exps_bias,                     // [n_embd, n_expert]
  ffn_gate_inp_shexp, ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp,  // shared expert
  post_ffw_norm,
  // head
  output_norm,
  output,
  rope_freqs,                             // Llama 3.x: per-pair RoPE frequency divisors [head_dim / 2]
  count
};
// clang-format on

// How a tensor is stored and initialised: matrices take the weight type; norms, biases and
// other parameters stay F32 vectors (or small F32 arrays).
enum class TensorKind : uint8_t { matrix, norm, bias, param };

// Which part of the model a tensor belongs to (parameter counts, messages).
enum class TensorBlock : uint8_t { embedding, mixer, ffn, head };

// A row of the table. shape gives GGUF's dims (ne0 = row length, ne1 = rows, ne2 =
// experts); present says whether layer `il` has it (il = -1 for the model-level tensors).
struct TensorRow {
  TensorId id;
  std::string_view base;    // "attn_q"
  std::string_view suffix;  // "weight", "bias", or empty (ssm_a has none)
  TensorKind kind;
  TensorBlock block;
  bool per_layer;
  std::array<int64_t, 3> (*shape)(const ModelConfig&);
  bool (*present)(const ModelConfig&, int64_t il);
};

// The rows in file order (per layer, then the head); rows[i].id == TensorId(i).
std::span<const TensorRow> tensor_rows();
const TensorRow& tensor_row(TensorId id);

// "blk.3.attn_q.weight", "token_embd.weight", "blk.0.ssm_a".
std::string tensor_name(TensorId id, int64_t layer = -1);

// One weight tensor as GGUF stores it: ne0 is the row length (input features).
struct TensorShape {
  std::string name;               // "token_embd.weight", "blk.3.attn_q.weight", ...
  int64_t ne0 = 0;                // row length
  int64_t ne1 = 1;                // rows (1 for vectors)
  int64_t layer = -1;             // block index, -1 for non-block tensors
  int64_t ne2 = 1;                // experts (1 unless stacked)
  TensorId id = TensorId::count;  // count: not a model tensor (a drafter's)
  TensorKind kind = TensorKind::matrix;
  int64_t elements() const { return ne0 * ne1 * ne2; }
  bool is_vector() const { return ne1 == 1 && ne2 == 1; }
  std::vector<int64_t> dims() const;  // GGUF dims: {ne0}, {ne0, ne1} or {ne0, ne1, ne2}
};

// Every tensor of the model in file order: the table's rows present for the config, layer
// by layer (no "output.weight" when tied).
std::vector<TensorShape> weight_tensors(const ModelConfig& c);

struct ParamCount {
  int64_t embedding = 0;            // token_embd
  int64_t output = 0;               // output head (0 when tied)
  int64_t attention_per_layer = 0;  // mixer tensors but norms (Wq, Wk, Wv, Wo, gate, biases), averaged over layers
  int64_t ffn_per_layer = 0;        // FFN tensors but norms (gate, up, down, router, experts), averaged over layers
  int64_t norms = 0;                // all RMSNorm weights (including QK and post norms)
  int64_t total = 0;
};
ParamCount count_params(const ModelConfig& c);

}  // namespace squeeze::model
