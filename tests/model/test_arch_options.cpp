// tests/model/test_arch_options.cpp — architectures as data: the options of ModelConfig
// (norm placement, QK-norm, GeGLU, embedding / attention scales, RoPE type and bases per
// layer kind, local/global pattern, tied head, logit soft-cap) read from GGUF keys, and
// the one forward pass checked per architecture against a float64 scalar reference
// written here from the architectures' definitions, not from forward.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../common/thrown_message.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/gguf_config.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/session.h"
#include "model/tensor_table.h"

using namespace squeeze;
using namespace squeeze::model;

namespace {

// One directory per test process, removed when it ends.
struct TempDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("squeeze_arch_" + std::to_string(::getpid()));
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::string temp_path(const std::string& name) {
  static TempDir tmp;
  std::filesystem::create_directories(tmp.dir);
  return (tmp.dir / name).string();
}

std::string make_model(const ModelConfig& c, const std::string& name, uint64_t seed = 11) {
  const std::string path = temp_path(name);
  write_random_model({.config = c, .type = gguf::GgmlType::F32, .seed = seed, .path = path});
  return path;
}

ModelConfig gemma3_tiny() { return builtin_config("gemma3-tiny"); }

// A copy of `src` with its metadata edited, one tensor dropped and one (F32) added.
std::string rewrite(const std::string& src, const std::string& name, const std::function<void(gguf::Metadata&)>& edit,
                    const std::string& drop = "", const gguf::TensorSpec& add = {}) {
  const gguf::File f(src);
  const std::string out = temp_path(name);
  gguf::Writer w(out);
  for (const auto& kv : f.metadata().entries()) w.metadata().set(kv.key, kv.value);
  if (edit) edit(w.metadata());
  for (const auto& t : f.tensors()) {
    if (t.name == drop || t.name == add.name) continue;
    w.add_tensor(t);
  }
  static std::vector<float> zeros;
  if (!add.name.empty()) {
    int64_t n = 1;
    for (int64_t d : add.dims) n *= d;
    zeros.assign(static_cast<size_t>(n), 1.0f);
    w.add_tensor(add, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(zeros.data()), zeros.size() * 4));
  }
  w.finish();
  return out;
}

std::string load_error(const std::string& path) {
  return thrown_message([&] { (void)config_from_gguf(gguf::File(path)); });
}

// A copy of a good file made bad one way (rewrite's edit, drop and add), and the words its
// refusal must contain.
struct BadFileCase {
  std::string name, needle;
  std::function<void(gguf::Metadata&)> edit;
  std::string drop;
  gguf::TensorSpec add;
};

// Each bad copy of `good` is refused with one line that contains its needle.
void expect_one_line_refusals(const std::string& good, const std::vector<BadFileCase>& cases) {
  for (const BadFileCase& k : cases) {
    const std::string msg = load_error(rewrite(good, k.name + ".gguf", k.edit, k.drop, k.add));
    EXPECT_NE(msg.find(k.needle), std::string::npos) << k.name << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << k.name << ": " << msg;
  }
}

// ---- float64 reference forward ----------------------------------------------------------

using Vec = std::vector<double>;

