// tests/serve/test_agent_context.cpp — an agent's context keeping the last screenshots
// (serve/agent_context.h), on the shipped Muse Glimmer KJV student with a random small
// projector:
//  - the retention rule, one at a time and in batches; the context holds exactly the kept
//    screenshots and a placeholder for each older one;
//  - reuse: after every step of a trajectory, the logits with prefix reuse (roll back, or
//    restore a ring snapshot) equal those of recomputing the whole context from position
//    0, bit for bit (batch-invariant products), with local rings too small to roll back
//    over an eviction; the prefilled count is exactly the prompt minus where recompute
//    started, and that start is the first change when a snapshot is there.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "serve/agent_context.h"
#include "vision/encoder.h"
#include "vision/image.h"

using namespace squeeze;
using namespace squeeze::serve;

namespace {

struct Fixture {
  std::unique_ptr<model::Model> model = model::Model::load(SQUEEZE_SOURCE_DIR "/models/muse-glimmer-kjv.f16.gguf");
  generate::ChatFormat chat{*model};
  vision::VisionEncoder encoder = vision::VisionEncoder::random(vision::small_encoder_config(256), 11);
  vision::FeatureCache cache{encoder, [] {
                               vision::PreprocessOptions o;
                               o.max_image_tokens = 24;
                               return o;
                             }()};
  std::vector<std::shared_ptr<const vision::ImageFeatures>> screenshots;
  Fixture() {
    for (const char* f : {"rgb_noise.png", "grey.png", "rgba.png", "palette.png", "smooth.jpg", "large.png", "tall.png",
                          "tiny.png"})
      screenshots.push_back(cache.get_file(SQUEEZE_SOURCE_DIR "/tests/fixtures/vision/" + std::string(f)));
  }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

TEST(AgentContext, RetentionRule) {
  // keep 3, one at a time: exactly the last 3.
  for (int64_t n = 0; n <= 10; ++n) EXPECT_EQ(evicted_screenshots(n, 3, 1), std::max<int64_t>(0, n - 3));
  // keep 3, batches of 4: between 3 and 6 stay, evictions four at a time.
  const std::vector<int64_t> batched{0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8};
  for (int64_t n = 0; n < int64_t(batched.size()); ++n) EXPECT_EQ(evicted_screenshots(n, 3, 4), batched[size_t(n)]) << n;
  EXPECT_THROW(evicted_screenshots(1, 3, 0), Error);
}

TEST(AgentContext, KeepsExactlyTheLastScreenshots) {
  model::Session session(*fx().model, {.n_ctx = 2048});
  AgentContext agent(session, fx().chat, vision::ImageTokenIds::of(fx().model->tokenizer()), {.keep = 3});
  for (int i = 0; i < 7; ++i) {
    agent.observe(fx().screenshots[size_t(i)], "step " + std::to_string(i));
    agent.act("click(" + std::to_string(i) + ", 10)");
  }
  agent.observe(fx().screenshots[7], "step 7");
  EXPECT_EQ(agent.kept(), (std::vector<int64_t>{5, 6, 7}));
  const std::string text = agent.messages().dump();
  size_t placeholders = 0, images = 0;
  for (size_t at = 0; (at = text.find("earlier screenshot removed", at)) != std::string::npos; ++at) ++placeholders;
  for (size_t at = 0; (at = text.find("\"image\"", at)) != std::string::npos; ++at) ++images;
  EXPECT_EQ(placeholders, 5u);
  EXPECT_EQ(images, 3u);
  const AgentSync s = agent.sync();
  EXPECT_EQ(s.in_context, 3);
  EXPECT_EQ(s.screenshots, 8);
  EXPECT_THROW(agent.observe(fx().screenshots[0]), Error);  // no action after the last observation
}

TEST(AgentContext, ReuseGivesTheLogitsOfAFullRecompute) {
  const vision::ImageTokenIds tokens = vision::ImageTokenIds::of(fx().model->tokenizer());
  // Rings of 64 + 8 slots: an eviction's first change soon falls out of a plain rollback's reach.
  const model::SessionParams sp{.n_ctx = 2048, .batch = 8, .kv_headroom = 8, .batch_invariant = true};
  for (const int64_t batch : {int64_t(1), int64_t(2)}) {
    model::Session full_s(*fx().model, sp), prefix_s(*fx().model, sp), snap_s(*fx().model, sp);
    AgentContext full(full_s, fx().chat, tokens, {.keep = 2, .batch = batch, .reuse = AgentReuse::none});
    AgentContext prefix(prefix_s, fx().chat, tokens, {.keep = 2, .batch = batch, .reuse = AgentReuse::prefix});
    AgentContext snap(snap_s, fx().chat, tokens, {.keep = 2, .batch = batch, .reuse = AgentReuse::snapshots});
    int snapshot_restores = 0, extends = 0;
    for (AgentContext* a : {&full, &prefix, &snap}) a->set_system("You operate a computer.");
    for (int step = 0; step < 8; ++step) {
      for (AgentContext* a : {&full, &prefix, &snap}) a->observe(fx().screenshots[size_t(step)], "what next?");
      const AgentSync f = full.sync(), p = prefix.sync(), s = snap.sync();
      for (const AgentSync* x : {&f, &p, &s}) {
        EXPECT_EQ(x->prompt_tokens, f.prompt_tokens);
        EXPECT_EQ(x->prefilled, x->prompt_tokens - x->recompute_from);
      }
      EXPECT_EQ(f.recompute_from, 0);
      EXPECT_EQ(f.prefilled, f.prompt_tokens);
      if (std::string(s.how) == "snapshot") {
        ++snapshot_restores;
        EXPECT_EQ(s.recompute_from, s.first_change);  // evictions edit at a screenshot's start
        EXPECT_EQ(p.recompute_from, 0);               // the rings alone cannot go back there
      }
      extends += std::string(s.how) == "extend" || std::string(s.how) == "rollback";
      EXPECT_GE(s.recompute_from, p.recompute_from);
      const auto lf = full.logits(), lp = prefix.logits(), ls = snap.logits();
      ASSERT_EQ(lf.size(), ls.size());
      for (size_t i = 0; i < lf.size(); ++i) {
        ASSERT_EQ(lp[i], lf[i]) << "step " << step << " logit " << i;
        ASSERT_EQ(ls[i], lf[i]) << "step " << step << " logit " << i;
      }
      for (AgentContext* a : {&full, &prefix, &snap}) a->act("click(" + std::to_string(10 * step) + ", 20)");
    }
    EXPECT_GT(snapshot_restores, 0) << "batch " << batch;
    EXPECT_GT(extends, 0) << "batch " << batch;
  }
}

}  // namespace
