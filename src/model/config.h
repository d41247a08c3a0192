// model/config.h — the architecture of a model squeeze runs: shapes, RoPE, the
// local/global layer pattern, and the per-architecture options of the one forward pass
// (model/forward.cpp): norm placement, QK-norm, FFN activation, embedding and attention
// scales, embedding norm, attention output gate, NoPE global layers, tied head, logit
// scale and soft-cap. Validation, parameter counts, tensor shapes, and the
// built-in named configs (glimmer-30b is the published Glimmer-30B shape).
//
// An architecture is data: the Arch values (model/arch.h) differ only in these fields
// (set_arch_defaults). The GGUF loader fills a ModelConfig from metadata (`llama.*`,
// `glimmer.*`, `gemma3.*`, `muse-glimmer.*` keys) and checks each tensor against the tensor
// table (model/tensor_table.h); the planner sizes memory from it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/arch.h"

namespace squeeze::model {

// RoPE pairing: `normal` rotates adjacent pairs (x0,x1) (llama GGUFs), `neox` rotates
// (x_i, x_{i+d/2}) (GPT-NeoX, Gemma, Qwen).
enum class RopeType { normal, neox };
const char* rope_type_name(RopeType t);

// Where a block's RMSNorms sit around attention and the FFN (f = the sublayer):
//   pre:  x + f(norm(x))             llama, glimmer   (attn_norm, ffn_norm)
//   post: x + norm'(f(x))            OLMo 2           (post_attention_norm, post_ffw_norm)
//   both: x + norm'(f(norm(x)))      Gemma 2 / 3      (all four)
enum class NormPlacement { pre, post, both };
const char* norm_placement_name(NormPlacement p);

// Gated FFN: down(act(gate(h)) · up(h)); silu = SwiGLU (llama), gelu_tanh = GeGLU with
// the tanh approximation (Gemma), swiglu_oai = gpt-oss's clamped SwiGLU:
// g = min(gate, 7), u = clamp(up, −7, 7), (u + 1) · g · σ(1.702 g).
enum class FfnActivation { silu, gelu_tanh, swiglu_oai };
const char* ffn_activation_name(FfnActivation a);

// What a layer mixes its tokens with, and what its feed-forward sublayer is: attention or
// linear attention (Gated DeltaNet, Qwen3.5), a dense gated FFN or routed experts.
enum class Mixer : uint8_t { attention, linear_attention };
enum class Ffn : uint8_t { dense, moe };
struct LayerKind {
  Mixer mixer = Mixer::attention;
  Ffn ffn = Ffn::dense;
  bool operator==(const LayerKind&) const = default;
};

struct ModelConfig {
  std::string name;  // for messages: "glimmer-30b", a file name, ...
  Arch arch = Arch::glimmer;
  int64_t n_layer = 0;
  int64_t n_embd = 0;     // hidden size
  int64_t n_head = 0;     // query heads
  int64_t n_head_kv = 0;  // key/value heads (GQA: divides n_head)
  int64_t head_dim = 0;   // need not equal n_embd / n_head
  int64_t n_ff = 0;       // gated-FFN intermediate size
  int64_t n_vocab = 0;
  float rms_eps = 1e-5f;
  float rope_base_global = 10000.0f;
  float rope_base_local = 10000.0f;  // local (sliding-window) layers
  RopeType rope_type = RopeType::normal;
  // RoPE scaling as llama.cpp stores it: positions × rope_freq_scale (`rope.scaling.type`
  // linear: 1 / factor), and per-pair frequency divisors in the `rope_freqs` tensor
  // (Llama 3.x's scaling, precomputed by the converter).
  float rope_freq_scale = 1.0f;
  bool rope_freq_factors = false;
  // YaRN (gpt-oss; model-families.md §5) as transformers computes it: per pair i, the
  // frequency blends θ^(−2i/d) and θ^(−2i/d)/factor by a ramp over the correction range
  // [corr(beta_fast), corr(beta_slow)] (floored/ceiled when yarn_truncate), and cos/sin are
  // scaled by the attention factor (0: 0.1·ln(factor) + 1). yarn_factor 0: no YaRN.
  float yarn_factor = 0.0f;
  int64_t yarn_original_context = 0;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  float yarn_attn_factor = 0.0f;
  bool yarn_truncate = true;
  int64_t sliding_window = 0;  // tokens a local layer sees; 0 = no local layers
  std::vector<bool> is_local;  // per layer; size n_layer
  bool tied_output = false;    // output head shares token_embd
  int64_t n_ctx = 0;           // context length the model supports

