// model/tensor_table.cpp — see tensor_table.h. Shapes are GGUF dims {ne0 = row length,
// ne1 = rows, ne2 = experts}: E = n_embd, H·D = q_dim, Hk·D = kv_dim, F = n_ff,
// I = n_ff_exp, X = n_expert, V = n_vocab.
#include "model/tensor_table.h"

#include "core/error.h"

namespace squeeze::model {

namespace {

using Shape = std::array<int64_t, 3>;

bool pre_norm(const ModelConfig& c) { return c.norm_placement != NormPlacement::post; }
bool post_norm(const ModelConfig& c) { return c.norm_placement != NormPlacement::pre; }
bool attention(const ModelConfig& c, int64_t il) { return c.layer_kind(il).mixer == Mixer::attention; }
bool linear(const ModelConfig& c, int64_t il) { return c.layer_kind(il).mixer == Mixer::linear_attention; }
bool dense(const ModelConfig& c, int64_t il) { return c.layer_kind(il).ffn == Ffn::dense; }
bool moe(const ModelConfig& c, int64_t il) { return c.layer_kind(il).ffn == Ffn::moe; }
bool split_qkv(const ModelConfig& c, int64_t il) { return attention(c, il) && !c.fused_qkv; }
bool fused_qkv(const ModelConfig& c, int64_t il) { return attention(c, il) && c.fused_qkv; }
bool shared_expert(const ModelConfig& c, int64_t il) { return moe(c, il) && c.n_ff_shexp > 0; }
bool expert_bias(const ModelConfig& c, int64_t il) { return moe(c, il) && c.expert_bias; }

constexpr auto kAlways = [](const ModelConfig&, int64_t) { return true; };
constexpr auto kLayer = TensorBlock::mixer;  // shorthand below
constexpr auto kFfn = TensorBlock::ffn;
constexpr auto M = TensorKind::matrix, N = TensorKind::norm, B = TensorKind::bias, P = TensorKind::param;

// One row per tensor, kept as a table (clang-format left off).
// clang-format off
// Rows in TensorId order, which is also the order tensors are written in: within a layer
// the mixer's, then the FFN's; the existing architectures' files keep their order.
constexpr TensorRow kRows[] = {
    {TensorId::token_embd, "token_embd", "weight", M, TensorBlock::embedding, false,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_vocab, 1}; }, kAlways},
    {TensorId::attn_norm, "attn_norm", "weight", N, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, 1, 1}; },
     [](const ModelConfig& c, int64_t) { return pre_norm(c); }},
    {TensorId::attn_q, "attn_q", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.q_dim(), 1}; }, split_qkv},
    {TensorId::attn_q_bias, "attn_q", "bias", B, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.q_dim(), 1, 1}; },
     [](const ModelConfig& c, int64_t il) { return split_qkv(c, il) && c.attn_bias; }},
    {TensorId::attn_k, "attn_k", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.kv_dim(), 1}; }, split_qkv},
    {TensorId::attn_k_bias, "attn_k", "bias", B, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.kv_dim(), 1, 1}; },
     [](const ModelConfig& c, int64_t il) { return split_qkv(c, il) && c.attn_bias; }},
    {TensorId::attn_v, "attn_v", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.kv_dim(), 1}; }, split_qkv},
    {TensorId::attn_v_bias, "attn_v", "bias", B, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.kv_dim(), 1, 1}; },
     [](const ModelConfig& c, int64_t il) { return split_qkv(c, il) && c.attn_bias; }},
    {TensorId::attn_qkv, "attn_qkv", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.q_dim() + 2 * c.kv_dim(), 1}; }, fused_qkv},
    {TensorId::attn_qkv_bias, "attn_qkv", "bias", B, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.q_dim() + 2 * c.kv_dim(), 1, 1}; },
     [](const ModelConfig& c, int64_t il) { return fused_qkv(c, il) && c.attn_bias; }},
    {TensorId::attn_q_norm, "attn_q_norm", "weight", N, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.head_dim, 1, 1}; },
     [](const ModelConfig& c, int64_t il) { return attention(c, il) && c.qk_norm; }},
    {TensorId::attn_k_norm, "attn_k_norm", "weight", N, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.head_dim, 1, 1}; },
     [](const ModelConfig& c, int64_t il) { return attention(c, il) && c.qk_norm; }},
    {TensorId::attn_gate, "attn_gate", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.q_dim(), 1}; },
     [](const ModelConfig& c, int64_t il) { return attention(c, il) && c.attn_gate; }},
    {TensorId::attn_sinks, "attn_sinks", "weight", P, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_head, 1, 1}; },
     [](const ModelConfig& c, int64_t il) { return attention(c, il) && c.attn_sinks; }},
    {TensorId::attn_output, "attn_output", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.q_dim(), c.n_embd, 1}; }, attention},
    {TensorId::attn_output_bias, "attn_output", "bias", B, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, 1, 1}; },
     [](const ModelConfig& c, int64_t il) { return attention(c, il) && c.attn_output_bias; }},
    {TensorId::ssm_in_qkv, "attn_qkv", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.ssm_conv_dim(), 1}; }, linear},
    {TensorId::ssm_in_gate, "attn_gate", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.ssm_value_dim(), 1}; }, linear},
    {TensorId::ssm_conv1d, "ssm_conv1d", "weight", P, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.ssm_conv_kernel, c.ssm_conv_dim(), 1}; }, linear},
    {TensorId::ssm_dt_bias, "ssm_dt", "bias", B, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.ssm_time_step_rank, 1, 1}; }, linear},
    {TensorId::ssm_a, "ssm_a", "", P, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.ssm_time_step_rank, 1, 1}; }, linear},
    {TensorId::ssm_beta, "ssm_beta", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.ssm_time_step_rank, 1}; }, linear},
    {TensorId::ssm_alpha, "ssm_alpha", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.ssm_time_step_rank, 1}; }, linear},
    {TensorId::ssm_norm, "ssm_norm", "weight", N, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.ssm_state_size, 1, 1}; }, linear},
    {TensorId::ssm_out, "ssm_out", "weight", M, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.ssm_value_dim(), c.n_embd, 1}; }, linear},
    {TensorId::post_attention_norm, "post_attention_norm", "weight", N, kLayer, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, 1, 1}; },
     [](const ModelConfig& c, int64_t) { return post_norm(c); }},
    {TensorId::ffn_norm, "ffn_norm", "weight", N, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, 1, 1}; },
     [](const ModelConfig& c, int64_t) { return pre_norm(c) && !c.ffn_norm_post_attention_name; }},
    {TensorId::ffn_norm_post_attention_name, "post_attention_norm", "weight", N, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, 1, 1}; },
     [](const ModelConfig& c, int64_t) { return pre_norm(c) && c.ffn_norm_post_attention_name; }},
    {TensorId::ffn_gate, "ffn_gate", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff, 1}; }, dense},
    {TensorId::ffn_up, "ffn_up", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff, 1}; }, dense},
    {TensorId::ffn_down, "ffn_down", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_ff, c.n_embd, 1}; }, dense},
    {TensorId::ffn_gate_inp, "ffn_gate_inp", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_expert, 1}; }, moe},
    {TensorId::ffn_gate_inp_bias, "ffn_gate_inp", "bias", B, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_expert, 1, 1}; }, expert_bias},
    {TensorId::ffn_gate_exps, "ffn_gate_exps", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff_exp, c.n_expert}; },
     [](const ModelConfig& c, int64_t il) { return moe(c, il) && !c.fused_gate_up_exps; }},
    {TensorId::ffn_up_exps, "ffn_up_exps", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff_exp, c.n_expert}; },
     [](const ModelConfig& c, int64_t il) { return moe(c, il) && !c.fused_gate_up_exps; }},
    {TensorId::ffn_gate_up_exps, "ffn_gate_up_exps", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, 2 * c.n_ff_exp, c.n_expert}; },
     [](const ModelConfig& c, int64_t il) { return moe(c, il) && c.fused_gate_up_exps; }},
    {TensorId::ffn_down_exps, "ffn_down_exps", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_ff_exp, c.n_embd, c.n_expert}; }, moe},
    {TensorId::ffn_gate_exps_bias, "ffn_gate_exps", "bias", B, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_ff_exp, c.n_expert, 1}; },
     [](const ModelConfig& c, int64_t il) { return expert_bias(c, il) && !c.fused_gate_up_exps; }},
    {TensorId::ffn_up_exps_bias, "ffn_up_exps", "bias", B, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_ff_exp, c.n_expert, 1}; },
     [](const ModelConfig& c, int64_t il) { return expert_bias(c, il) && !c.fused_gate_up_exps; }},
    {TensorId::ffn_down_exps_bias, "ffn_down_exps", "bias", B, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_expert, 1}; }, expert_bias},
    {TensorId::ffn_gate_inp_shexp, "ffn_gate_inp_shexp", "weight", P, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, 1, 1}; }, shared_expert},
    {TensorId::ffn_gate_shexp, "ffn_gate_shexp", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff_shexp, 1}; }, shared_expert},
    {TensorId::ffn_up_shexp, "ffn_up_shexp", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff_shexp, 1}; }, shared_expert},
    {TensorId::ffn_down_shexp, "ffn_down_shexp", "weight", M, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_ff_shexp, c.n_embd, 1}; }, shared_expert},
    {TensorId::post_ffw_norm, "post_ffw_norm", "weight", N, kFfn, true,
     [](const ModelConfig& c) { return Shape{c.n_embd, 1, 1}; },
     [](const ModelConfig& c, int64_t) { return post_norm(c); }},
    {TensorId::output_norm, "output_norm", "weight", N, TensorBlock::head, false,
     [](const ModelConfig& c) { return Shape{c.n_embd, 1, 1}; }, kAlways},
    {TensorId::output, "output", "weight", M, TensorBlock::head, false,
     [](const ModelConfig& c) { return Shape{c.n_embd, c.n_vocab, 1}; },
     [](const ModelConfig& c, int64_t) { return !c.tied_output; }},
    {TensorId::rope_freqs, "rope_freqs", "weight", P, TensorBlock::head, false,
     [](const ModelConfig& c) { return Shape{c.head_dim / 2, 1, 1}; },
     [](const ModelConfig& c, int64_t) { return c.rope_freq_factors; }},
};
// clang-format on

