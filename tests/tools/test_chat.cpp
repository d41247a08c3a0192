// tests/tools/test_chat.cpp — the logic behind `squeeze chat`: conversation turns, fitting
// a conversation into the context by dropping its oldest turns, the KV reuse rule (with a
// fake one-token-per-character "tokenizer"), and against a small random model: reused
// prefixes give the logits a fresh prefill gives, and the chat template's BOS and
// end-of-turn handling.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "chat_cache.h"
#include "generate/conversation.h"
#include "generate/chat_format.h"
#include "common/thrown_message.h"
#include "model/config.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/session.h"

namespace squeeze::cli {

using namespace generate;
namespace {

// One token per byte of "role:content|" for each message: lengths are easy to reason about.
std::vector<int32_t> fake_encode(const chat::Json& messages) {
  std::string text;
  for (const auto& m : messages) text += m["role"].get<std::string>() + ":" + m["content"].get<std::string>() + "|";
  return std::vector<int32_t>(text.begin(), text.end());
}

std::string roles(const chat::Json& messages) {
  std::string out;
  for (const auto& m : messages) out += m["role"].get<std::string>()[0];
  return out;
}

Conversation three_turns() {
  Conversation c;
  c.set_system("sys");
  c.add("user", "one");
  c.add("assistant", "first answer");
  c.add("user", "two");
  c.add("assistant", "second answer");
  c.add("user", "three");
  return c;
}

TEST(Conversation, TurnsStartAtUserMessagesAndTheSystemMessageComesFirst) {
  Conversation c = three_turns();
  EXPECT_EQ(c.n_turns(), 3u);
  EXPECT_EQ(roles(c.to_json()), "suauau");
  EXPECT_EQ(roles(c.to_json(1)), "suau");
  EXPECT_EQ(c.to_json(2)[1]["content"], "three");
  c.drop_oldest_turns(1);
  EXPECT_EQ(c.n_turns(), 2u);
  EXPECT_EQ(c.messages().front().content, "two");
  EXPECT_EQ(c.to_json()[0]["content"], "sys");
  c.set_system("");
  EXPECT_EQ(roles(c.to_json()), "uau");
  c.clear();
  EXPECT_EQ(c.n_turns(), 0u);
}

TEST(FitPrompt, KeepsEverythingThatFitsAndDropsAsFewOldTurnsAsNeeded) {
  const Conversation c = three_turns();
  const size_t full = fake_encode(c.to_json()).size();
  const size_t without_one = fake_encode(c.to_json(1)).size();
  const size_t last_only = fake_encode(c.to_json(2)).size();

  auto fit = fit_prompt(c, fake_encode, static_cast<int64_t>(full));
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->dropped_turns, 0u);
  EXPECT_EQ(fit->ids.size(), full);

  fit = fit_prompt(c, fake_encode, static_cast<int64_t>(full) - 1);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->dropped_turns, 1u);
  EXPECT_EQ(fit->ids, fake_encode(c.to_json(1)));

  fit = fit_prompt(c, fake_encode, static_cast<int64_t>(without_one) - 1);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->dropped_turns, 2u);
  const std::string text(fit->ids.begin(), fit->ids.end());
  EXPECT_EQ(text, "system:sys|user:three|");  // the system message survives every drop

  EXPECT_FALSE(fit_prompt(c, fake_encode, static_cast<int64_t>(last_only) - 1));
}

TEST(ReusablePrefix, CommonPrefixLessTheLastPromptTokenAndOnlyWhereTheCacheCanRollBack) {
  const std::vector<int32_t> cached = {1, 2, 3, 4, 5};
  EXPECT_EQ(reusable_prefix({}, std::vector<int32_t>{1, 2}, 0), 0u);
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}, 0), 5u);  // extends
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 9, 4, 5, 6}, 0), 2u);     // edited
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{9, 2, 3}, 0), 0u);
  // The prompt is all cached: its last token runs again for the logits.
  EXPECT_EQ(reusable_prefix(cached, cached, 0), 4u);
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 3}, 0), 2u);
  // A ring that no longer holds the window before position 2: start over.
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 9}, 3), 0u);
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 9}, 2), 2u);
  // No rollback needed at all: any min_truncate is fine.
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 3, 4, 5, 6}, 5), 5u);
}

// The random model's special tokens stand in for ChatML's: <image> opens a turn,
// </image> closes it; the template writes {{ bos_token }} and the vocabulary adds BOS too.
const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}<image>{{ m['role'] }}\n{{ m['content'] }}</image>\n{% endfor %}"
    "{% if add_generation_prompt %}<image>assistant\n{% endif %}";

std::unique_ptr<model::Model> random_model(const std::string& chat_template) {
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.n_ctx = 256;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("squeeze_chat_" + std::to_string(::getpid()) + ".gguf")).string();
  model::write_random_model({.config = c, .seed = 3, .path = path, .chat_template = chat_template});
  auto m = model::Model::load(path);
  std::remove(path.c_str());  // mapped: the open mapping keeps the data
  return m;
}

