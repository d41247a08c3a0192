// tests/text/test_stop.cpp — stop conditions: EOS, stop strings across token boundaries
// with held-back text, token limits, UTF-8 hold-back, and a randomised check of the
// streamed text against a plain non-streaming reference.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/stop.h"

using namespace squeeze::text;

TEST(Stop, StopStringAcrossTokensIsNeverPrinted) {
  StopChecker c({.stop_strings = {"STOP"}});
  std::string shown;
  const std::vector<std::string> pieces = {"Hel", "lo wor", "ld STO", "P more"};
  std::vector<std::string> steps;
  for (size_t i = 0; i < pieces.size(); ++i) {
    StopStep s = c.push(static_cast<int32_t>(i), pieces[i]);
    steps.push_back(s.text);
    shown += s.text;
    if (s.stopped()) {
      EXPECT_EQ(s.reason, StopReason::stop_string);
      break;
    }
  }
  EXPECT_EQ(steps, (std::vector<std::string>{"Hel", "lo wor", "ld ", ""}));
  EXPECT_EQ(shown, "Hello world ");
  EXPECT_EQ(c.matched_stop(), "STOP");
  EXPECT_THROW(c.push(9, "x"), squeeze::Error);
}

TEST(Stop, FalseStartIsReleased) {
  StopChecker c({.stop_strings = {"abc"}});
  EXPECT_EQ(c.push(0, "xab").text, "x");
  EXPECT_EQ(c.push(1, "x").text, "abx");
  EXPECT_EQ(c.push(2, "a").text, "");
  EXPECT_EQ(c.finish(), "a");
}

TEST(Stop, EarliestStopWins) {
  StopChecker c({.stop_strings = {"world", "lo"}});
  StopStep s = c.push(0, "hello world");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.text, "hel");
  EXPECT_EQ(c.matched_stop(), "lo");
}

TEST(Stop, EosFlushesHeldTextAndIsNotPrinted) {
  StopChecker c({.eos_ids = {7, 8}, .stop_strings = {"</s>"}});
  EXPECT_EQ(c.push(0, "done </").text, "done ");
  StopStep s = c.push(8, "<eos-text>");
  EXPECT_EQ(s.reason, StopReason::eos);
  EXPECT_EQ(s.text, "</");
  EXPECT_EQ(c.n_tokens(), 2);
}

TEST(Stop, TokenLimit) {
  StopChecker c({.stop_strings = {"zz"}, .max_tokens = 3});
  EXPECT_FALSE(c.push(0, "a").stopped());
  EXPECT_FALSE(c.push(0, "z").stopped());
  StopStep s = c.push(0, "b");
  EXPECT_EQ(s.reason, StopReason::max_tokens);
  EXPECT_EQ(s.text, "zb");  // the held "z" (start of "zz") is released at the limit
  StopChecker none({.max_tokens = 0});
  StopStep z = none.push(0, "a");
  EXPECT_EQ(z.reason, StopReason::max_tokens);
  EXPECT_EQ(z.text, "");
}

TEST(Stop, IncompleteUtf8IsHeld) {
  StopChecker c({});
  EXPECT_EQ(c.push(0, "a\xE6\x9D").text, "a");
  EXPECT_EQ(c.push(1, "\xB1!").text, "\xE6\x9D\xB1!");
  // An invalid byte is not held forever.
  EXPECT_EQ(c.push(2, "\xFF").text, "\xFF");
}

TEST(Stop, BadParameters) {
  EXPECT_THROW(StopChecker({.stop_strings = {""}}), squeeze::Error);
  EXPECT_THROW(StopChecker({.max_tokens = -2}), squeeze::Error);
}

TEST(Stop, RandomStreamsMatchAPlainReference) {
  std::mt19937 gen(5);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (int i = gen() % 3; i > 0; --i) {
      std::string s(1 + gen() % 3, 'a');
      for (char& ch : s) ch = "ab"[gen() % 2];
      stops.push_back(s);
    }
    std::vector<std::string> pieces;
    std::string full;
    for (int i = gen() % 12; i > 0; --i) {
      std::string p(gen() % 4, 'a');
      for (char& ch : p) ch = "abc"[gen() % 3];
      pieces.push_back(p);
      full += p;
    }
    StopChecker c({.stop_strings = stops});
    std::string shown;
    bool stopped = false;
    for (const auto& p : pieces) {
      StopStep s = c.push(0, p);
      shown += s.text;
      // Nothing shown may contain a stop string.
      for (const auto& st : stops) ASSERT_EQ(shown.find(st), std::string::npos);
      if (s.stopped()) {
        stopped = true;
        break;
      }
    }
    if (!stopped) shown += c.finish();
    // Reference: generation ends after the first token whose arrival completes a stop
    // string; the text is cut at the earliest stop string in what has arrived by then.
    std::string arrived;
    size_t cut = std::string::npos;
    for (const auto& p : pieces) {
      arrived += p;
      for (const auto& st : stops) cut = std::min(cut, arrived.find(st));
      if (cut != std::string::npos) break;
    }
    full = arrived;
    std::string desc;
    for (const auto& st : stops) desc += "[" + st + "]";
    desc += " pieces:";
    for (const auto& p : pieces) desc += "[" + p + "]";
    ASSERT_EQ(shown, full.substr(0, cut)) << "trial " << trial << " stops:" << desc;
    ASSERT_EQ(stopped, cut != std::string::npos);
  }
}