constexpr bool rows_in_id_order() {
  if (std::size(kRows) != static_cast<size_t>(TensorId::count)) return false;
  for (size_t i = 0; i < std::size(kRows); ++i)
    if (kRows[i].id != static_cast<TensorId>(i)) return false;
  return true;
}
static_assert(rows_in_id_order(), "kRows must list every TensorId once, in enum order");

TensorShape shape_of(const TensorRow& r, const ModelConfig& c, int64_t il) {
  const Shape s = r.shape(c);
  return {
      .name = tensor_name(r.id, il), .ne0 = s[0], .ne1 = s[1], .layer = il, .ne2 = s[2], .id = r.id, .kind = r.kind};
}

}  // namespace

std::span<const TensorRow> tensor_rows() { return kRows; }

const TensorRow& tensor_row(TensorId id) {
  SQZ_CHECK(id < TensorId::count, "tensor id ", static_cast<int>(id), " out of range");
  return kRows[static_cast<size_t>(id)];
}

std::string tensor_name(TensorId id, int64_t layer) {
  const TensorRow& r = tensor_row(id);
  std::string name = layer >= 0 ? "blk." + std::to_string(layer) + "." : std::string();
  name += r.base;
  if (!r.suffix.empty()) (name += '.') += r.suffix;
  return name;
}

