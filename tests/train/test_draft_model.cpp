// tests/train/test_draft_model.cpp — the drafter's training forward computes, for every
// block of a sequence, what the inference pass (model::DraftContext) computes for that
// block alone: the block mask lets no block see another or the context at or after its
// anchor. And its export loads as a drafter. A drafter started from the target's layers
// holds exactly those layers, in NeoX pairing where the target rotates adjacent pairs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "model/draft_config.h"
#include "model/drafter.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/weights.h"
#include "train/draft_model.h"

using namespace squeeze;

namespace {

model::DraftConfig tiny_config(int64_t window) {
  model::DraftConfig c;
  c.name = "tiny";
  c.n_layer = 2, c.n_embd = 32, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 8, c.n_ff = 48;
  c.sliding_window = window, c.is_sliding = {true, false}, c.block_size = 4, c.mask_token_id = 1;
  c.target_layers = {0, 2};
  c.rope_base = 1000.0f;
  return c;
}

TEST(DraftModel, TrainingBlocksEqualInferenceBlocks) {
  for (int64_t window : {0, 3}) {
    SCOPED_TRACE("window " + std::to_string(window));
    const model::DraftConfig c = tiny_config(window);
    train::DraftTrainModel m = train::DraftTrainModel::init(c, 5);
    // random norms too, so a misplaced weight shows
    std::mt19937 rng(6);
    std::normal_distribution<float> g;
    for (auto& p : m.params())
      if (p.is_norm()) for (float& v : p.value) v = 1.0f + 0.3f * g(rng);
    const std::string path = (std::filesystem::temp_directory_path() / ("squeeze_draftmodel_" + std::to_string(::getpid()) + ".gguf")).string();
    m.export_gguf(path, "tiny");
    const auto d = model::Drafter::load(path);
    const int64_t E = 32, W = 2 * E, n_ctx = 13, B = 4;
    std::vector<float> taps(static_cast<size_t>(n_ctx * W)), embeds(static_cast<size_t>(3 * B * E));
    for (auto& v : taps) v = g(rng);
    for (auto& v : embeds) v = g(rng);
    const std::vector<int64_t> anchors = {2, 7, 13};
    train::Tape<float> t;
    const train::Var out = m.forward(t, taps, n_ctx, embeds, anchors, B, false);
    for (size_t n = 0; n < anchors.size(); ++n) {
      model::DraftContext ctx(*d);
      ctx.append(taps.data(), anchors[n]);
      std::vector<float> ref(static_cast<size_t>(B * E));
      ctx.propose_embedded(embeds.data() + n * B * E, B, ref.data());
      double diff = 0, scale = 0;
      for (int64_t i = 0; i < B * E; ++i) {
        diff = std::max(diff, std::fabs(static_cast<double>(t.value(out)[static_cast<int64_t>(n) * B * E + i]) - ref[static_cast<size_t>(i)]));
        scale = std::max(scale, std::fabs(static_cast<double>(ref[static_cast<size_t>(i)])));
      }
      EXPECT_LT(diff / scale, 1e-5) << "block " << n;
    }
    std::filesystem::remove(path);
  }
}

// Rotates x[D] in place at position pos: pairs (2i, 2i + 1) when adjacent, else (i, i + D/2).
void rope(std::vector<float>& x, int64_t pos, float base, bool adjacent) {
  const int64_t D = static_cast<int64_t>(x.size());
  for (int64_t i = 0; i < D / 2; ++i) {
    const double a = static_cast<double>(pos) * std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(D));
    const int64_t u = adjacent ? 2 * i : i, v = adjacent ? 2 * i + 1 : i + D / 2;
    const double x0 = x[static_cast<size_t>(u)], x1 = x[static_cast<size_t>(v)];
    x[static_cast<size_t>(u)] = static_cast<float>(x0 * std::cos(a) - x1 * std::sin(a));
    x[static_cast<size_t>(v)] = static_cast<float>(x0 * std::sin(a) + x1 * std::cos(a));
  }
}

// rows [r0, r0 + n) of a [rows, cols] matrix times x
std::vector<float> project(const std::vector<float>& w, int64_t cols, int64_t r0, int64_t n, const std::vector<float>& x) {
  std::vector<float> y(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < cols; ++c) y[static_cast<size_t>(r)] += w[static_cast<size_t>((r0 + r) * cols + c)] * x[static_cast<size_t>(c)];
  return y;
}

