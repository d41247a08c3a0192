// train/glimmer_forward.cpp — see glimmer_forward.h. Shapes: n = B·S tokens, E = n_embd,
// F = n_ff, H·D = q_dim, Hk·D = kv_dim, V = n_vocab.
#include "train/glimmer_forward.h"

#include "core/error.h"
#include "train/ops.h"

namespace squeeze::train {

std::string training_support_error(const model::ModelConfig& c) {
  std::string missing;
  if (c.rope_type != model::RopeType::normal) missing += " NeoX RoPE";
  if (c.ffn_activation != model::FfnActivation::silu) missing += std::string(" ") + model::ffn_activation_name(c.ffn_activation) + " FFN";
  if (missing.empty()) return {};
  return "training does not implement the " + c.arch + " option(s):" + missing;
}

namespace {

// One attention block: x + post_norm(W_o · (attention ⊙ sigmoid gate)), from the pre-norm's output.
template <typename T>
Var attention_block(Tape<T>& t, const model::ModelConfig& c, const ParamLeaf& leaf, Var x, int64_t il, int64_t S) {
  const std::string b = "blk." + std::to_string(il) + ".";
  const bool local = c.is_local[static_cast<size_t>(il)];
  const bool pre = c.norm_placement != model::NormPlacement::post, post = c.norm_placement != model::NormPlacement::pre;
  // Without a pre-norm the sublayer reads the residual stream itself.
  const Var in = pre ? rmsnorm(t, x, leaf(b + "attn_norm.weight"), c.rms_eps) : x;       // [n, E]
  Var q = matmul_nt(t, in, leaf(b + "attn_q.weight"));                                    // [n, H·D]
  Var k = matmul_nt(t, in, leaf(b + "attn_k.weight"));                                    // [n, Hk·D]
  const Var v = matmul_nt(t, in, leaf(b + "attn_v.weight"));                              // [n, Hk·D]
  if (c.qk_norm) {  // each head's row of D values, before RoPE
    q = rmsnorm_heads(t, q, leaf(b + "attn_q_norm.weight"), c.rms_eps);
    k = rmsnorm_heads(t, k, leaf(b + "attn_k_norm.weight"), c.rms_eps);
  }
  if (c.uses_rope(il)) {  // NoPE global layers (Muse Glimmer) skip it
    const float base = local ? c.rope_base_local : c.rope_base_global;
    q = rope(t, q, {.n_heads = c.n_head, .head_dim = c.head_dim, .seq_len = S, .freq_base = base});
    k = rope(t, k, {.n_heads = c.n_head_kv, .head_dim = c.head_dim, .seq_len = S, .freq_base = base});
  }
  Var a = attention(t, q, k, v,
                    {.n_heads = c.n_head, .n_kv_heads = c.n_head_kv, .head_dim = c.head_dim, .seq_len = S,
                     .window = local ? c.sliding_window : 0, .scale = c.attn_scale});      // [n, H·D]
  if (c.attn_gate) a = sigmoid_gate(t, a, matmul_nt(t, in, leaf(b + "attn_gate.weight")));
  Var o = matmul_nt(t, a, leaf(b + "attn_output.weight"));                                // [n, E]
  if (post) o = rmsnorm(t, o, leaf(b + "post_attention_norm.weight"), c.effective_post_norm_eps());
  return add(t, x, o);
}

// One feed-forward block: x + post_norm(W_down · (silu(W_gate·h) ⊙ W_up·h)).
template <typename T>
Var ffn_block(Tape<T>& t, const model::ModelConfig& c, const ParamLeaf& leaf, Var x, int64_t il,
              const FfnOverride<T>* ffn) {
  const std::string b = "blk." + std::to_string(il) + ".";
  const bool pre = c.norm_placement != model::NormPlacement::post, post = c.norm_placement != model::NormPlacement::pre;
  const Var in = pre ? rmsnorm(t, x, leaf(b + "ffn_norm.weight"), c.rms_eps) : x;
  Var o;
  if (ffn) {
    o = (*ffn)(t, in, il);
  } else {
    const Var g = swiglu(t, matmul_nt(t, in, leaf(b + "ffn_gate.weight")), matmul_nt(t, in, leaf(b + "ffn_up.weight")));  // [n, F]
    o = matmul_nt(t, g, leaf(b + "ffn_down.weight"));
  }
  if (post) o = rmsnorm(t, o, leaf(b + "post_ffw_norm.weight"), c.effective_post_norm_eps());
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

  const Var embd = leaf("token_embd.weight");
  Var x = embedding(t, embd, tokens);                                                     // [n, E]
  if (c.embd_scale != 1.0f) x = scale(t, x, c.embd_scale);
  if (c.embd_norm) x = rmsnorm_unweighted(t, x, c.rms_eps);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    x = attention_block(t, c, leaf, x, il, S);
    x = ffn_block(t, c, leaf, x, il, ffn);
  }
  const Var h = rmsnorm(t, x, leaf("output_norm.weight"), c.rms_eps);
  Var logits = matmul_nt(t, h, c.tied_output ? embd : leaf("output.weight"));             // [n, V]
  if (c.logit_scale != 1.0f) logits = scale(t, logits, c.logit_scale);
  if (c.final_logit_softcap > 0) logits = softcap(t, logits, c.final_logit_softcap);
  return logits;
}

template Var record_forward<float>(Tape<float>&, const model::ModelConfig&, const ParamLeaf&, std::span<const int32_t>,
                                   int64_t, const FfnOverride<float>*);
template Var record_forward<double>(Tape<double>&, const model::ModelConfig&, const ParamLeaf&,
                                    std::span<const int32_t>, int64_t, const FfnOverride<double>*);

}  // namespace squeeze::train
