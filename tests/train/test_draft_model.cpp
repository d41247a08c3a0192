// tests/train/test_draft_model.cpp — the drafter's training forward computes, for every
// block of a sequence, what the inference pass (model::DraftContext) computes for that
// block alone: the block mask lets no block see another or the context at or after its
// anchor. And its export loads as a drafter.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "model/drafter.h"
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

}  // namespace