std::vector<int64_t> TensorShape::dims() const {
  if (ne2 > 1) return {ne0, ne1, ne2};
  if (ne1 > 1) return {ne0, ne1};
  return {ne0};
}

std::vector<TensorShape> weight_tensors(const ModelConfig& c) {
  std::vector<TensorShape> out;
  for (const TensorRow& r : kRows)
    if (!r.per_layer && r.block == TensorBlock::embedding && r.present(c, -1)) out.push_back(shape_of(r, c, -1));
  for (int64_t il = 0; il < c.n_layer; ++il)
    for (const TensorRow& r : kRows)
      if (r.per_layer && r.present(c, il)) out.push_back(shape_of(r, c, il));
  for (const TensorRow& r : kRows)
    if (!r.per_layer && r.block == TensorBlock::head && r.present(c, -1)) out.push_back(shape_of(r, c, -1));
  return out;
}

ParamCount count_params(const ModelConfig& c) {
  ParamCount p;
  int64_t attention = 0, ffn = 0;
  for (const TensorShape& t : weight_tensors(c)) {
    p.total += t.elements();
    if (t.id == TensorId::rope_freqs) continue;  // a fixed table of the RoPE, not a weight of any block
    if (t.kind == TensorKind::norm) {
      p.norms += t.elements();
      continue;
    }
    switch (tensor_row(t.id).block) {
      case TensorBlock::embedding: p.embedding += t.elements(); break;
      case TensorBlock::head: p.output += t.elements(); break;
      case TensorBlock::mixer: attention += t.elements(); break;
      case TensorBlock::ffn: ffn += t.elements(); break;
    }
  }
  if (c.n_layer > 0) {
    p.attention_per_layer = attention / c.n_layer;
    p.ffn_per_layer = ffn / c.n_layer;
  }
  return p;
}

}  // namespace squeeze::model
