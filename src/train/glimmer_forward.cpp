// train/glimmer_forward.cpp — see glimmer_forward.h. Shapes: n = B·S tokens, E = n_embd,
// F = n_ff, H·D = q_dim, Hk·D = kv_dim, V = n_vocab.
#include "train/glimmer_forward.h"

#include "core/error.h"
#include "model/tensor_table.h"
#include "train/ops.h"

namespace squeeze::train {

std::string training_support_error(const model::ModelConfig& c) {
  std::string missing;
  if (c.rope_type != model::RopeType::normal) missing += " NeoX RoPE";
  if (c.ffn_activation != model::FfnActivation::silu)
    missing += std::string(" ") + model::ffn_activation_name(c.ffn_activation) + " FFN";
  if (c.has_layer_kind(model::Mixer::linear_attention)) missing += " linear attention";
  if (c.has_layer_kind(model::Ffn::moe)) missing += " MoE layers";
  if (c.attn_bias || c.attn_output_bias) missing += " attention biases";
  if (c.fused_qkv) missing += " fused Q/K/V";
  if (c.attn_sinks) missing += " attention sinks";
  if (c.rope_freq_scale != 1.0f || c.rope_freq_factors) missing += " scaled RoPE";
  if (missing.empty()) return {};
  return "training does not implement the " + std::string(model::arch_name(c.arch)) + " option(s):" + missing;
}

namespace {

using model::TensorId;

// One attention block: x + post_norm(W_o · (attention ⊙ sigmoid gate)), from the pre-norm's output.
template <typename T>
Var attention_block(Tape<T>& t, const model::ModelConfig& c, const ParamLeaf& leaf, Var x, int64_t il, int64_t S) {
  const auto w = [&](TensorId id) { return leaf(model::tensor_name(id, il)); };
  const bool local = c.is_local[static_cast<size_t>(il)];
  const bool pre = c.norm_placement != model::NormPlacement::post, post = c.norm_placement != model::NormPlacement::pre;
  // Without a pre-norm the sublayer reads the residual stream itself.
  const Var in = pre ? rmsnorm(t, x, w(TensorId::attn_norm), c.rms_eps) : x;  // [n, E]
  Var q = matmul_nt(t, in, w(TensorId::attn_q));                              // [n, H·D]
  Var k = matmul_nt(t, in, w(TensorId::attn_k));                              // [n, Hk·D]
  const Var v = matmul_nt(t, in, w(TensorId::attn_v));                        // [n, Hk·D]
  if (c.qk_norm) {  // each head's row of D values, before RoPE
    q = rmsnorm_heads(t, q, w(TensorId::attn_q_norm), c.rms_eps);
    k = rmsnorm_heads(t, k, w(TensorId::attn_k_norm), c.rms_eps);
  }
  if (c.uses_rope(il)) {  // NoPE global layers (Muse Glimmer) skip it
    const float base = local ? c.rope_base_local : c.rope_base_global;
    q = rope(t, q, {.n_heads = c.n_head, .head_dim = c.head_dim, .seq_len = S, .freq_base = base});
    k = rope(t, k, {.n_heads = c.n_head_kv, .head_dim = c.head_dim, .seq_len = S, .freq_base = base});
  }
  Var a = attention(t, q, k, v,
                    {.n_heads = c.n_head,
                     .n_kv_heads = c.n_head_kv,
                     .head_dim = c.head_dim,
                     .seq_len = S,
                     .window = local ? c.sliding_window : 0,
                     .scale = c.attn_scale});  // [n, H·D]
  if (c.attn_gate) a = sigmoid_gate(t, a, matmul_nt(t, in, w(TensorId::attn_gate)));
  Var o = matmul_nt(t, a, w(TensorId::attn_output));  // [n, E]
  if (post) o = rmsnorm(t, o, w(TensorId::post_attention_norm), c.effective_post_norm_eps());
  return add(t, x, o);
}

// One feed-forward block: x + post_norm(W_down · (silu(W_gate·h) ⊙ W_up·h)).
template <typename T>
Var ffn_block(Tape<T>& t, const model::ModelConfig& c, const ParamLeaf& leaf, Var x, int64_t il,
              const FfnOverride<T>* ffn) {
  const auto w = [&](TensorId id) { return leaf(model::tensor_name(id, il)); };
  const bool pre = c.norm_placement != model::NormPlacement::post, post = c.norm_placement != model::NormPlacement::pre;
  const Var in = pre ? rmsnorm(t, x, w(TensorId::ffn_norm), c.rms_eps) : x;
  Var o;
  if (ffn) {
    o = (*ffn)(t, in, il);
  } else {
    const Var g = swiglu(t, matmul_nt(t, in, w(TensorId::ffn_gate)), matmul_nt(t, in, w(TensorId::ffn_up)));  // [n, F]
    o = matmul_nt(t, g, w(TensorId::ffn_down));
  }
  if (post) o = rmsnorm(t, o, w(TensorId::post_ffw_norm), c.effective_post_norm_eps());
  return add(t, x, o);
}

}  // namespace

template <typename T>
Var record_forward(Tape<T>& t, const model::ModelConfig& c, const ParamLeaf& leaf, std::span<const int32_t> tokens,
                   int64_t S, const FfnOverride<T>* ffn) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  SQZ_CHECK(S > 0 && n > 0 && n % S == 0, "forward: ", n, " tokens are not whole sequences of ", S);
  SQZ_CHECK(S <= c.n_ctx, "forward: sequences of ", S, " tokens exceed the context length ", c.n_ctx);
  const std::string unsupported = training_support_error(c);
  SQZ_CHECK(unsupported.empty(), unsupported);

  const Var embd = leaf(model::tensor_name(TensorId::token_embd));
  Var x = embedding(t, embd, tokens);  // [n, E]
  if (c.embd_scale != 1.0f) x = scale(t, x, c.embd_scale);
  if (c.embd_norm) x = rmsnorm_unweighted(t, x, c.rms_eps);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    x = attention_block(t, c, leaf, x, il, S);
    x = ffn_block(t, c, leaf, x, il, ffn);
  }
  const Var h = rmsnorm(t, x, leaf(model::tensor_name(TensorId::output_norm)), c.rms_eps);
  Var logits = matmul_nt(t, h, c.tied_output ? embd : leaf(model::tensor_name(TensorId::output)));  // [n, V]
  if (c.logit_scale != 1.0f) logits = scale(t, logits, c.logit_scale);
  if (c.final_logit_softcap > 0) logits = softcap(t, logits, c.final_logit_softcap);
  return logits;
}

template Var record_forward<float>(Tape<float>&, const model::ModelConfig&, const ParamLeaf&, std::span<const int32_t>,
                                   int64_t, const FfnOverride<float>*);
template Var record_forward<double>(Tape<double>&, const model::ModelConfig&, const ParamLeaf&,
                                    std::span<const int32_t>, int64_t, const FfnOverride<double>*);

}  // namespace squeeze::train