TEST(DraftModel, InitFromTargetCopiesItsLayers) {
  model::ModelConfig tc = model::builtin_config("smollm2-135m");  // llama: adjacent-pair RoPE
  tc.n_layer = 4, tc.n_embd = 64, tc.n_head = 4, tc.n_head_kv = 2, tc.head_dim = 16, tc.n_ff = 96;
  tc.n_vocab = 300, tc.n_ctx = 256, tc.is_local = model::all_global_pattern(4);
  const std::string path = (std::filesystem::temp_directory_path() / ("squeeze_draftinit_" + std::to_string(::getpid()) + ".gguf")).string();
  model::write_random_model({.config = tc, .type = gguf::GgmlType::F32, .seed = 3, .path = path});
  const auto target = model::Model::load(path);
  ASSERT_EQ(target->config().rope_type, model::RopeType::normal);
  const model::DraftConfig dc = model::default_draft_config(target->config(), 2, 4, 299, 0);
  const train::DraftTrainModel m = train::DraftTrainModel::init_from_target(dc, *target, 2, 7);
  const auto dense = [](const quant::QMatrix& q) {
    std::vector<float> v(static_cast<size_t>(q.rows * q.cols));
    for (int64_t r = 0; r < q.rows; ++r) model::dequantize_row(q, r, v.data() + r * q.cols);
    return v;
  };
  const auto param = [&](const std::string& name) -> const std::vector<float>& {
    for (const auto& p : m.params())
      if (p.name == name) return p.value;
    ADD_FAILURE() << "no parameter " << name;
    static const std::vector<float> none;
    return none;
  };
  const int64_t E = 64, D = 16;
  std::mt19937 rng(8);
  std::normal_distribution<float> g;
  for (int64_t l = 0; l < 2; ++l) {
    SCOPED_TRACE("draft layer " + std::to_string(l));
    const model::LayerWeights& L = target->weights().layers[static_cast<size_t>(2 + l)];
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(param(b + "attn_norm.weight"), L.attn_norm);
    EXPECT_EQ(param(b + "ffn_norm.weight"), L.ffn_norm);
    EXPECT_EQ(param(b + "attn_v.weight"), dense(L.wv));
    EXPECT_EQ(param(b + "attn_output.weight"), dense(L.wo));
    EXPECT_EQ(param(b + "ffn_gate.weight"), dense(L.w_gate));
    EXPECT_EQ(param(b + "ffn_up.weight"), dense(L.w_up));
    EXPECT_EQ(param(b + "ffn_down.weight"), dense(L.w_down));
    // Attention scores are unchanged: q·k of the target's rows under adjacent-pair RoPE
    // equals q·k of the drafter's rows under NeoX RoPE, for every head and positions.
    const auto tq = dense(L.wq), tk = dense(L.wk);
    const auto& dq = param(b + "attn_q.weight");
    const auto& dk = param(b + "attn_k.weight");
    EXPECT_NE(dq, tq);  // the rows did move
    std::vector<float> x(static_cast<size_t>(E)), y(static_cast<size_t>(E));
    for (auto& v : x) v = g(rng);
    for (auto& v : y) v = g(rng);
    for (int64_t h = 0; h < 4; ++h) {
      const int64_t kh = h / 2;
      auto qt = project(tq, E, h * D, D, x), kt = project(tk, E, kh * D, D, y);
      auto qd = project(dq, E, h * D, D, x), kd = project(dk, E, kh * D, D, y);
      rope(qt, 11, dc.rope_base, true), rope(kt, 4, dc.rope_base, true);
      rope(qd, 11, dc.rope_base, false), rope(kd, 4, dc.rope_base, false);
      double st = 0, sd = 0;
      for (int64_t i = 0; i < D; ++i) st += qt[static_cast<size_t>(i)] * kt[static_cast<size_t>(i)], sd += qd[static_cast<size_t>(i)] * kd[static_cast<size_t>(i)];
      EXPECT_NEAR(sd, st, 1e-4 * std::max(1.0, std::fabs(st))) << "head " << h;
    }
  }
  EXPECT_EQ(param("output_norm.weight"), target->weights().output_norm);
  // fc passes the last tap through: fc · [t0 ; t1] = t1
  std::vector<float> taps(static_cast<size_t>(2 * E));
  for (auto& v : taps) v = g(rng);
  const auto fused = project(param("fc.weight"), 2 * E, 0, E, taps);
  for (int64_t i = 0; i < E; ++i) EXPECT_EQ(fused[static_cast<size_t>(i)], taps[static_cast<size_t>(E + i)]);
  // a target too shallow for the requested layers is refused
  EXPECT_THROW(train::DraftTrainModel::init_from_target(dc, *target, 3, 7), std::exception);
  std::filesystem::remove(path);
  // and one whose layers compute another function (Gemma 3: post-norms, GeGLU)
  model::ModelConfig gc = model::builtin_config("gemma3-tiny");
  gc.n_layer = 4, gc.is_local = model::all_global_pattern(4);
  model::write_random_model({.config = gc, .type = gguf::GgmlType::F32, .seed = 3, .path = path});
  const auto gemma = model::Model::load(path);
  const model::DraftConfig gd = model::default_draft_config(gemma->config(), 2, 4, gc.n_vocab - 1, 0);
  try {
    train::DraftTrainModel::init_from_target(gd, *gemma, 0, 7);
    ADD_FAILURE() << "a Gemma 3 target was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not pre-norm SwiGLU"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
