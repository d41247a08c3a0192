// tests/train/test_train_model.cpp — the training model against the inference model:
// export a freshly initialised training model to GGUF, load it with model::Model, and
// compare the training forward's logits with model::Session's (f32 KV cache) on the
// same tokens. This pins the two implementations (names, layouts, RoPE, window, GQA,
// tied head, and Muse Glimmer's options) together. And the whole muse-glimmer model's
// gradients against finite differences of its loss, in float64.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "model/model.h"
#include "model/session.h"
#include "train/corpus.h"
#include "train/glimmer_forward.h"
#include "train/glimmer_model.h"
#include "train/ops.h"

namespace squeeze::train {
namespace {

constexpr const char* kText =
    "The keeper of the light climbed the stair at dusk and trimmed the wick. "
    "Ships passed in the dark and found the harbour by the flash of the lamp. ";

model::ModelConfig tiny_config(bool tied) {
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.name = "train-test";
  c.n_layer = 4;  // [L L L G]
  c.is_local = model::period_pattern(4, 4);
  c.n_embd = 32, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 8, c.n_ff = 48, c.n_vocab = 300;
  c.sliding_window = 4;  // well below the 13-token sequences: the pattern matters
  c.tied_output = tied;
  return c;
}

// Every Muse Glimmer option on: embedding norm, pre+post norms (post eps 1e-8), QK-norm,
// sigmoid attention gate, NoPE global layers (1 and 5 of [L G L L L G]), window 8, untied
// head, logits × 2 (1/sqrt(64/256)) then soft-capped at 20.
model::ModelConfig muse_config() {
  model::ModelConfig c = model::builtin_config("muse-glimmer-tiny");
  c.name = "train-test-muse";
  return c;
}

// Norm weights away from their initial 1, so that a swapped, misplaced or ignored norm
// weight (q vs k norm, pre vs post) changes the result.
void perturb_norms(GlimmerModel& m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  for (Parameter& p : m.params())
    if (p.is_norm())
      for (float& v : p.value) v += nd(rng);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("squeeze_train_" + std::to_string(::getpid()) + "_" + name)).string();
}

struct Mismatch {
  float max_diff = 0, max_abs = 0;  // over every logit of every sequence
};

// Exports m, runs B random sequences of S tokens through model::Session (f32 KV, chunks of
// 5 tokens, all logits) and through the training forward, and compares the logits.
Mismatch compare_with_session(GlimmerModel& m, const std::string& file, int64_t S, int64_t B, uint64_t seed) {
  const model::ModelConfig& c = m.config();
  const std::string path = temp_path(file);
  m.export_gguf(path, c.name);
  const auto loaded = model::Model::load(path);
  EXPECT_EQ(loaded->config().arch, c.arch);
  EXPECT_EQ(loaded->config().tied_output, c.tied_output);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::vector<int32_t> tokens(static_cast<size_t>(B * S));
  for (auto& tk : tokens) tk = static_cast<int32_t>(rng() % c.n_vocab);
  Tape<float> t;
  const Var logits = m.forward(t, tokens, S);
  EXPECT_EQ(t.rows(logits), B * S);
  Mismatch r;
  for (int64_t b = 0; b < B; ++b) {
    model::Session s(*loaded, {.n_ctx = 64, .batch = 5, .kv_type = model::KvType::F32});
    const auto ref = s.forward(std::span<const int32_t>(tokens).subspan(static_cast<size_t>(b * S), S), true);
    for (int64_t i = 0; i < S * c.n_vocab; ++i) {
      r.max_abs = std::max(r.max_abs, std::abs(ref[static_cast<size_t>(i)]));
      r.max_diff = std::max(r.max_diff, std::abs(ref[static_cast<size_t>(i)] - t.value(logits)[b * S * c.n_vocab + i]));
    }
  }
  std::filesystem::remove(path);
  return r;
}

TEST(TrainModel, ForwardMatchesInferenceOnExportedFile) {
  for (bool tied : {true, false}) {
    const model::ModelConfig c = tiny_config(tied);
    GlimmerModel m = GlimmerModel::init(c, train_tokenizer(kText, c.n_vocab), {.seed = 5});
    const Mismatch r = compare_with_session(m, tied ? "tied.gguf" : "untied.gguf", 13, 2, 3);
    // Both are f32 with different summation orders (BLAS vs our GEMM tiles, two-pass vs
    // online softmax): errors of a few ulp per reduction over ≤ 48 terms and 9 steps,
    // i.e. ~1e-5 of the logits' scale; 1e-4 leaves room, while any real mismatch
    // (wrong pairing, window off by one, wrong head mapping) moves logits by O(1).
    EXPECT_LT(r.max_diff, 1e-4f * std::max(1.0f, r.max_abs)) << (tied ? "tied" : "untied");
    EXPECT_GT(r.max_abs, 0.1f);
  }
}

TEST(TrainModel, MuseGlimmerForwardMatchesInference) {
  const model::ModelConfig c = muse_config();
  GlimmerModel m = GlimmerModel::init(c, train_tokenizer(kText, c.n_vocab), {.seed = 8});
  perturb_norms(m, 6);
  // 40 tokens: 5 windows of 8, so the local layers' rings wrap several times (Session feeds
  // chunks of 5) while the NoPE global layers see the whole prefix.
  const Mismatch r = compare_with_session(m, "muse.gguf", 40, 2, 4);
  std::printf("muse-glimmer-tiny: max |train - session| = %.3g, max |logit| = %.3g, relative %.3g\n", r.max_diff,
              r.max_abs, r.max_diff / r.max_abs);
  // The same f32 bound as above (6 layers, reductions over ≤ 128 terms); the logits are
  // soft-capped at 20, so O(1) mismatches of any option (gate, NoPE, norm placement or
  // eps, QK-norm, logit scale) cannot hide under the cap.
  EXPECT_LT(r.max_diff, 1e-4f * std::max(1.0f, r.max_abs));
  EXPECT_GT(r.max_abs, 1.0f);
}

TEST(TrainModel, LoadRoundTripsEveryTensor) {
  for (const model::ModelConfig& c : {tiny_config(false), muse_config()}) {
    GlimmerModel m = GlimmerModel::init(c, train_tokenizer(kText, c.n_vocab), {.seed = 9});
    const std::string path = temp_path("roundtrip.gguf");
    m.export_gguf(path, "train-test");
    GlimmerModel back = GlimmerModel::load(path);
    EXPECT_EQ(back.config().arch, c.arch);
    ASSERT_EQ(back.params().size(), m.params().size());
    for (size_t i = 0; i < m.params().size(); ++i) {
      EXPECT_EQ(back.params()[i].name, m.params()[i].name);
      EXPECT_EQ(back.params()[i].value, m.params()[i].value) << m.params()[i].name;
    }
    EXPECT_EQ(back.tokenizer().tokens, m.tokenizer().tokens);
    std::filesystem::remove(path);
  }
}

TEST(TrainModel, BackwardFillsEveryGradient) {
  for (const model::ModelConfig& c : {tiny_config(true), muse_config()}) {
    GlimmerModel m = GlimmerModel::init(c, train_tokenizer(kText, c.n_vocab), {.seed = 2});
    std::vector<int32_t> tokens(26), targets(26);
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = static_cast<int32_t>((i * 37) % 300), targets[i] = static_cast<int32_t>((i * 11) % 300);
    Tape<float> t;
    const Var loss = cross_entropy(t, m.forward(t, tokens, 13), targets);
    // Fresh weights give logits ~ N(0, σ²) with σ = the logit scale (unit-RMS final norm,
    // head rows of norm 1; muse-glimmer-tiny: 2), so loss ≈ log V + σ²/2.
    const float sigma = c.logit_scale;
    EXPECT_NEAR(t.value(loss)[0], std::log(static_cast<float>(c.n_vocab)) + sigma * sigma / 2, 1.0f) << c.name;
    t.backward(loss);
    for (const Parameter& p : m.params()) {
      double s = 0;
      for (float g : p.grad) s += std::abs(g);
      EXPECT_GT(s, 0.0) << c.name << " " << p.name;
    }
  }
}

// The whole muse-glimmer forward and backward in float64 (record_forward<double>, the code
// GlimmerModel::forward runs in float) against central differences of the loss, on a few
// entries of every kind of parameter. Tolerance as tests/train/test_train_ops.cpp argues:
// with h = 1e-5 truncation and rounding errors are ~1e-10 for a loss of ~6, so 1e-6 of
// max(1e-2, |g|) is far above them and far below what a wrong backward term produces.
TEST(TrainModel, MuseGlimmerGradientsMatchFiniteDifferences) {
  const model::ModelConfig c = muse_config();
  GlimmerModel m = GlimmerModel::init(c, train_tokenizer(kText, c.n_vocab), {.seed = 4});
  perturb_norms(m, 5);
  std::vector<std::vector<double>> values, grads;
  for (const Parameter& p : m.params()) {
    values.emplace_back(p.value.begin(), p.value.end());
    grads.emplace_back(p.value.size(), 0.0);
  }
  auto index_of = [&](std::string_view name) {
    for (size_t i = 0; i < m.params().size(); ++i)
      if (m.params()[i].name == name) return i;
    ADD_FAILURE() << "no parameter " << name;
    return size_t{0};
  };
  const int64_t S = 12, B = 2;  // S > window 8
  std::mt19937 rng(21);
  std::vector<int32_t> tokens(static_cast<size_t>(B * S)), targets(tokens.size());
  for (auto& tk : tokens) tk = static_cast<int32_t>(rng() % c.n_vocab);
  for (auto& tg : targets) tg = static_cast<int32_t>(rng() % c.n_vocab);
  auto loss = [&](bool with_grad) {
    Tape<double> t;
    const ParamLeaf leaf = [&](std::string_view name) {
      const size_t i = index_of(name);
      const Parameter& p = m.params()[i];
      return t.leaf(values[i], with_grad ? std::span<double>(grads[i]) : std::span<double>(), p.rows, p.cols);
    };
    const Var l = cross_entropy(t, record_forward(t, c, leaf, tokens, S), targets);
    if (with_grad) t.backward(l);
    return t.value(l)[0];
  };
  loss(true);

  const char* checked[] = {"token_embd.weight",        "blk.0.attn_norm.weight",     "blk.0.attn_q.weight",
                           "blk.0.attn_q_norm.weight", "blk.1.attn_k_norm.weight",   "blk.1.attn_k.weight",
                           "blk.1.attn_v.weight",      "blk.2.attn_gate.weight",     "blk.5.attn_gate.weight",
                           "blk.3.attn_output.weight", "blk.0.post_attention_norm.weight", "blk.4.ffn_norm.weight",
                           "blk.4.ffn_gate.weight",    "blk.5.ffn_down.weight",      "blk.5.post_ffw_norm.weight",
                           "output_norm.weight",       "output.weight"};
  double worst = 0;  // max |analytic − numeric| / max(1e-2, |numeric|)
  for (const char* name : checked) {
    const size_t i = index_of(name);
    const Parameter& p = m.params()[i];
    for (int k = 0; k < 3; ++k) {
      // Embedding rows of tokens in the batch (the others have no gradient); anywhere else.
      const size_t j = p.name == "token_embd.weight"
                           ? static_cast<size_t>(tokens[rng() % tokens.size()] * p.cols + rng() % p.cols)
                           : rng() % values[i].size();
      const double saved = values[i][j], h = 1e-5;
      values[i][j] = saved + h;
      const double up = loss(false);
      values[i][j] = saved - h;
      const double down = loss(false);
      values[i][j] = saved;
      const double numeric = (up - down) / (2 * h), analytic = grads[i][j];
      worst = std::max(worst, std::abs(analytic - numeric) / std::max(1e-2, std::abs(numeric)));
      EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1e-2, std::abs(numeric))) << name << " [" << j << "]";
      EXPECT_NE(analytic, 0.0) << name << " [" << j << "]";
    }
  }
  std::printf("muse-glimmer-tiny gradient check: max relative error %.3g over %zu entries\n", worst,
              std::size(checked) * 3);
}

}  // namespace
}  // namespace squeeze::train