Vec rows_of(const quant::QMatrix& m) {
  Vec out(static_cast<size_t>(m.rows * m.cols));
  std::vector<float> row(static_cast<size_t>(m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    dequantize_row(m, r, row.data());
    for (int64_t j = 0; j < m.cols; ++j) out[static_cast<size_t>(r * m.cols + j)] = row[static_cast<size_t>(j)];
  }
  return out;
}

// y[rows] = W[rows, cols] x
Vec matvec(const Vec& W, const Vec& x, int64_t rows, int64_t cols) {
  Vec y(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) y[r] += W[static_cast<size_t>(r * cols + j)] * x[j];
  return y;
}

void rmsnorm(double* x, const std::vector<float>& w, int64_t n, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / n + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * inv * w[i];
}

// RoPE of one head at `pos`: pairs (i, i+1) (normal) or (i, i + D/2) (NeoX), angle
// pos·scale·base^(-2k/D) / divisor_k (linear scaling; Llama 3's per-pair divisors).
void rope(double* x, int64_t D, int64_t pos, double base, bool neox, double scale = 1.0,
          const std::vector<float>* divisors = nullptr) {
  for (int64_t k = 0; k < D / 2; ++k) {
    double a = pos * scale * std::pow(base, -2.0 * k / D);
    if (divisors) a /= (*divisors)[static_cast<size_t>(k)];
    const double c = std::cos(a), s = std::sin(a);
    const int64_t i = neox ? k : 2 * k, j = neox ? k + D / 2 : 2 * k + 1;
    const double x0 = x[i], x1 = x[j];
    x[i] = x0 * c - x1 * s;
    x[j] = x0 * s + x1 * c;
  }
}

// Expert e's [rows, cols] matrix of a stack, rows [first, first + rows) of it.
Vec expert_rows(const ExpertStack& s, int64_t e, int64_t first, int64_t rows) {
  const Vec all = rows_of(s.expert(e));
  const int64_t cols = s.all.cols;
  return Vec(all.begin() + first * cols, all.begin() + (first + rows) * cols);
}

// Qwen3-MoE's expert FFN (transformers' Qwen3MoeSparseMoeBlock): softmax over every
// expert, the top k (ties to the lower id), their probabilities renormalised when the
// config says so, Σ_k p_k · down_k(silu(gate_k h) ⊙ up_k h).
Vec reference_moe(const ModelConfig& c, const LayerWeights& L, const Vec& h) {
  const int64_t E = c.n_embd, X = c.n_expert, I = c.n_ff_exp;
  Vec p = matvec(rows_of(L.router), h, X, E);
  const double mx = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - mx));
  for (double& v : p) v /= sum;
  std::vector<int64_t> order(static_cast<size_t>(X));
  for (int64_t e = 0; e < X; ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
  double chosen = 0;
  for (int64_t k = 0; k < c.n_expert_used; ++k) chosen += p[order[k]];
  Vec y(static_cast<size_t>(E), 0.0);
  for (int64_t k = 0; k < c.n_expert_used; ++k) {
    const int64_t e = order[k];
    const double weight = c.expert_weights_norm ? p[e] / chosen : p[e];
    const Vec Wg = c.fused_gate_up_exps ? expert_rows(L.gate_up_exps, e, 0, I) : rows_of(L.gate_exps.expert(e));
    const Vec Wu = c.fused_gate_up_exps ? expert_rows(L.gate_up_exps, e, I, I) : rows_of(L.up_exps.expert(e));
    Vec g = matvec(Wg, h, I, E);
    const Vec u = matvec(Wu, h, I, E);
    for (int64_t i = 0; i < I; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    const Vec d = matvec(rows_of(L.down_exps.expert(e)), g, E, I);
    for (int64_t j = 0; j < E; ++j) y[j] += weight * d[j];
  }
  return y;
}

// gpt-oss's experts (transformers' GptOssTopKRouter and GptOssExperts): top-k of the
// biased router logits, a softmax over those k; each expert's clamped SwiGLU with biases,
// (clamp(up, ±7) + 1) · g σ(1.702 g) for g = min(gate, 7), and its down bias before the weight.
Vec reference_oss_moe(const ModelConfig& c, const LayerWeights& L, const Vec& h) {
  const int64_t E = c.n_embd, X = c.n_expert, I = c.n_ff_exp, K = c.n_expert_used;
  Vec logit = matvec(rows_of(L.router), h, X, E);
  for (int64_t e = 0; e < X; ++e) logit[e] += L.router_bias[e];
  std::vector<int64_t> order(static_cast<size_t>(X));
  for (int64_t e = 0; e < X; ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logit[a] > logit[b]; });
  double sum = 0;
  for (int64_t k = 0; k < K; ++k) sum += std::exp(logit[order[k]] - logit[order[0]]);
  Vec y(static_cast<size_t>(E), 0.0);
  for (int64_t k = 0; k < K; ++k) {
    const int64_t e = order[k];
    const double weight = std::exp(logit[e] - logit[order[0]]) / sum;
    Vec g = matvec(rows_of(L.gate_exps.expert(e)), h, I, E);
    const Vec u = matvec(rows_of(L.up_exps.expert(e)), h, I, E);
    for (int64_t i = 0; i < I; ++i) {
      const double gi = std::min(g[i] + L.gate_exps_bias[e * I + i], 7.0);
      const double ui = std::clamp(u[i] + L.up_exps_bias[e * I + i], -7.0, 7.0);
      g[i] = (ui + 1) * gi / (1 + std::exp(-1.702 * gi));
    }
    const Vec d = matvec(rows_of(L.down_exps.expert(e)), g, E, I);
    for (int64_t j = 0; j < E; ++j) y[j] += weight * (d[j] + L.down_exps_bias[e * E + j]);
  }
  return y;
}

// transformers' YaRN (truncate false, gpt-oss): per pair k the inverse frequency blends
// θ^(−2k/D) and θ^(−2k/D)/factor by a ramp between the correction dims of β_fast and
// β_slow; returned as divisors of θ^(−2k/D), for rope().
std::vector<float> reference_yarn_divisors(const ModelConfig& c) {
  const double D = static_cast<double>(c.head_dim), theta = c.rope_base_global, L0 = c.yarn_original_context;
  const auto corr = [&](double r) { return D * std::log(L0 / (r * 2 * M_PI)) / (2 * std::log(theta)); };
  const double low = std::max(corr(c.yarn_beta_fast), 0.0), high = std::min(corr(c.yarn_beta_slow), D - 1);
  std::vector<float> out;
  for (int64_t k = 0; k < c.head_dim / 2; ++k) {
    const double extrapolated = std::pow(theta, -2.0 * k / D), interpolated = extrapolated / c.yarn_factor;
    const double ramp = std::clamp((k - low) / (high - low), 0.0, 1.0);
    out.push_back(static_cast<float>(extrapolated / (interpolated * ramp + extrapolated * (1 - ramp))));
  }
  return out;
}

