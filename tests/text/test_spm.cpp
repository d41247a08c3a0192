// tests/text/test_spm.cpp — SentencePiece (GGUF model "llama"): hand-checked merges by
// score, space escaping and the space prefix, byte fallback, special tokens, decode
// round trips, and agreement with a naive O(n^2) reference on random vocabularies.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/tokenizer.h"

using namespace squeeze::text;

namespace {

const std::string kSp = "\xE2\x96\x81";  // ▁

// <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF> (ids 3..258), then normal tokens.
struct SpmVocab {
  TokenizerData d;
  SpmVocab() {
    d.model = "llama";
    d.pre = "default";
    add("<unk>", TokenType::unknown, 0);
    add("<s>", TokenType::control, 0);
    add("</s>", TokenType::control, 0);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      add(name, TokenType::byte, 0);
    }
    d.unk_id = 0;
    d.bos_id = 1;
    d.eos_id = 2;
    d.add_space_prefix = false;
  }
  int32_t add(const std::string& text, TokenType t, float score) {
    d.tokens.push_back(text);
    d.token_types.push_back(static_cast<int32_t>(t));
    d.scores.push_back(score);
    return static_cast<int32_t>(d.tokens.size() - 1);
  }
  int32_t id(const std::string& text) const {
    for (size_t i = 0; i < d.tokens.size(); ++i)
      if (d.tokens[i] == text) return static_cast<int32_t>(i);
    ADD_FAILURE() << "no token " << text;
    return -1;
  }
};

int32_t byte_id(unsigned char b) { return 3 + b; }

std::vector<int32_t> enc(const Tokenizer& t, const std::string& s, bool parse_special = true) {
  return t.encode(s, {.add_special = false, .parse_special = parse_special});
}

// Textbook SentencePiece BPE: merge the adjacent pair whose concatenation is a token
// with the highest score, leftmost on ties, until none is; then tokens or bytes.
std::vector<int32_t> naive_spm(const std::string& text, const std::map<std::string, std::pair<int32_t, float>>& vocab) {
  std::vector<std::string> syms;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = text[i];
    const size_t len = std::min<size_t>(c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4, text.size() - i);
    syms.push_back(text.substr(i, len));
    i += len;
  }
  for (;;) {
    int best = -1;
    float best_score = 0;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = vocab.find(syms[i] + syms[i + 1]);
      if (it != vocab.end() && (best < 0 || it->second.second > best_score))
        best = static_cast<int>(i), best_score = it->second.second;
    }
    if (best < 0) break;
    syms[best] += syms[best + 1];
    syms.erase(syms.begin() + best + 1);
  }
  std::vector<int32_t> out;
  for (const std::string& s : syms) {
    auto it = vocab.find(s);
    if (it != vocab.end()) {
      out.push_back(it->second.first);
    } else {
      for (unsigned char b : s) out.push_back(byte_id(b));
    }
  }
  return out;
}

}  // namespace

TEST(SentencePiece, MergesByScoreThenLeftmost) {
  SpmVocab v;
  const int32_t a = v.add("a", TokenType::normal, -1), b = v.add("b", TokenType::normal, -1);
  const int32_t c = v.add("c", TokenType::normal, -1);
  v.add("ab", TokenType::normal, -5);
  const int32_t bc = v.add("bc", TokenType::normal, -2);  // higher score than "ab": merges first
  const int32_t aa = v.add("aa", TokenType::normal, -3);
  Tokenizer t(v.d);
  EXPECT_EQ(enc(t, "abc"), (std::vector<int32_t>{a, bc}));
  EXPECT_EQ(enc(t, "aaa"), (std::vector<int32_t>{aa, a}));  // equal scores: leftmost pair
  EXPECT_EQ(enc(t, "aaaa"), (std::vector<int32_t>{aa, aa}));
  EXPECT_EQ(enc(t, "cab"), (std::vector<int32_t>{c, v.id("ab")}));
  EXPECT_EQ(enc(t, "b"), (std::vector<int32_t>{b}));
  EXPECT_TRUE(t.is_sentencepiece());
}

TEST(SentencePiece, EmptyAndSpaces) {
  SpmVocab v;
  const int32_t sp = v.add(kSp, TokenType::normal, -1);
  const int32_t sp2 = v.add(kSp + kSp, TokenType::normal, -2);
  const int32_t x = v.add("x", TokenType::normal, -1);
  const int32_t spx = v.add(kSp + "x", TokenType::normal, -1);
  v.d.add_bos = true;
  Tokenizer t(v.d);
  EXPECT_EQ(t.encode(""), (std::vector<int32_t>{1}));
  EXPECT_TRUE(enc(t, "").empty());
  EXPECT_EQ(enc(t, "   "), (std::vector<int32_t>{sp2, sp}));
  EXPECT_EQ(enc(t, "  x "), (std::vector<int32_t>{sp, spx, sp}));
  EXPECT_EQ(t.decode(enc(t, "  x ")), "  x ");

  v.d.add_space_prefix = true;  // one ▁ in front; decode takes it back
  Tokenizer p(v.d);
  EXPECT_EQ(enc(p, "x"), (std::vector<int32_t>{spx}));
  EXPECT_EQ(enc(p, " x"), (std::vector<int32_t>{sp, spx}));
  EXPECT_EQ(enc(p, ""), (std::vector<int32_t>{}));  // nothing to prefix
  EXPECT_EQ(p.decode(enc(p, "x x")), "x x");
  EXPECT_EQ(p.decode(enc(p, " x")), " x");
  EXPECT_EQ(p.decode(std::vector<int32_t>{x}), "x");
}

