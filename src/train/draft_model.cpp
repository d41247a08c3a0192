// train/draft_model.cpp
#include "train/draft_model.h"

#include <cmath>
#include <deque>
#include <random>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/weights.h"
#include "quant/matmul.h"
#include "quant/quantize.h"
#include "quant/traits.h"
#include "train/ops.h"

namespace squeeze::train {

DraftTrainModel::DraftTrainModel(model::DraftConfig config) : config_(std::move(config)) {
  config_.validate();
  for (const model::TensorShape& s : config_.weight_tensors()) {
    Parameter p{.name = s.name, .cols = s.ne0, .rows = s.ne1, .layer = s.layer};
    p.value.assign(static_cast<size_t>(p.size()), 0.0f);
    p.grad.assign(static_cast<size_t>(p.size()), 0.0f);
    params_.push_back(std::move(p));
  }
}

DraftTrainModel DraftTrainModel::init(const model::DraftConfig& config, uint64_t seed) {
  DraftTrainModel m(config);
  std::mt19937_64 rng(seed);
  const float depth = 1.0f / std::sqrt(2.0f * static_cast<float>(config.n_layer));
  for (Parameter& p : m.params_) {
    if (p.is_norm()) {
      std::fill(p.value.begin(), p.value.end(), 1.0f);
      continue;
    }
    const bool residual = p.name.find("attn_output") != std::string::npos || p.name.find("ffn_down") != std::string::npos;
    std::normal_distribution<float> d(0.0f, (residual ? depth : 1.0f) / std::sqrt(static_cast<float>(p.cols)));
    for (float& v : p.value) v = d(rng);
  }
  return m;
}

DraftTrainModel DraftTrainModel::init_from_target(const model::DraftConfig& config, const model::Model& target,
                                                  int64_t first_layer, uint64_t seed) {
  const model::ModelConfig& tc = target.config();
  const model::DraftConfig& c = config;
  SQZ_CHECK(first_layer >= 0 && first_layer + c.n_layer <= tc.n_layer, "drafter init: target layers ", first_layer, " .. ",
            first_layer + c.n_layer - 1, " do not exist (the target has ", tc.n_layer, ")");
  SQZ_CHECK(c.n_embd == tc.n_embd && c.n_head == tc.n_head && c.n_head_kv == tc.n_head_kv && c.head_dim == tc.head_dim &&
                c.n_ff == tc.n_ff,
            "drafter init: the drafter's layer shape differs from the target's; cannot copy its layers");
  // the draft layer computes pre-norm attention and SwiGLU: a layer computing otherwise
  // (post-norms, an attention gate, GeGLU) would be copied into a different function
  SQZ_CHECK(tc.norm_placement == model::NormPlacement::pre && !tc.attn_gate &&
                tc.ffn_activation == model::FfnActivation::silu,
            "drafter init: the target's layers are not pre-norm SwiGLU layers without an attention gate; cannot copy them");
  DraftTrainModel m = init(config, seed);
  const model::Weights& tw = target.weights();
  const int64_t D = c.head_dim;
  const auto copy_matrix = [&](const quant::QMatrix& q, Parameter& p, bool neox_rows) {
    SQZ_CHECK(q.data != nullptr && q.rows == p.rows && q.cols == p.cols, "drafter init: target matrix for ", p.name,
              " missing or of another shape");
    std::vector<float> row(static_cast<size_t>(q.cols));
    for (int64_t r = 0; r < q.rows; ++r) {
      // adjacent pairs (2i, 2i+1) of a head become NeoX's (i, i + D/2)
      int64_t to = r;
      if (neox_rows) {
        const int64_t head = r / D, j = r % D;
        to = head * D + (j % 2 == 0 ? j / 2 : D / 2 + j / 2);
      }
      model::dequantize_row(q, r, row.data());
      std::copy(row.begin(), row.end(), p.value.begin() + to * q.cols);
    }
  };
  const auto copy_norm = [&](const std::vector<float>& v, Parameter& p) {
    SQZ_CHECK(static_cast<int64_t>(v.size()) == p.cols, "drafter init: target norm for ", p.name, " missing");
    p.value.assign(v.begin(), v.end());
  };
  const bool reorder = tc.rope_type == model::RopeType::normal;
  const int64_t E = c.n_embd, n_taps = c.n_taps();
  for (Parameter& p : m.params_) {
    if (p.name == "fc.weight") {  // [E, n_taps · E]: the last tap through unchanged
      std::fill(p.value.begin(), p.value.end(), 0.0f);
      for (int64_t r = 0; r < E; ++r) p.value[static_cast<size_t>(r * n_taps * E + (n_taps - 1) * E + r)] = 1.0f;
      continue;
    }
    if (p.name == "enc.output_norm.weight") {
      copy_norm(tw.layers[static_cast<size_t>(first_layer)].attn_norm, p);
      continue;
    }
    if (p.name == "output_norm.weight") {
      copy_norm(tw.output_norm, p);
      continue;
    }
    if (p.layer < 0) continue;
    const model::LayerWeights& L = tw.layers[static_cast<size_t>(first_layer + p.layer)];
    const std::string part = p.name.substr(p.name.find('.', 4) + 1);  // after "blk.N."
    if (part == "attn_norm.weight") copy_norm(L.attn_norm, p);
    else if (part == "ffn_norm.weight") copy_norm(L.ffn_norm, p);
    else if (part == "attn_q.weight") copy_matrix(L.wq, p, reorder);
    else if (part == "attn_k.weight") copy_matrix(L.wk, p, reorder);
    else if (part == "attn_v.weight") copy_matrix(L.wv, p, false);
    else if (part == "attn_output.weight") copy_matrix(L.wo, p, false);
    else if (part == "ffn_gate.weight") copy_matrix(L.w_gate, p, false);
    else if (part == "ffn_up.weight") copy_matrix(L.w_up, p, false);
    else if (part == "ffn_down.weight") copy_matrix(L.w_down, p, false);
    else if (part == "attn_q_norm.weight" && !L.q_norm.empty()) copy_norm(L.q_norm, p);
    else if (part == "attn_k_norm.weight" && !L.k_norm.empty()) copy_norm(L.k_norm, p);
  }
  return m;
}

DraftTrainModel DraftTrainModel::load(const std::string& path) {
  const gguf::File f(path);
  DraftTrainModel m(model::draft_config_from_gguf(f));
  for (Parameter& p : m.params_) {
    const gguf::TensorInfo& t = f.tensor(p.name);
    SQZ_CHECK(quant::is_supported(t.type), path, ": tensor '", p.name, "' has a type squeeze cannot compute with");
    const quant::QMatrix q{.type = t.type, .data = t.data.data(), .rows = t.n_rows(), .cols = t.row_length()};
    for (int64_t r = 0; r < q.rows; ++r) model::dequantize_row(q, r, p.value.data() + r * q.cols);
  }
  return m;
}

int64_t DraftTrainModel::n_params() const {
  int64_t n = 0;
  for (const Parameter& p : params_) n += p.size();
  return n;
}

void DraftTrainModel::zero_grad() {
  for (Parameter& p : params_) std::fill(p.grad.begin(), p.grad.end(), 0.0f);
}

Var DraftTrainModel::forward(Tape<float>& t, std::span<const float> taps, int64_t n_ctx, std::span<const float> block_embeds,
                             std::span<const int64_t> anchors, int64_t block, bool with_grad) {
  const model::DraftConfig& c = config_;
  const int64_t E = c.n_embd, N = static_cast<int64_t>(anchors.size()), B = block, rows = N * B;
  SQZ_CHECK(N > 0 && B >= 2 && B <= c.block_size, "draft forward: ", N, " blocks of ", B);
  SQZ_CHECK(static_cast<int64_t>(taps.size()) == n_ctx * c.n_taps() * E, "draft forward: taps of ", taps.size(),
            " values for ", n_ctx, " positions");
  SQZ_CHECK(static_cast<int64_t>(block_embeds.size()) == rows * E, "draft forward: block embeddings do not match");
  for (int64_t a : anchors) SQZ_CHECK(a >= 1 && a <= n_ctx, "draft forward: anchor ", a, " outside [1, ", n_ctx, "]");
  // parameters enter in weight_tensors() order (the names below are that order)
  size_t next = 0;
  const auto param = [&](std::string_view name) {
    Parameter& p = params_[next++];
    SQZ_CHECK(p.name.find(name) != std::string::npos, "draft forward: expected ", name, ", found ", p.name);
    return t.leaf(p.value, with_grad ? std::span<float>(p.grad) : std::span<float>(), p.rows, p.cols);
  };
  // positions: context rows 0 .. n_ctx − 1, block rows a .. a + B − 1
  auto ctx_pos = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(n_ctx));
  for (int64_t i = 0; i < n_ctx; ++i) (*ctx_pos)[static_cast<size_t>(i)] = i;
  auto blk_pos = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(rows));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < B; ++k) (*blk_pos)[static_cast<size_t>(n * B + k)] = anchors[static_cast<size_t>(n)] + k;
  // visibility per kind of layer: keys are [context (n_ctx rows) ; blocks (rows)]
  const auto visibility = [&](bool sliding) {
    std::vector<std::array<int64_t, 4>> vis(static_cast<size_t>(rows));
    const int64_t W = c.sliding_window;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t a = anchors[static_cast<size_t>(n)];
      for (int64_t k = 0; k < B; ++k) {
        const int64_t q = a + k;
        const int64_t c0 = sliding ? std::max<int64_t>(0, q - W) : 0, c1 = std::max(c0, a);
        const int64_t b0 = sliding ? std::max<int64_t>(0, k - W) : 0, b1 = sliding ? std::min(B, k + W + 1) : B;
        vis[static_cast<size_t>(n * B + k)] = {c0, c1, n_ctx + n * B + b0, n_ctx + n * B + b1};
      }
    }
    return vis;
  };
  const auto vis_sliding = visibility(true), vis_full = visibility(false);

  const Var fc = param("fc."), hidden_norm = param("enc.output_norm");
  const Var taps_v = t.constant(std::vector<float>(taps.begin(), taps.end()), n_ctx, c.n_taps() * E);
  const Var ctx = rmsnorm(t, matmul_nt(t, taps_v, fc), hidden_norm, c.rms_eps);  // [n_ctx, E]
  Var x = t.constant(std::vector<float>(block_embeds.begin(), block_embeds.end()), rows, E);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Var attn_norm = param("attn_norm"), wq = param("attn_q."), wk = param("attn_k."), wv = param("attn_v.");
    const Var q_norm = param("attn_q_norm"), k_norm = param("attn_k_norm"), wo = param("attn_output");
    const Var ffn_norm = param("ffn_norm"), w_gate = param("ffn_gate"), w_up = param("ffn_up"), w_down = param("ffn_down");
    const Var h = rmsnorm(t, x, attn_norm, c.rms_eps);
    const RopeSpec rq{.n_heads = c.n_head, .head_dim = c.head_dim, .freq_base = c.rope_base, .neox = true, .positions = blk_pos.get()};
    const RopeSpec rk{.n_heads = c.n_head_kv, .head_dim = c.head_dim, .freq_base = c.rope_base, .neox = true, .positions = blk_pos.get()};
    const RopeSpec rc{.n_heads = c.n_head_kv, .head_dim = c.head_dim, .freq_base = c.rope_base, .neox = true, .positions = ctx_pos.get()};
    const Var q = rope(t, rmsnorm_heads(t, matmul_nt(t, h, wq), q_norm, c.rms_eps), rq);
    const Var kb = rope(t, rmsnorm_heads(t, matmul_nt(t, h, wk), k_norm, c.rms_eps), rk);
    const Var kc = rope(t, rmsnorm_heads(t, matmul_nt(t, ctx, wk), k_norm, c.rms_eps), rc);
    const Var k = concat_rows(t, kc, kb);
    const Var v = concat_rows(t, matmul_nt(t, ctx, wv), matmul_nt(t, h, wv));
    const Var o = masked_attention(t, q, k, v, {.n_heads = c.n_head, .n_kv_heads = c.n_head_kv, .head_dim = c.head_dim},
                                   c.sliding(l) ? vis_sliding : vis_full);
    x = add(t, x, matmul_nt(t, o, wo));
    const Var h2 = rmsnorm(t, x, ffn_norm, c.rms_eps);
    x = add(t, x, matmul_nt(t, swiglu(t, matmul_nt(t, h2, w_gate), matmul_nt(t, h2, w_up)), w_down));
  }
  const Var out = rmsnorm(t, x, param("output_norm"), c.rms_eps);
  SQZ_CHECK(next == params_.size(), "draft forward: parameter order out of step");
  return out;
}

void DraftTrainModel::export_gguf(const std::string& path, const std::string& name, const std::string& replaces,
                                  gguf::GgmlType type) const {
  gguf::Writer w(path, {.replaces = replaces});
  model::write_draft_config(w.metadata(), config_);
  w.metadata().set("general.name", gguf::Value::string(name));
  std::deque<std::vector<uint8_t>> bytes;  // the writer reads them at finish()
  for (const Parameter& p : params_) {
    const std::vector<int64_t> dims = p.is_norm() ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
    gguf::GgmlType t = p.is_norm() ? gguf::GgmlType::F32 : type;
    if (p.cols % gguf::ggml_type_info(t).block_size != 0) t = gguf::GgmlType::F32;
    bytes.push_back(quant::quantize_tensor({.type = t, .src = p.value.data(), .rows = p.rows, .cols = p.cols}));
    w.add_tensor({.name = p.name, .type = t, .dims = dims}, bytes.back());
  }
  w.finish();
}

}  // namespace squeeze::train