std::vector<Vec> reference_logits(const Model& m, const std::vector<int32_t>& tokens) {
  const ModelConfig& c = m.config();
  const Weights& w = m.weights();
  const int64_t n = static_cast<int64_t>(tokens.size()), E = c.n_embd, D = c.head_dim, H = c.n_head, Hk = c.n_head_kv;
  const Vec emb = rows_of(w.token_embd);
  std::vector<Vec> x(static_cast<size_t>(n));
  // Gemma's and Muse Glimmer's options all come together with their architectures;
  // llama and glimmer have none. Both have QK-norm and sandwich norms; Muse Glimmer adds
  // the embedding norm, the output gate, NoPE global layers and the logit scale.
  const bool gemma = c.arch == Arch::gemma3, muse = c.arch == Arch::muse_glimmer, sandwich = gemma || muse;
  // gpt-oss: biases everywhere, sinks, YaRN (cos/sin × its attention factor), its own experts.
  const bool oss = c.arch == Arch::gpt_oss;
  const std::vector<float> yarn = oss ? reference_yarn_divisors(c) : std::vector<float>{};
  const double yarn_m = oss ? 0.1 * std::log(static_cast<double>(c.yarn_factor)) + 1 : 1.0;
  const std::vector<float> ones(static_cast<size_t>(E), 1.0f);
  for (int64_t t = 0; t < n; ++t) {
    x[t].assign(emb.begin() + tokens[t] * E, emb.begin() + (tokens[t] + 1) * E);
    for (double& v : x[t]) v *= gemma ? std::sqrt(static_cast<double>(E)) : 1.0;
    if (muse) rmsnorm(x[t].data(), ones, E, c.rms_eps);
  }
  const double post_eps = muse ? 1e-8 : c.rms_eps;
  const double scale = c.attn_scale > 0 ? c.attn_scale : 1.0 / std::sqrt(static_cast<double>(D));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[il];
    const bool local = c.is_local[il];
    const double base = local ? c.rope_base_local : c.rope_base_global;
    const Vec Wq = rows_of(L.wq), Wk = rows_of(L.wk), Wv = rows_of(L.wv), Wo = rows_of(L.wo);
    const bool experts = c.layer_kind(il).ffn == Ffn::moe;
    const Vec Wg = experts ? Vec() : rows_of(L.w_gate), Wu = experts ? Vec() : rows_of(L.w_up);
    const Vec Wd = experts ? Vec() : rows_of(L.w_down);
    const Vec Wgate = muse ? rows_of(L.attn_gate) : Vec();
    const bool positional = !(muse && !local);  // Muse Glimmer's global layers are NoPE
    std::vector<Vec> q(n), k(n), v(n), gate(n);
    for (int64_t t = 0; t < n; ++t) {
      Vec h = x[t];
      rmsnorm(h.data(), L.attn_norm, E, c.rms_eps);
      q[t] = matvec(Wq, h, H * D, E), k[t] = matvec(Wk, h, Hk * D, E), v[t] = matvec(Wv, h, Hk * D, E);
      if (c.attn_bias) {  // Qwen2
        for (int64_t i = 0; i < H * D; ++i) q[t][i] += L.bq[i];
        for (int64_t i = 0; i < Hk * D; ++i) k[t][i] += L.bk[i], v[t][i] += L.bv[i];
      }
      if (muse) gate[t] = matvec(Wgate, h, H * D, E);
      const bool neox = c.rope_type == RopeType::neox;
      const std::vector<float>* divisors = c.rope_freq_factors ? &w.rope_freqs : oss ? &yarn : nullptr;
      for (int64_t hh = 0; hh < H; ++hh) {
        if (c.qk_norm) rmsnorm(&q[t][hh * D], L.q_norm, D, c.rms_eps);
        if (positional) rope(&q[t][hh * D], D, t, base, neox, c.rope_freq_scale, divisors);
      }
      for (int64_t hh = 0; hh < Hk; ++hh) {
        if (c.qk_norm) rmsnorm(&k[t][hh * D], L.k_norm, D, c.rms_eps);
        if (positional) rope(&k[t][hh * D], D, t, base, neox, c.rope_freq_scale, divisors);
      }
      for (double& e : q[t]) e *= yarn_m;
      for (double& e : k[t]) e *= yarn_m;
    }
    for (int64_t t = 0; t < n; ++t) {
      Vec att(static_cast<size_t>(H * D), 0.0);
      const int64_t first = local ? std::max<int64_t>(0, t - c.sliding_window + 1) : 0;
      for (int64_t hh = 0; hh < H; ++hh) {
        const int64_t kh = hh / (H / Hk);
        Vec s;
        double mx = -1e300, sum = 0;
        for (int64_t j = first; j <= t; ++j) {
          double d = 0;
          for (int64_t e = 0; e < D; ++e) d += q[t][hh * D + e] * k[j][kh * D + e];
          s.push_back(d * scale);
          mx = std::max(mx, s.back());
        }
        if (oss) {  // the sink: one more logit in the denominator, no value
          mx = std::max(mx, static_cast<double>(L.attn_sinks[hh]));
          sum = std::exp(L.attn_sinks[hh] - mx);
        }
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = first; j <= t; ++j)
          for (int64_t e = 0; e < D; ++e) att[hh * D + e] += s[j - first] / sum * v[j][kh * D + e];
      }
      if (muse)
        for (int64_t i = 0; i < H * D; ++i) att[i] *= 1.0 / (1.0 + std::exp(-gate[t][i]));
      Vec o = matvec(Wo, att, E, H * D);
      if (oss)
        for (int64_t e = 0; e < E; ++e) o[e] += L.bo[e];
      if (sandwich) rmsnorm(o.data(), L.post_attn_norm, E, post_eps);
      for (int64_t e = 0; e < E; ++e) x[t][e] += o[e];
      Vec h = x[t];
      rmsnorm(h.data(), L.ffn_norm, E, c.rms_eps);
      if (experts) {
        const Vec y = oss ? reference_oss_moe(c, L, h) : reference_moe(c, L, h);
        for (int64_t e = 0; e < E; ++e) x[t][e] += y[e];
        continue;
      }
      Vec g = matvec(Wg, h, c.n_ff, E), u = matvec(Wu, h, c.n_ff, E);
      for (int64_t i = 0; i < c.n_ff; ++i) {
        const double a = g[i];
        g[i] = (gemma ? 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a))) : a / (1 + std::exp(-a))) * u[i];
      }
      Vec y = matvec(Wd, g, E, c.n_ff);
      if (sandwich) rmsnorm(y.data(), L.post_ffn_norm, E, post_eps);
      for (int64_t e = 0; e < E; ++e) x[t][e] += y[e];
    }
  }
  const Vec out = rows_of(w.output);
  std::vector<Vec> logits;
  for (int64_t t = 0; t < n; ++t) {
    Vec h = x[t];
    rmsnorm(h.data(), w.output_norm, E, c.rms_eps);
    Vec l = matvec(out, h, c.n_vocab, E);
    for (double& e : l) e *= c.logit_scale;
    if (c.final_logit_softcap > 0)
      for (double& e : l) e = c.final_logit_softcap * std::tanh(e / c.final_logit_softcap);
    logits.push_back(l);
  }
  return logits;
}