TEST(ChatFormat, OneBosAndTheTemplatesEndOfTurnTokenStops) {
  const auto m = random_model(kTemplate);
  const auto& tok = m->tokenizer();
  ASSERT_TRUE(tok.adds_bos());
  const generate::ChatFormat f(*m);
  const auto ids = f.encode(chat::Json::array({{{"role", "user"}, {"content", "Hi"}}}), true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[0], tok.bos_id());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.bos_id()), 1);  // not a second one from the template
  const int32_t open = *tok.find_token("<image>"), close = *tok.find_token("</image>");
  EXPECT_EQ(ids[1], open);
  EXPECT_NE(std::find(f.stop_ids().begin(), f.stop_ids().end(), tok.eos_id()), f.stop_ids().end());
  EXPECT_NE(std::find(f.stop_ids().begin(), f.stop_ids().end(), close), f.stop_ids().end());
  EXPECT_EQ(std::find(f.stop_ids().begin(), f.stop_ids().end(), open), f.stop_ids().end());
}

TEST(ChatFormat, AModelWithoutFramingGetsThePlainParser) {
  const auto m = random_model(kTemplate);
  const generate::ChatFormat f(*m);
  EXPECT_EQ(f.framing(), generate::OutputFraming::plain);
  EXPECT_FALSE(f.calls_tools() || f.thinks() || f.renders_control());
  // Everything is the answer, as it comes, whatever it spells; nothing after the end.
  const auto p = f.output_parser();
  EXPECT_EQ(p->feed(" to=self<|message|>").content, " to=self<|message|>");
  EXPECT_EQ(p->feed("Paris").content, "Paris");
  EXPECT_TRUE(p->finish().empty());
  EXPECT_TRUE(p->feed("more").empty());
}

TEST(ChatFormat, AModelWithoutATemplateIsAnErrorNamingTheKey) {
  const auto m = random_model("");
  const std::string msg = thrown_message([&] { generate::ChatFormat f(*m); });
  EXPECT_NE(msg.find("tokenizer.chat_template"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

float max_abs(std::span<const float> a) {
  float d = 0;
  for (float x : a) d = std::max(d, std::fabs(x));
  return d;
}

TEST(PromptCache, ReusesTheCommonPrefixAndGivesTheLogitsOfAFreshPrefill) {
  const auto m = random_model(kTemplate);
  model::Session session(*m, {.n_ctx = 256, .batch = 16});
  PromptCache cache(session);
  auto fresh = [&](const std::vector<int32_t>& prompt) {
    model::Session s(*m, {.n_ctx = 256, .batch = 16});
    const auto l = s.forward(prompt);
    return std::vector<float>(l.begin(), l.end());
  };
  auto check_logits = [&](const PromptCache::Prefill& p, const std::vector<int32_t>& prompt) {
    const std::vector<float> want = fresh(prompt);
    ASSERT_EQ(p.logits.size(), want.size());
    // Chunks split differently from a fresh prefill change only the last bits of sums.
    EXPECT_LT(max_abs_diff(p.logits, want), 1e-3f * std::max(1.0f, max_abs(want)));
    EXPECT_EQ(std::max_element(p.logits.begin(), p.logits.end()) - p.logits.begin(),
              std::max_element(want.begin(), want.end()) - want.begin());
  };
  const auto& tok = m->tokenizer();
  const std::vector<int32_t> a = tok.encode("The keeper climbed the stairs");
  auto p = cache.prefill(a);
  EXPECT_EQ(p.reused, 0u);
  EXPECT_EQ(p.prefilled, a.size());
  check_logits(p, a);

  // Two "generated" tokens run through the session, as decode() records them.
  std::vector<int32_t> b = a;
  for (int32_t t : tok.encode(" of the", {.add_special = false})) {
    session.forward(std::span<const int32_t>(&t, 1));
    cache.ids().push_back(t);
    b.push_back(t);
  }
  const std::vector<int32_t> tail = tok.encode(" lighthouse at night", {.add_special = false});
  b.insert(b.end(), tail.begin(), tail.end());
  p = cache.prefill(b);
  EXPECT_EQ(p.reused, cache.ids().size() - tail.size());
  EXPECT_EQ(p.prefilled, tail.size());
  check_logits(p, b);

  // An edit in the middle: everything from it on runs again.
  std::vector<int32_t> c = b;
  c[3] = tok.encode(" sea", {.add_special = false})[0];
  ASSERT_NE(c[3], b[3]);
  p = cache.prefill(c);
  EXPECT_EQ(p.reused, 3u);
  EXPECT_EQ(p.prefilled, c.size() - 3);
  check_logits(p, c);

  // The same prompt again: only its last token runs (for the logits).
  p = cache.prefill(c);
  EXPECT_EQ(p.reused, c.size() - 1);
  EXPECT_EQ(p.prefilled, 1u);
  check_logits(p, c);
  EXPECT_EQ(session.position(), static_cast<int64_t>(c.size()));

  cache.reset();
  EXPECT_EQ(session.position(), 0);
  EXPECT_EQ(cache.prefill(a).reused, 0u);
}

}  // namespace
}  // namespace squeeze::cli
