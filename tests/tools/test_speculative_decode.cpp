// tests/tools/test_speculative_decode.cpp — speculative decoding through cli::decode (the
// loop of generate and chat) is lossless: greedy output equals plain greedy output token for
// token with every draft source (a random DFlash drafter that is almost never right, prompt
// lookup, and a self-drafting source that is usually right and sometimes wrong on purpose);
// seeded sampling draws the very same tokens; and the distribution of a token decided inside
// a verification matches the target's exact marginal (chi-square).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <vector>

#include "generate/decode.h"
#include "sampling_options.h"
#include "model/drafter.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/session.h"
#include "model/speculative.h"
#include "text/sampler.h"
#include "text/stop.h"

using namespace squeeze;
using namespace squeeze::model;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("squeeze_specdec_" + std::to_string(::getpid()) + "_" + name)).string();
}

struct Fixture {
  std::string model_path = temp_path("target.gguf"), drafter_path = temp_path("drafter.gguf");
  std::unique_ptr<Model> model;
  std::unique_ptr<Drafter> drafter;
  Fixture() {
    ModelConfig c = builtin_config("muse-glimmer-tiny");  // window 8: rings wrap during verifies
    write_random_model({.config = c, .type = gguf::GgmlType::Q8_0, .seed = 21, .path = model_path});
    model = Model::load(model_path);
    const DraftConfig d = default_draft_config(model->config(), 2, 8, /*mask=*/7, /*window=*/6);
    write_random_drafter(d, gguf::GgmlType::Q8_0, 22, drafter_path);
    drafter = Drafter::load(drafter_path, *model);
  }
  ~Fixture() {
    std::filesystem::remove(model_path);
    std::filesystem::remove(drafter_path);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// Drafts the target's own greedy continuation from a second session (so most drafts are
// kept under greedy decoding), with every `wrong_every`-th draft replaced by another token.
class SelfDraftSource final : public DraftSource {
 public:
  SelfDraftSource(const Model& m, int wrong_every) : m_(m), s_(m, {.n_ctx = 400, .batch = 16}), wrong_every_(wrong_every) {}
  void commit(std::span<const int32_t> tokens, const float*) override { s_.forward(tokens); }
  int64_t size() const override { return s_.position(); }
  void truncate(int64_t pos) override { s_.truncate(pos); }
  int64_t max_proposal() const override { return 7; }
  std::vector<int32_t> propose(int32_t anchor, int64_t max_tokens) override {
    const int64_t start = s_.position();
    std::vector<int32_t> out;
    int32_t t = anchor;
    for (int64_t j = 0; j < max_tokens && s_.position() + 1 < 400; ++j) {
      const auto l = s_.forward(std::span<const int32_t>(&t, 1));
      t = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
      if (++calls_ % wrong_every_ == 0) t = (t + 1) % static_cast<int32_t>(m_.config().n_vocab);
      out.push_back(t);
    }
    s_.truncate(start);
    return out;
  }

 private:
  const Model& m_;
  Session s_;
  int wrong_every_;
  int64_t calls_ = 0;
};

struct Generated {
  std::string text;
  std::vector<int32_t> tokens;  // emitted ids
  SpeculatorStats stats;
};

// `source` null: plain decoding. Generation ignores end-of-sequence and runs n tokens.
Generated generate(const std::vector<int32_t>& prompt, int64_t n, const text::SamplerParams& sp, DraftSource* source,
             int64_t max_drafts = 7, bool adaptive = false) {
  const Model& m = *fixture().model;
  Session session(m, {.n_ctx = 400, .batch = 16});
  std::unique_ptr<Speculator> spec;
  if (source) spec = std::make_unique<Speculator>(session, *source, SpeculatorParams{.max_drafts = max_drafts, .adaptive = adaptive});
  const auto logits = spec ? spec->prefill(prompt) : session.forward(prompt);
  const std::vector<int32_t> banned = generate::unused_tokens(m.tokenizer());
  generate::Sequence seq(m.tokenizer(), text::Sampler(sp), {.stop = {.max_tokens = n}, .n_ctx = session.n_ctx()},
                         nullptr, banned);
  seq.start(session.position(), prompt);
  Generated r;
  std::vector<int32_t> forwarded;
  generate::decode(session, seq, logits, {.forwarded = &forwarded, .speculator = spec.get()},
              [&](const std::string& s) { r.text += s; });
  r.tokens.assign(forwarded.begin(), forwarded.end());
  if (spec) r.stats = spec->stats();
  return r;
}

std::vector<int32_t> prompt_tokens(uint32_t seed, int64_t n) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(10, 300);  // the random tokenizer's real tokens
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (auto& t : p) t = d(rng);
  return p;
}

TEST(SpeculativeDecode, GreedyEqualsPlainWithEverySource) {
  const Model& m = *fixture().model;
  const text::SamplerParams greedy{.temperature = 0, .top_k = 0, .top_p = 1, .min_p = 0};
  for (uint32_t seed : {1u, 2u}) {
    // a prompt that repeats itself, so prompt lookup finds matches
    auto prompt = prompt_tokens(seed, 20);
    prompt.insert(prompt.end(), prompt.begin(), prompt.begin() + 15);
    const Generated plain = generate(prompt, 120, greedy, nullptr);
    ASSERT_EQ(plain.tokens.size(), 119u);  // the last token is sampled, not run
    DFlashSource dflash(*fixture().drafter);
    PromptLookupSource lookup(7);
    SelfDraftSource self(m, 5);
    for (auto [name, source] : {std::pair<const char*, DraftSource*>{"dflash", &dflash}, {"lookup", &lookup}, {"self", &self}}) {
      SCOPED_TRACE(std::string(name) + " seed " + std::to_string(seed));
      const Generated spec = generate(prompt, 120, greedy, source);
      EXPECT_EQ(spec.text, plain.text);
      EXPECT_GT(spec.stats.verify_steps, 0);
      if (std::string(name) == "self") {  // long runs kept and rejections both happened
        EXPECT_GT(spec.stats.tau(), 1.8);
        EXPECT_LT(spec.stats.accepted, spec.stats.drafted);
      }
    }
  }
}

TEST(SpeculativeDecode, AdaptiveDraftLengthStaysLossless) {
  const text::SamplerParams greedy{.temperature = 0, .top_k = 0, .top_p = 1, .min_p = 0};
  const auto prompt = prompt_tokens(3, 30);
  const Generated plain = generate(prompt, 150, greedy, nullptr);
  DFlashSource dflash(*fixture().drafter);  // random: the controller should mostly stop drafting
  const Generated spec = generate(prompt, 150, greedy, &dflash, 7, /*adaptive=*/true);
  EXPECT_EQ(spec.text, plain.text);
  EXPECT_LT(spec.stats.verify_steps, spec.stats.steps);  // it chose plain steps
}

TEST(SpeculativeDecode, SeededSamplingDrawsTheSameTokens) {
  const auto prompt = prompt_tokens(4, 25);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const text::SamplerParams sp{.temperature = 0.7f, .top_k = 20, .top_p = 0.95f, .min_p = 0.0f, .repeat_penalty = 1.1f, .seed = seed};
    const Generated plain = generate(prompt, 60, sp, nullptr);
    SelfDraftSource self(*fixture().model, 4);
    const Generated spec = generate(prompt, 60, sp, &self);
    EXPECT_EQ(spec.text, plain.text) << "seed " << seed;
  }
}