// Our logits for every position (f32 KV, prefill in chunks of 5 so local rings wrap
// mid-chunk), compared per position: max |Δ| / max |ref| over the vocabulary.
void expect_matches_reference(const std::string& path, double tol) {
  const auto m = Model::load(path);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(static_cast<int32_t>((i * 37 + 11) % m->config().n_vocab));
  ASSERT_GT(static_cast<int64_t>(tokens.size()), 2 * std::max<int64_t>(m->config().sliding_window, 1));
  Session s(*m, {.batch = 5, .kv_type = KvType::F32});
  const auto ours = s.forward(tokens, true);
  const auto ref = reference_logits(*m, tokens);
  const int64_t V = m->config().n_vocab;
  for (size_t t = 0; t < tokens.size(); ++t) {
    double err = 0, mag = 0;
    for (int64_t i = 0; i < V; ++i) {
      err = std::max(err, std::fabs(ours[t * V + i] - ref[t][i]));
      mag = std::max(mag, std::fabs(ref[t][i]));
    }
    EXPECT_LE(err / mag, tol) << path << " position " << t;
  }
}

}  // namespace

TEST(ArchOptions, Gemma3DefaultsFollowTheArchitecture) {
  const ModelConfig c = builtin_config("gemma3-270m");
  EXPECT_EQ(c.norm_placement, NormPlacement::both);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.ffn_activation, FfnActivation::gelu_tanh);
  EXPECT_EQ(c.rope_type, RopeType::neox);
  EXPECT_EQ(c.embd_scale, std::sqrt(640.0f));
  EXPECT_EQ(c.attn_scale, 1.0f / 16.0f);
  EXPECT_EQ(c.n_local_layers(), 15);
  EXPECT_EQ(describe_pattern(c.is_local), "[L L L L L G] x 3");
  EXPECT_EQ(c.rope_base_local, 10000.0f);
  EXPECT_EQ(c.rope_base_global, 1e6f);
  EXPECT_TRUE(c.tied_output);
  EXPECT_FALSE(c.has_llama_options());
  EXPECT_TRUE(builtin_config("smollm2-135m").has_llama_options());
  // 4 norms per layer + QK-norms: the tensor table adds up to the parameter count
  int64_t sum = 0;
  for (const auto& t : weight_tensors(c)) sum += t.elements();
  EXPECT_EQ(sum, count_params(c).total);
  EXPECT_EQ(weight_tensors(c).size(), 13u * 18 + 2);
}

TEST(ArchOptions, Gemma3FileRoundTrips) {
  const ModelConfig want = gemma3_tiny();
  const std::string path = make_model(want, "g3.gguf");
  const gguf::File f(path);
  // written as llama.cpp's converter does: no pattern or local-base keys for the defaults
  EXPECT_FALSE(f.metadata().has("gemma3.attention.sliding_window_pattern"));
  EXPECT_FALSE(f.metadata().has("gemma3.rope.freq_base_swa"));
  const ModelConfig c = config_from_gguf(f);
  EXPECT_EQ(c.arch, Arch::gemma3);
  EXPECT_EQ(c.is_local, want.is_local);
  EXPECT_EQ(c.sliding_window, 16);
  EXPECT_EQ(c.embd_scale, want.embd_scale);
  EXPECT_EQ(c.attn_scale, want.attn_scale);
  EXPECT_EQ(c.rope_type, RopeType::neox);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.norm_placement, NormPlacement::both);
}