  // Architecture options (set_arch_defaults gives each arch's values).
  NormPlacement norm_placement = NormPlacement::pre;
  bool qk_norm = false;  // per-head RMSNorm of q and k (attn_q_norm / attn_k_norm, [head_dim]) before RoPE
  FfnActivation ffn_activation = FfnActivation::silu;
  float embd_scale = 1.0f;        // token embeddings are multiplied by this (Gemma: sqrt(n_embd))
  float attn_scale = 0.0f;        // attention score scale; 0 = 1/sqrt(head_dim)
  float final_logit_softcap = 0;  // > 0: logits = cap · tanh(logits / cap) (Gemma 2); 0 = none
  // Muse Glimmer's options (all off elsewhere):
  bool embd_norm = false;    // token embeddings RMS-normalised (no weight) before layer 0
  bool attn_gate = false;    // attn ⊙ sigmoid(attn_gate · attention pre-norm output) before attn_output
  float post_norm_eps = 0;   // eps of the post-norms; 0 = rms_eps
  bool nope_global = false;  // global layers apply no RoPE (local layers still do)
  float logit_scale = 1.0f;  // logits × this, before the soft-cap

  // Layer kinds and tensor layouts of the families to come (model/tensor_table.h holds
  // their tensors; forward_support_error says what the forward pass runs yet).
  std::vector<LayerKind> layer_kinds;  // per layer; empty: every layer attention + dense FFN
  bool attn_bias = false;              // Q/K/V biases (Qwen2, gpt-oss)
  bool attn_output_bias = false;       // output projection bias (gpt-oss)
  bool fused_qkv = false;              // one attn_qkv [n_embd, q_dim + 2·kv_dim] instead of attn_q/k/v
  bool attn_sinks = false;             // a sink logit per query head (gpt-oss)
  // The pre-FFN norm is stored as post_attention_norm, not ffn_norm (gpt-oss, Qwen3.5).
  bool ffn_norm_post_attention_name = false;
  bool expert_bias = false;            // router and expert gate/up/down biases (gpt-oss)
  int64_t n_expert = 0;                // experts of an Ffn::moe layer
  int64_t n_expert_used = 0;           // experts each token is routed to
  int64_t n_ff_exp = 0;                // an expert's intermediate size
  int64_t n_ff_shexp = 0;              // the shared expert's intermediate size; 0 = none
  // The selected experts' gates divided by their sum (Qwen3-MoE's norm_topk_prob; GGUF
  // `{arch}.expert_weights_norm`, absent = true, as llama.cpp always renormalises qwen3moe).
  bool expert_weights_norm = true;
  bool fused_gate_up_exps = false;     // ffn_gate_up_exps instead of ffn_gate_exps + ffn_up_exps
  int64_t ssm_conv_kernel = 0;         // Gated DeltaNet: short causal conv taps
  int64_t ssm_state_size = 0;          //   d_k = d_v
  int64_t ssm_group_count = 0;         //   key heads
  int64_t ssm_time_step_rank = 0;      //   value heads

  int64_t n_local_layers() const;
  int64_t n_global_layers() const { return n_layer - n_local_layers(); }
  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  float effective_attn_scale() const;  // attn_scale, or 1/sqrt(head_dim) when 0
  // YaRN: the per-pair frequency divisors (head_dim / 2 of them) and the factor cos/sin are
  // multiplied by; empty and 1 without YaRN.
  std::vector<float> yarn_divisors() const;
  float yarn_mscale() const;
  float effective_post_norm_eps() const { return post_norm_eps > 0 ? post_norm_eps : rms_eps; }
  bool uses_rope(int64_t layer) const { return !nope_global || is_local[static_cast<size_t>(layer)]; }
  LayerKind layer_kind(int64_t layer) const {
    return layer_kinds.empty() ? LayerKind{} : layer_kinds[static_cast<size_t>(layer)];
  }
  bool has_layer_kind(Mixer m) const;
  bool has_layer_kind(Ffn f) const;
  int64_t ssm_value_dim() const { return ssm_time_step_rank * ssm_state_size; }
  int64_t ssm_conv_dim() const { return 2 * ssm_group_count * ssm_state_size + ssm_value_dim(); }