TEST(SentencePiece, ByteFallbackAndUnknown) {
  SpmVocab v;
  const int32_t e_acute = v.add("\xC3\xA9", TokenType::normal, -1);
  Tokenizer t(v.d);
  // "ü" is no token: its two bytes; "é" is one.
  EXPECT_EQ(enc(t, "\xC3\xBC\xC3\xA9"), (std::vector<int32_t>{byte_id(0xC3), byte_id(0xBC), e_acute}));
  EXPECT_EQ(t.decode(enc(t, "\xC3\xBC\xC3\xA9")), "\xC3\xBC\xC3\xA9");
  // Invalid UTF-8 is bytes too, and round-trips.
  const std::string bad("\xFF\x80z\xE6\x9D", 5);
  EXPECT_EQ(t.decode(enc(t, bad)), bad);

  // Without byte tokens a character that is no token becomes <unk>, one per byte.
  TokenizerData d;
  d.model = "llama";
  d.tokens = {"<unk>", "a"};
  d.token_types = {2, 1};
  d.scores = {0, 0};
  d.unk_id = 0;
  d.add_space_prefix = false;
  Tokenizer u(d);
  EXPECT_EQ(enc(u, "a\xC3\xA9"), (std::vector<int32_t>{1, 0, 0}));
  d.unk_id = -1;
  Tokenizer strict(d);
  EXPECT_THROW(enc(strict, "b"), squeeze::Error);
}

TEST(SentencePiece, SpecialTokens) {
  SpmVocab v;
  const int32_t sot = v.add("<start_of_turn>", TokenType::control, 0);
  const int32_t nl2 = v.add("\n\n", TokenType::user_defined, 0);
  const int32_t nl = v.add("\n", TokenType::user_defined, 0);
  const int32_t hi = v.add("hi", TokenType::normal, -1);
  const int32_t sphi = v.add(kSp + "hi", TokenType::normal, -1);
  v.add("h", TokenType::normal, -2);
  v.add("i", TokenType::normal, -2);
  v.d.add_bos = true;
  v.d.add_space_prefix = true;
  Tokenizer t(v.d);
  // The space prefix goes in front of the text and after every special token.
  EXPECT_EQ(t.encode("<start_of_turn>hi\n\n\nhi"), (std::vector<int32_t>{1, sot, sphi, nl2, nl, sphi}));
  // Control tokens only with parse_special; user-defined ones always.
  const auto raw = t.encode("<s>hi\n", {.add_special = false, .parse_special = false});
  EXPECT_EQ(raw.back(), nl);
  EXPECT_EQ(std::count(raw.begin(), raw.end(), 1), 0);
  EXPECT_EQ(t.decode(std::vector<int32_t>{1, sot, hi}), "<s><start_of_turn>hi");
  EXPECT_EQ(t.decode(std::vector<int32_t>{1, sot, sphi}, {.render_control = false}), "hi");
}

TEST(SentencePiece, LongestSpecialTokenFirstLikeLlamaCpp) {
  SpmVocab v;
  const int32_t ab = v.add("ab", TokenType::user_defined, 0);
  const int32_t bcd = v.add("bcd", TokenType::user_defined, 0);
  const int32_t a = v.add("a", TokenType::normal, -1);
  Tokenizer t(v.d);
  // Not leftmost: the longer "bcd" is cut out first.
  EXPECT_EQ(enc(t, "abcd"), (std::vector<int32_t>{a, bcd}));
  EXPECT_EQ(enc(t, "abab"), (std::vector<int32_t>{ab, ab}));
}

TEST(SentencePiece, RandomAgainstNaiveReference) {
  std::mt19937 gen(99);
  const std::vector<std::string> alphabet = {"a", "b", "c", kSp, "\xC3\xA9", "\xE6\x9D\xB1"};
  for (int trial = 0; trial < 20; ++trial) {
    SpmVocab v;
    std::map<std::string, std::pair<int32_t, float>> vocab;
    // "▁" must be a token for decode to give spaces back (its bytes alone decode as "▁").
    vocab[kSp] = {v.add(kSp, TokenType::normal, -1), -1};
    for (size_t i = 0; i < 40; ++i) {
      std::string tok;
      const size_t len = 1 + gen() % 4;
      for (size_t k = 0; k < len; ++k) tok += alphabet[gen() % alphabet.size()];
      if (vocab.count(tok)) continue;
      const float score = -static_cast<float>(gen() % 8);  // few distinct scores: many ties
      vocab[tok] = {v.add(tok, TokenType::normal, score), score};
    }
    Tokenizer t(v.d);
    for (int s = 0; s < 50; ++s) {
      std::string text;
      const size_t n = gen() % 30;
      for (size_t k = 0; k < n; ++k) text += alphabet[gen() % alphabet.size()];
      EXPECT_EQ(enc(t, text), naive_spm(text, vocab)) << text;
      std::string spaced = text;  // decode turns ▁ back into spaces
      for (size_t p; (p = spaced.find(kSp)) != std::string::npos;) spaced.replace(p, 3, " ");
      EXPECT_EQ(t.decode(enc(t, spaced)), spaced);
    }
  }
}

TEST(SentencePiece, LongInputIsNotQuadratic) {
  SpmVocab v;
  v.add("a", TokenType::normal, -1);
  v.add("b", TokenType::normal, -1);
  v.add("ab", TokenType::normal, -1);
  v.add("aa", TokenType::normal, -2);
  v.add("abab", TokenType::normal, -3);
  Tokenizer t(v.d);
  std::string text;
  for (int i = 0; i < 200000; ++i) text += (i % 3 == 0) ? "a" : "ab";
  const auto start = std::chrono::steady_clock::now();
  const auto ids = enc(t, text);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_LT(s, 10.0);  // ~0.1 s with the queue; a rescan per merge would take minutes
}