TEST(ArchOptions, ExplicitPatternAndSoftcapKeysAreHonoured) {
  const std::string path = rewrite(make_model(gemma3_tiny(), "g3k.gguf"), "g3k2.gguf", [](gguf::Metadata& m) {
    m.set("gemma3.attention.sliding_window_pattern", gguf::Value::u32(3));
    m.set("gemma3.final_logit_softcapping", gguf::Value::f32(30.0f));
    m.set("gemma3.attention.scale", gguf::Value::f32(0.1f));
  });
  const ModelConfig c = config_from_gguf(gguf::File(path));
  EXPECT_EQ(describe_pattern(c.is_local), "[L L G] x 4");
  EXPECT_EQ(c.final_logit_softcap, 30.0f);
  EXPECT_EQ(c.attn_scale, 0.1f);
}

TEST(ArchOptions, ContradictoryFilesFailWithOneLineNamingTheKeyOrTensor) {
  const std::string good = make_model(gemma3_tiny(), "g3bad.gguf");
  const std::vector<BadFileCase> cases = {
      {"no_post_ffw", "blk.3.post_ffw_norm.weight' is missing", nullptr, "blk.3.post_ffw_norm.weight", {}},
      {"no_k_norm", "blk.0.attn_k_norm.weight' is missing", nullptr, "blk.0.attn_k_norm.weight", {}},
      {"q_norm_len", "blk.0.attn_q_norm.weight' has shape [16]", nullptr, "",
       {"blk.0.attn_q_norm.weight", gguf::GgmlType::F32, {16}}},
      {"all_local", "gemma3.attention.sliding_window_pattern' marks every layer local",
       [](gguf::Metadata& m) {
         m.set("gemma3.attention.sliding_window_pattern",
               gguf::Value::array(gguf::ValueType::Bool, std::vector<gguf::Value>(12, gguf::Value::boolean(true))));
       },
       "", {}},
      {"period0", "gemma3.attention.sliding_window_pattern' must be a positive period",
       [](gguf::Metadata& m) { m.set("gemma3.attention.sliding_window_pattern", gguf::Value::u32(0)); }, "", {}},
      {"no_window", "gemma3.attention.sliding_window", [](gguf::Metadata& m) { m.erase("gemma3.attention.sliding_window"); }, "", {}},
      {"kv_heads", "gemma3.attention.head_count_kv' (3) does not divide head_count",
       [](gguf::Metadata& m) { m.set("gemma3.attention.head_count_kv", gguf::Value::u32(3)); }, "", {}},
      {"softcap", "gemma3.final_logit_softcapping' must be positive",
       [](gguf::Metadata& m) { m.set("gemma3.final_logit_softcapping", gguf::Value::f32(-1.0f)); }, "", {}},
      {"arch", "unsupported architecture 'gemma2'", [](gguf::Metadata& m) { m.set("general.architecture", gguf::Value::string("gemma2")); }, "", {}},
  };
  expect_one_line_refusals(good, cases);
}

TEST(ArchOptions, OptionsWithoutAKeyMustBeTheArchitectures) {
  ModelConfig d = gemma3_tiny();
  d.qk_norm = false;  // no key stores this: a gemma3 without QK-norm cannot be written
  EXPECT_NE(thrown_message([&] { make_model(d, "bad_opts.gguf"); }).find("must be arch gemma3's"), std::string::npos);
}

// The one forward pass, per architecture, against the float64 reference. f32 throughout
// (F32 weights, f32 KV): each of the ~15 roundings per layer costs a few 6e-8 relative,
// summed over at most 160 terms and 12 layers — 1e-4 of the logits' range is far above
// that and far below any real bug (a wrong norm, pairing, base or scale moves logits by O(1)).
TEST(ArchOptions, ForwardMatchesFloat64Reference) {
  ModelConfig glimmer = builtin_config("glimmer-tiny");
  ModelConfig llama = glimmer;
  set_arch_defaults(llama, Arch::llama);
  llama.sliding_window = 0, llama.is_local = all_global_pattern(llama.n_layer);
  expect_matches_reference(make_model(glimmer, "ref_glimmer.gguf"), 1e-4);
  expect_matches_reference(make_model(llama, "ref_llama.gguf"), 1e-4);
  const std::string g3 = make_model(gemma3_tiny(), "ref_gemma3.gguf");
  expect_matches_reference(g3, 1e-4);
  // optional keys: a custom score scale and a final soft-cap (small enough to bend logits)
  expect_matches_reference(rewrite(g3, "ref_gemma3_cap.gguf", [](gguf::Metadata& m) {
                             m.set("gemma3.final_logit_softcapping", gguf::Value::f32(2.0f));
                             m.set("gemma3.attention.scale", gguf::Value::f32(0.3f));
                           }),
                           1e-4);
}

