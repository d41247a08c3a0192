// tests/train/test_train_model.cpp — the training model against the inference model:
// export a freshly initialised training model to GGUF, load it with model::Model, and
// compare the training forward's logits with model::Session's (f32 KV cache) on the
// same tokens. This pins the two implementations (names, layouts, RoPE, window, GQA,
// tied head) together.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "model/model.h"
#include "model/session.h"
#include "train/corpus.h"
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

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("squeeze_train_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(TrainModel, ForwardMatchesInferenceOnExportedFile) {
  for (bool tied : {true, false}) {
    const model::ModelConfig c = tiny_config(tied);
    GlimmerModel m = GlimmerModel::init(c, train_tokenizer(kText, c.n_vocab), {.seed = 5});
    const std::string path = temp_path(tied ? "tied.gguf" : "untied.gguf");
    m.export_gguf(path, "train-test");
    const auto loaded = model::Model::load(path);
    ASSERT_EQ(loaded->config().tied_output, tied);

    const int64_t S = 13, B = 2;
    std::mt19937 rng(3);
    std::vector<int32_t> tokens(static_cast<size_t>(B * S));
    for (auto& tk : tokens) tk = static_cast<int32_t>(rng() % c.n_vocab);
    Tape<float> t;
    const Var logits = m.forward(t, tokens, S);
    ASSERT_EQ(t.rows(logits), B * S);

    for (int64_t b = 0; b < B; ++b) {
      model::Session s(*loaded, {.n_ctx = 64, .batch = 5, .kv_type = model::KvType::F32});
      const auto ref = s.forward(std::span<const int32_t>(tokens).subspan(static_cast<size_t>(b * S), S), true);
      float max_abs = 0, max_diff = 0;
      for (int64_t i = 0; i < S * c.n_vocab; ++i) {
        max_abs = std::max(max_abs, std::abs(ref[static_cast<size_t>(i)]));
        max_diff = std::max(max_diff, std::abs(ref[static_cast<size_t>(i)] - t.value(logits)[b * S * c.n_vocab + i]));
      }
      // Both are f32 with different summation orders (BLAS vs our GEMM tiles, two-pass vs
      // online softmax): errors of a few ulp per reduction over ≤ 48 terms and 9 steps,
      // i.e. ~1e-5 of the logits' scale; 1e-4 leaves room, while any real mismatch
      // (wrong pairing, window off by one, wrong head mapping) moves logits by O(1).
      EXPECT_LT(max_diff, 1e-4f * std::max(1.0f, max_abs)) << "sequence " << b << (tied ? " tied" : " untied");
      EXPECT_GT(max_abs, 0.1f);
    }
    std::filesystem::remove(path);
  }
}

TEST(TrainModel, LoadRoundTripsEveryTensor) {
  const model::ModelConfig c = tiny_config(false);
  GlimmerModel m = GlimmerModel::init(c, train_tokenizer(kText, c.n_vocab), {.seed = 9});
  const std::string path = temp_path("roundtrip.gguf");
  m.export_gguf(path, "train-test");
  GlimmerModel back = GlimmerModel::load(path);
  ASSERT_EQ(back.params().size(), m.params().size());
  for (size_t i = 0; i < m.params().size(); ++i) {
    EXPECT_EQ(back.params()[i].name, m.params()[i].name);
    EXPECT_EQ(back.params()[i].value, m.params()[i].value) << m.params()[i].name;
  }
  EXPECT_EQ(back.tokenizer().tokens, m.tokenizer().tokens);
  std::filesystem::remove(path);
}

TEST(TrainModel, BackwardFillsEveryGradient) {
  const model::ModelConfig c = tiny_config(true);
  GlimmerModel m = GlimmerModel::init(c, train_tokenizer(kText, c.n_vocab), {.seed = 2});
  std::vector<int32_t> tokens(26), targets(26);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 37) % 300), targets[i] = static_cast<int32_t>((i * 11) % 300);
  Tape<float> t;
  const Var loss = cross_entropy(t, m.forward(t, tokens, 13), targets);
  // Fresh weights give near-uniform predictions: loss ≈ log V.
  EXPECT_NEAR(t.value(loss)[0], std::log(300.0f), 1.0f);
  t.backward(loss);
  for (const Parameter& p : m.params()) {
    double s = 0;
    for (float g : p.grad) s += std::abs(g);
    EXPECT_GT(s, 0.0) << p.name;
  }
}

}  // namespace
}  // namespace squeeze::train