// The second generated token is decided inside a verification (its draft kept or replaced
// by the target's pick). Its frequency over many seeded runs must match the exact marginal
// p(y2) = Σ_y1 p(y1) · p(y2 | y1) under the sampler's own distribution (top-k 3), which a
// few forward passes enumerate.
TEST(SpeculativeDecode, SampledDistributionIsTheTargets) {
  const Model& m = *fixture().model;
  const auto prompt = prompt_tokens(5, 6);
  const text::SamplerParams sp{.temperature = 1.5f, .top_k = 3, .top_p = 1.0f, .min_p = 0.0f};
  std::map<int32_t, double> expected;
  {
    // decode never samples the vocabulary's unused (padding) tokens
    const auto usable = [&](std::span<const float> l) {
      std::vector<float> v(l.begin(), l.end());
      for (int32_t id = 0; id < m.tokenizer().n_vocab(); ++id)
        if (m.tokenizer().token_type(id) == text::TokenType::unused) v[static_cast<size_t>(id)] = -INFINITY;
      return v;
    };
    Session s(m, {.n_ctx = 64, .batch = 16});
    text::Sampler sampler(sp);
    const auto l0 = usable(s.forward(prompt));
    for (const auto& c1 : sampler.distribution(l0)) {
      s.truncate(static_cast<int64_t>(prompt.size()));
      const auto l1 = usable(s.forward(std::span<const int32_t>(&c1.id, 1)));
      for (const auto& c2 : sampler.distribution(l1)) expected[c2.id] += c1.p * c2.p;
    }
  }
  const int runs = 1500;
  std::map<int32_t, int> seen;
  int64_t kept = 0, drafted = 0;
  for (int i = 0; i < runs; ++i) {
    text::SamplerParams p = sp;
    p.seed = static_cast<uint64_t>(1000 + i);
    SelfDraftSource self(m, 1000000);
    const Generated r = generate(prompt, 3, p, &self, 2);
    ASSERT_GE(r.tokens.size(), 2u);
    ++seen[r.tokens[1]];
    kept += r.stats.accepted, drafted += r.stats.drafted;
  }
  double chi2 = 0;
  for (const auto& [id, prob] : expected) {
    const double e = prob * runs, o = seen.count(id) ? seen[id] : 0;
    chi2 += (o - e) * (o - e) / e;
  }
  for (const auto& [id, n] : seen) EXPECT_TRUE(expected.count(id)) << "token " << id << " has probability 0";
  // df = categories − 1; critical value at α = 0.001 (Wilson–Hilferty)
  const double df = static_cast<double>(expected.size()) - 1, z = 3.090;
  const double crit = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
  EXPECT_LT(chi2, crit) << "chi-square " << chi2 << " over " << expected.size() << " tokens";
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, drafted);  // both outcomes of the verification were exercised
}

}  // namespace