// The dense families people bring: qwen2 (Q/K/V biases, NeoX), qwen3 (QK-norm before
// NeoX RoPE), llama with Llama 3's RoPE divisors and a tied head, llama with linear scaling.
TEST(ArchOptions, QwenAndScaledLlamaForwardMatchFloat64Reference) {
  const auto dense = [](Arch arch) {
    ModelConfig c = builtin_config("glimmer-tiny");
    set_arch_defaults(c, arch);
    c.sliding_window = 0, c.is_local = all_global_pattern(c.n_layer);
    c.rope_base_global = c.rope_base_local = 1e6f;
    return c;
  };
  ModelConfig qwen2 = dense(Arch::qwen2), qwen3 = dense(Arch::qwen3);
  ASSERT_TRUE(qwen2.attn_bias && !qwen2.qk_norm && qwen2.rope_type == RopeType::neox);
  ASSERT_TRUE(!qwen3.attn_bias && qwen3.qk_norm && qwen3.rope_type == RopeType::neox);
  qwen2.tied_output = true, qwen3.tied_output = false;
  ModelConfig llama3 = dense(Arch::llama), linear = dense(Arch::llama);
  llama3.rope_freq_factors = true, llama3.tied_output = true;
  linear.rope_freq_scale = 0.25f, linear.tied_output = false;
  for (const auto& [c, name] : {std::pair{qwen2, "ref_qwen2.gguf"}, {qwen3, "ref_qwen3.gguf"},
                                {llama3, "ref_llama3.gguf"}, {linear, "ref_linear.gguf"}}) {
    const std::string path = make_model(c, name);
    const ModelConfig back = config_from_gguf(gguf::File(path));  // the keys and tensors say it all
    EXPECT_EQ(back.arch, c.arch) << name;
    EXPECT_EQ(back.attn_bias, c.attn_bias) << name;
    EXPECT_EQ(back.tied_output, c.tied_output) << name;
    EXPECT_EQ(back.rope_freq_scale, c.rope_freq_scale) << name;
    EXPECT_EQ(back.rope_freq_factors, c.rope_freq_factors) << name;
    expect_matches_reference(path, 1e-4);
  }
}

// Qwen3-MoE: experts with gates renormalised or not, split or fused gate/up, a dense layer
// among expert layers (qwen3moe-tiny: 6 experts, 3 per token, layer 2 dense) — the file's
// keys and tensors say it all.
TEST(ArchOptions, QwenMoeForwardMatchesFloat64Reference) {
  ModelConfig norm = builtin_config("qwen3moe-tiny");
  ModelConfig plain = norm, fused = norm;
  plain.expert_weights_norm = false;
  fused.fused_gate_up_exps = true;
  fused.n_expert = 5;
  for (const auto& [c, name] :
       {std::pair{norm, "ref_moe.gguf"}, {plain, "ref_moe_plain.gguf"}, {fused, "ref_moe_fused.gguf"}}) {
    const std::string path = make_model(c, name);
    const ModelConfig back = config_from_gguf(gguf::File(path));
    EXPECT_EQ(back.arch, Arch::qwen3moe) << name;
    EXPECT_EQ(back.layer_kinds, c.layer_kinds) << name;
    EXPECT_EQ(back.n_expert, c.n_expert) << name;
    EXPECT_EQ(back.n_expert_used, c.n_expert_used) << name;
    EXPECT_EQ(back.n_ff_exp, c.n_ff_exp) << name;
    EXPECT_EQ(back.expert_weights_norm, c.expert_weights_norm) << name;
    EXPECT_EQ(back.fused_gate_up_exps, c.fused_gate_up_exps) << name;
    expect_matches_reference(path, 1e-4);
  }
  // Without the key a file renormalises, as llama.cpp always does for qwen3moe.
  const std::string keyless = rewrite(make_model(norm, "moe_keyless_src.gguf"), "moe_keyless.gguf",
                                      [](gguf::Metadata& m) { m.erase("qwen3moe.expert_weights_norm"); });
  EXPECT_TRUE(config_from_gguf(gguf::File(keyless)).expert_weights_norm);
}

// gpt-oss: Q/K/V and output biases, sinks (random, some above the scores), sliding layers of
// window 8 under a 40-token prompt, YaRN, biased router, clamped SwiGLU with expert biases.
TEST(ArchOptions, GptOssForwardMatchesFloat64Reference) {
  const ModelConfig c = builtin_config("gpt-oss-tiny");
  const std::string path = make_model(c, "ref_oss.gguf");
  const ModelConfig back = config_from_gguf(gguf::File(path));
  EXPECT_EQ(back.arch, Arch::gpt_oss);
  EXPECT_EQ(back.is_local, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(back.sliding_window, 8);
  EXPECT_EQ(back.yarn_factor, 32.0f);
  EXPECT_EQ(back.yarn_original_context, 4096);
  EXPECT_FALSE(back.yarn_truncate);
  EXPECT_EQ(back.rope_base_local, 150000.0f);
  EXPECT_EQ(back.layer_kinds, c.layer_kinds);
  EXPECT_TRUE(back.attn_sinks && back.attn_output_bias && back.expert_bias && back.ffn_norm_post_attention_name);
  EXPECT_EQ(back.ffn_activation, FfnActivation::swiglu_oai);
  // The divisors span 1 (extrapolated pairs) to the factor (interpolated ones).
  const std::vector<float> d = back.yarn_divisors();
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d.front(), 1.0f);
  EXPECT_NEAR(d.back(), 32.0f, 1e-4);
  expect_matches_reference(path, 1e-4);
}