  // Throws squeeze::Error naming the config and the first bad field.
  void validate() const;
  // True when the options are llama's (pre-norm, SwiGLU, no QK-norm, unit scales, no
  // soft-cap). (What the trainer implements: train::training_support_error.)
  bool has_llama_options() const;
};

// Sets `arch` and the options that architecture implies, for the current shape (the
// embedding scale of gemma3 depends on n_embd, so call after setting it):
//   llama, glimmer: pre-norm, SwiGLU, RoPE normal, no QK-norm, unit embedding scale;
//   gemma3: pre+post norms, QK-norm, GeGLU (tanh), RoPE NeoX, embeddings × sqrt(n_embd),
//           scores × 1/sqrt(head_dim) (1/sqrt(n_embd/n_head) for the 62-layer 27B, as
//           llama.cpp), tied head, local RoPE base 10000, global 1e6, pattern of 6;
//   qwen2: llama's options with RoPE NeoX and Q/K/V biases;
//   qwen3: llama's options with RoPE NeoX and QK-norm;
//   qwen3moe: qwen3's (its layer kinds, dense or experts, are the caller's: GGUF files say it
//           by which layers hold a router);
//   gpt-oss: pre-norm (the pre-FFN norm named post_attention_norm), RoPE NeoX, Q/K/V and
//           output biases, sinks, router and expert biases, clamped SwiGLU, [L G] pattern,
//           YaRN untruncated; no QK-norm;
//   muse-glimmer: pre+post norms (post eps 1e-8), QK-norm (the Q scale lives in the q-norm
//           weights), SwiGLU, RoPE normal on local layers only (NoPE global), embedding
//           RMSNorm, sigmoid attention output gate, untied head, soft-cap 20, logit scale
//           1/sqrt(n_embd/256), global layers every 4th counted back from the last.
// Shapes, window and pattern are left to the caller except gemma3's pattern and bases.
void set_arch_defaults(ModelConfig& c, Arch arch);

// Layer patterns. period_pattern(n, p): layer i is local unless it is the last of its
// period (i % p == p - 1), e.g. p = 4 gives [L L L G] repeated. p = 1 (or 0): all global.
std::vector<bool> period_pattern(int64_t n_layer, int64_t period);
std::vector<bool> all_global_pattern(int64_t n_layer);
// Muse Glimmer's: layer i is global when (n_layer - 1 - i) % period == 0, so the last
// layer is always global (52 layers, period 4: layers 3, 7, ..., 51).
std::vector<bool> period_pattern_from_last(int64_t n_layer, int64_t period);
// "LLLG LLLG ..." compressed as "[L L L G] x 13" when periodic; for messages.
std::string describe_pattern(const std::vector<bool>& is_local);

// Built-in configs: "glimmer-30b" (the published shape), "glimmer-1b", "glimmer-tiny" (tests:
// window 16 < typical prompts, GQA 2), "llama-1b" (TinyLlama-1.1B's shape, all global),
// "smollm2-135m" (SmolLM2-135M's llama shape), "gemma3-270m" (Gemma 3 270M's shape),
// "gemma3-tiny" (tests: gemma3 options, 12 layers [L×5 G]×2, window 16, head_dim 32),
// "muse-glimmer-30b" (the released Muse Glimmer 30B text model),
// "muse-glimmer-tiny" (tests: muse-glimmer options, 6 layers, window 8).
ModelConfig builtin_config(std::string_view name);  // error listing the names if unknown
std::vector<std::string> builtin_config_names();

}  // namespace squeeze::model