// A gpt-oss file with a sink tensor of the wrong length, a missing expert bias or a
// YaRN without its original context: one line each.
TEST(ArchOptions, ContradictoryGptOssFilesFailWithOneLine) {
  const std::string good = make_model(builtin_config("gpt-oss-tiny"), "oss_bad_src.gguf");
  const std::vector<BadFileCase> cases = {
      {"sinks", "blk.1.attn_sinks.weight' has shape [5], the config needs [4]", nullptr, "blk.1.attn_sinks.weight",
       {"blk.1.attn_sinks.weight", gguf::GgmlType::F32, {5}}},
      {"no_down_bias", "blk.2.ffn_down_exps.bias' is missing", nullptr, "blk.2.ffn_down_exps.bias", {}},
      {"no_router_bias", "blk.0.ffn_gate_inp.bias' is missing", nullptr, "blk.0.ffn_gate_inp.bias", {}},
      {"yarn_orig", "gpt-oss.rope.scaling.original_context_length",
       [](gguf::Metadata& m) { m.erase("gpt-oss.rope.scaling.original_context_length"); }, "", {}},
      {"yarn_factor", "'gpt-oss.rope.scaling.factor' must be at least 1",
       [](gguf::Metadata& m) { m.set("gpt-oss.rope.scaling.factor", gguf::Value::f32(0.5f)); }, "", {}},
      {"no_window", "gpt-oss.attention.sliding_window", [](gguf::Metadata& m) { m.erase("gpt-oss.attention.sliding_window"); },
       "", {}},
  };
  expect_one_line_refusals(good, cases);
}

// A Qwen3-MoE file whose expert count, top-k or expert tensors disagree: one line each.
TEST(ArchOptions, ContradictoryExpertFilesFailWithOneLine) {
  const std::string good = make_model(builtin_config("qwen3moe-tiny"), "moe_bad_src.gguf");
  const std::vector<BadFileCase> cases = {
      {"count", "blk.0.ffn_gate_inp.weight' has shape [64, 6], the config needs [64, 7]",
       [](gguf::Metadata& m) { m.set("qwen3moe.expert_count", gguf::Value::u32(7)); }, "", {}},
      {"top_k", "qwen3moe.expert_used_count' (9) exceeds qwen3moe.expert_count (6)",
       [](gguf::Metadata& m) { m.set("qwen3moe.expert_used_count", gguf::Value::u32(9)); }, "", {}},
      {"no_top_k", "qwen3moe.expert_used_count", [](gguf::Metadata& m) { m.erase("qwen3moe.expert_used_count"); },
       "", {}},
      {"ff_exp", "blk.0.ffn_gate_exps.weight' has shape [64, 32, 6], the config needs [64, 16, 6]",
       [](gguf::Metadata& m) { m.set("qwen3moe.expert_feed_forward_length", gguf::Value::u32(16)); }, "", {}},
      {"down", "blk.1.ffn_down_exps.weight' has shape [16, 64, 6], the config needs [32, 64, 6]", nullptr, "",
       {"blk.1.ffn_down_exps.weight", gguf::GgmlType::F32, {16, 64, 6}}},
      {"no_up", "blk.3.ffn_up_exps.weight' is missing", nullptr, "blk.3.ffn_up_exps.weight", {}},
      {"dense_layer", "blk.2.ffn_gate.weight' is missing", nullptr, "blk.2.ffn_gate.weight", {}},
  };
  expect_one_line_refusals(good, cases);
}

// RoPE scaling a file states but squeeze cannot run, or states wrongly: one line each.
TEST(ArchOptions, RopeScalingSqueezeDoesNotRunIsRefusedByName) {
  ModelConfig c = builtin_config("glimmer-tiny");
  set_arch_defaults(c, Arch::llama);
  c.sliding_window = 0, c.is_local = all_global_pattern(c.n_layer);
  const std::string good = make_model(c, "rope_scaling.gguf");
  const auto with = [&](const std::string& name, const std::function<void(gguf::Metadata&)>& edit,
                        const gguf::TensorSpec& add = {}) { return load_error(rewrite(good, name, edit, "", add)); };
  const auto set_type = [](const char* t) {
    return [t](gguf::Metadata& m) { m.set("llama.rope.scaling.type", gguf::Value::string(t)); };
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with("longrope.gguf", set_type("longrope")),
       "'llama.rope.scaling.type' is 'longrope', which squeeze does not implement yet"},
      {with("yarn.gguf", set_type("yarn")), "llama.rope.scaling.factor"},
      {with("odd.gguf", set_type("ntk-by-parts")), "is 'ntk-by-parts', an unknown RoPE scaling"},
      {with("linear_no_factor.gguf", set_type("linear")), "is 'linear' without llama.rope.scaling.factor"},
      {with("shrink.gguf", [](gguf::Metadata& m) { m.set("llama.rope.scaling.factor", gguf::Value::f32(0.5f)); }),
       "'llama.rope.scaling.factor' must be at least 1"},
      {with("freqs_len.gguf", nullptr, {"rope_freqs.weight", gguf::GgmlType::F32, {5}}),
       "tensor 'rope_freqs.weight' has shape [5], the config needs [8]"},
  };
  for (const auto& [msg, needle] : cases) {
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  // A factor read as llama.cpp reads it: positions divided, whatever the type says.
  const ModelConfig scaled = config_from_gguf(gguf::File(rewrite(good, "linear4.gguf", [](gguf::Metadata& m) {
    m.set("llama.rope.scaling.type", gguf::Value::string("linear"));
    m.set("llama.rope.scaling.factor", gguf::Value::f32(4.0f));
  })));
  EXPECT_EQ(scaled.rope_freq_scale, 0.25f);
}

TEST(ArchOptions, MuseGlimmerForwardMatchesFloat64Reference) {
  const std::string path = make_model(builtin_config("muse-glimmer-tiny"), "ref_muse.gguf");
  expect_matches_reference(path, 1e-4);
  // a soft-cap small enough to bend the logits, a separate local base and a different scale
  expect_matches_reference(rewrite(path, "ref_muse_cap.gguf", [](gguf::Metadata& m) {
                             m.set("muse-glimmer.final_logit_softcapping", gguf::Value::f32(1.5f));
                             m.set("muse-glimmer.logit_scale", gguf::Value::f32(3.0f));
                             m.set("muse-glimmer.rope.freq_base_swa", gguf::Value::f32(77.0f));
                           }),
                           1e-4);
}

TEST(ArchOptions, MuseGlimmerDefaultsAndFileKeys) {
  const ModelConfig c = builtin_config("muse-glimmer-30b");
  EXPECT_EQ(describe_pattern(c.is_local), "[L L L G] x 13");
  EXPECT_TRUE(c.nope_global && c.attn_gate && c.embd_norm && c.qk_norm && !c.tied_output);
  EXPECT_NEAR(c.logit_scale, 0.19611613513818404, 1e-7);
  EXPECT_EQ(c.final_logit_softcap, 20.0f);
  EXPECT_EQ(c.effective_post_norm_eps(), 1e-8f);
  // counted back from the last layer: 6 layers → globals 1 and 5
  EXPECT_EQ(period_pattern_from_last(6, 4), (std::vector<bool>{true, false, true, true, true, false}));

  const std::string path = make_model(builtin_config("muse-glimmer-tiny"), "keys_muse.gguf");
  const gguf::File f(path);
  const ModelConfig r = config_from_gguf(f);
  EXPECT_EQ(r.is_local, builtin_config("muse-glimmer-tiny").is_local);
  EXPECT_EQ(r.logit_scale, builtin_config("muse-glimmer-tiny").logit_scale);
  EXPECT_EQ(r.rope_base_local, r.rope_base_global);
  EXPECT_EQ(f.metadata().find("muse-glimmer.rope.freq_base_swa"), nullptr);  // written only when it differs
  ASSERT_NE(f.find_tensor("blk.0.attn_gate.weight"), nullptr);

  // llama.cpp requires the logit scale, the window and an untied head
  EXPECT_NE(load_error(rewrite(path, "muse_no_scale.gguf", [](gguf::Metadata& m) { m.erase("muse-glimmer.logit_scale"); }))
                .find("muse-glimmer.logit_scale"),
            std::string::npos);
  EXPECT_NE(load_error(rewrite(path, "muse_no_window.gguf",
                               [](gguf::Metadata& m) { m.erase("muse-glimmer.attention.sliding_window"); }))
                .find("sliding_window"),
            std::string::npos);
  EXPECT_NE(load_error(rewrite(path, "muse_tied.gguf", nullptr, "output.weight")).find("'output.weight' is missing"),
            std::string::npos);
  EXPECT_NE(load_error(rewrite(path, "muse_no_gate.gguf", nullptr, "blk.2.attn_gate.weight"))
                .find("'blk.2.attn_gate.weight' is missing"),
            std::string::npos);
  // without the key, the soft-cap is llama.cpp's default
  EXPECT_EQ(config_from_gguf(gguf::File(rewrite(path, "muse_no_cap.gguf", [](gguf::Metadata& m) {
              m.erase("muse-glimmer.final_logit_softcapping");
            }))).final_logit_softcap,
            30.0f);
}

TEST(ArchOptions, Gemma3HeadDim256WithOneKvHead) {
  // the 270m's attention shape (4 / 1 heads of 256) at a small width
  ModelConfig c = gemma3_tiny();
  c.n_layer = 6, c.n_head = 4, c.n_head_kv = 1, c.head_dim = 256;
  set_arch_defaults(c, Arch::gemma3);
  expect_matches_reference(make_model(c, "ref_gemma3_d256.gguf"), 1e-4);
}
