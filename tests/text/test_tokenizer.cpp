// tests/text/test_tokenizer.cpp — byte-level BPE: the byte alphabet, hand-checked merges,
// special tokens, round trips of random bytes and UTF-8, and agreement with a naive
// reference merge (repeatedly merge the leftmost lowest-rank pair) on random vocabularies.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/thrown_message.h"
#include "core/error.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "text/unicode.h"

using namespace squeeze::text;

namespace {

// A vocabulary with the 256 byte tokens as ids 0..255, plus merges added in rank order.
struct Vocab {
  TokenizerData d;
  Vocab() {
    for (int b = 0; b < 256; ++b) add_token(gpt2_encode_bytes(std::string(1, static_cast<char>(b))), TokenType::normal);
  }
  int32_t add_token(const std::string& stored, TokenType t) {
    d.tokens.push_back(stored);
    d.token_types.push_back(static_cast<int32_t>(t));
    return static_cast<int32_t>(d.tokens.size() - 1);
  }
  // Merge of two raw byte strings; adds the merged token unless told not to.
  void merge(const std::string& a, const std::string& b, bool with_token = true) {
    d.merges.push_back(gpt2_encode_bytes(a) + " " + gpt2_encode_bytes(b));
    if (with_token) add_token(gpt2_encode_bytes(a + b), TokenType::normal);
  }
  int32_t id(const std::string& raw) const {
    for (size_t i = 0; i < d.tokens.size(); ++i) {
      if (d.tokens[i] == gpt2_encode_bytes(raw)) return static_cast<int32_t>(i);
    }
    ADD_FAILURE() << "no token " << raw;
    return -1;
  }
};

std::vector<int32_t> enc(const Tokenizer& t, const std::string& s) { return t.encode(s, {.add_special = false}); }

// The textbook algorithm, independent of the priority queue: merge the lowest-rank
// adjacent pair (leftmost on ties) until none applies; then spell out symbols that are
// not tokens as bytes. Works on one pre-token.
std::vector<std::string> naive_bpe(const std::string& piece, const std::map<std::pair<std::string, std::string>, int>& rank) {
  std::vector<std::string> syms;
  for (char c : piece) syms.emplace_back(1, c);
  for (;;) {
    int best = -1, best_rank = 1 << 30;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = rank.find({syms[i], syms[i + 1]});
      if (it != rank.end() && it->second < best_rank) best = static_cast<int>(i), best_rank = it->second;
    }
    if (best < 0) return syms;
    syms[best] += syms[best + 1];
    syms.erase(syms.begin() + best + 1);
  }
}

std::string random_utf8(std::mt19937& gen, size_t n_chars) {
  // Latin, Latin-1, Greek, Cyrillic, Arabic, Devanagari, CJK, Hangul, emoji, digits, spaces.
  static const std::pair<uint32_t, uint32_t> blocks[] = {
      {0x20, 0x7E}, {0xA0, 0xFF}, {0x391, 0x3C9}, {0x410, 0x44F}, {0x621, 0x64A}, {0x660, 0x669},
      {0x905, 0x939}, {0x4E00, 0x4FFF}, {0xAC00, 0xACFF}, {0x1F600, 0x1F64F}, {0x09, 0x0A}, {0x3000, 0x3000}};
  std::string s;
  for (size_t i = 0; i < n_chars; ++i) {
    const auto& [lo, hi] = blocks[gen() % std::size(blocks)];
    append_utf8(s, lo + gen() % (hi - lo + 1));
  }
  return s;
}

}  // namespace

TEST(Tokenizer, ByteAlphabet) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& u = gpt2_byte_to_unicode(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(u).second);
    auto units = decode_utf8(u);
    ASSERT_EQ(units.size(), 1u);
    EXPECT_EQ(gpt2_unicode_to_byte(units[0].cp), b);
  }
  EXPECT_EQ(gpt2_byte_to_unicode(' '), "\xC4\xA0");  // Ġ
  EXPECT_EQ(gpt2_byte_to_unicode('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(gpt2_byte_to_unicode('a'), "a");
  EXPECT_EQ(gpt2_byte_to_unicode(0xE9), "\xC3\xA9");  // é maps to itself
  EXPECT_FALSE(gpt2_unicode_to_byte(0x20).has_value());  // a raw space is not in the alphabet
}

TEST(Tokenizer, MergeOrderFollowsRank) {
  Vocab v1;
  v1.merge("b", "c");
  v1.merge("a", "b");
  Tokenizer t1(v1.d);
  EXPECT_EQ(enc(t1, "abc"), (std::vector<int32_t>{'a', v1.id("bc")}));
  Vocab v2;
  v2.merge("a", "b");
  v2.merge("b", "c");
  Tokenizer t2(v2.d);
  EXPECT_EQ(enc(t2, "abc"), (std::vector<int32_t>{v2.id("ab"), 'c'}));
}

TEST(Tokenizer, EqualRanksMergeLeftmostFirst) {
  Vocab v;
  v.merge("a", "a");
  Tokenizer t(v.d);
  const int32_t aa = v.id("aa");
  EXPECT_EQ(enc(t, "aaa"), (std::vector<int32_t>{aa, 'a'}));
  EXPECT_EQ(enc(t, "aaaa"), (std::vector<int32_t>{aa, aa}));
  v.merge("aa", "aa");
  Tokenizer t2(v.d);
  EXPECT_EQ(enc(t2, "aaaaa"), (std::vector<int32_t>{v.id("aaaa"), 'a'}));
}

TEST(Tokenizer, HelloWorldByHand) {
  Vocab v;
  for (auto [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}, {"o", "r"}, {" w", "or"}, {"l", "d"}, {" wor", "ld"}}) {
    v.merge(a, b);
  }
  Tokenizer t(v.d);
  EXPECT_EQ(enc(t, "hello world"), (std::vector<int32_t>{v.id("hello"), v.id(" world")}));
  // Two spaces: the first stands alone (\s+(?!\S)), the second joins " world".
  EXPECT_EQ(enc(t, "hello  world!"), (std::vector<int32_t>{v.id("hello"), ' ', v.id(" world"), '!'}));
  EXPECT_EQ(enc(t, "hold"), (std::vector<int32_t>{'h', 'o', v.id("ld")}));
  EXPECT_EQ(t.decode(enc(t, "hello  world!")), "hello  world!");
  EXPECT_EQ(t.token_to_piece(v.id(" world")), " world");
  EXPECT_EQ(t.token_text(v.id(" world")), "\xC4\xA0world");
}

TEST(Tokenizer, MergeResultWithoutTokenIsSpelledOut) {
  Vocab v;
  v.merge("x", "y", /*with_token=*/false);
  v.merge("xy", "z");
  Tokenizer t(v.d);
  EXPECT_EQ(enc(t, "xyz"), (std::vector<int32_t>{v.id("xyz")}));
  EXPECT_EQ(enc(t, "xyy"), (std::vector<int32_t>{'x', 'y', 'y'}));
}

TEST(Tokenizer, IgnoreMergesUsesWholePieceTokens) {
  Vocab v;
  const int32_t abc = v.add_token("abc", TokenType::normal);  // no merges lead to it
  Tokenizer plain(v.d);
  EXPECT_EQ(enc(plain, "abc"), (std::vector<int32_t>{'a', 'b', 'c'}));
  v.d.ignore_merges = true;
  Tokenizer whole(v.d);
  EXPECT_EQ(enc(whole, "abc abd"), (std::vector<int32_t>{abc, ' ', 'a', 'b', 'd'}));
}

TEST(Tokenizer, SpecialTokensMatchWhole) {
  Vocab v;
  v.merge("a", "b");
  const int32_t bos = v.add_token("<s>", TokenType::control);
  const int32_t eot = v.add_token("<|endoftext|>", TokenType::control);
  const int32_t end = v.add_token("<|end|>", TokenType::control);
  const int32_t tool = v.add_token("<tool>", TokenType::user_defined);
  v.d.bos_id = bos;
  v.d.eos_id = eot;
  v.d.add_bos = true;
  Tokenizer t(v.d);
  const std::string s = "ab<|endoftext|>b<|end|><tool><|en";
  const auto ids = t.encode(s);
  const std::vector<int32_t> want = {bos, v.id("ab"), eot, 'b', end, tool, '<', '|', 'e', 'n'};
  EXPECT_EQ(ids, want);
  EXPECT_EQ(t.decode(ids), "<s>" + s);
  EXPECT_EQ(t.decode(ids, {.render_control = false}), "abb<tool><|en");
  // Without special parsing the same text is ordinary bytes.
  const auto raw = t.encode(s, {.add_special = false, .parse_special = false});
  EXPECT_EQ(std::count(raw.begin(), raw.end(), eot), 0);
  EXPECT_EQ(t.decode(raw), s);
  EXPECT_EQ(t.bos_id(), bos);
  EXPECT_EQ(t.eos_id(), eot);
  EXPECT_EQ(t.find_token("<tool>"), tool);
  EXPECT_EQ(t.token_type(tool), TokenType::user_defined);
}

TEST(Tokenizer, MissingByteTokensUseUnknownOrFail) {
  TokenizerData d;
  d.tokens = {"a", "b", "<unk>"};
  d.token_types = {1, 1, 2};
  Tokenizer strict(d);
  EXPECT_EQ(enc(strict, "ab"), (std::vector<int32_t>{0, 1}));
  EXPECT_THROW(enc(strict, "abc"), squeeze::Error);
  d.unk_id = 2;
  Tokenizer lenient(d);
  EXPECT_EQ(enc(lenient, "abc"), (std::vector<int32_t>{0, 1, 2}));
}

TEST(Tokenizer, ByteTypeTokens) {
  TokenizerData d;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    d.tokens.push_back(name);
    d.token_types.push_back(6);
  }
  Tokenizer t(d);
  const std::string s2("\x00\xC3\xA9hi \n", 7);
  const auto ids = enc(t, s2);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 0xC3, 0xA9, 'h', 'i', ' ', '\n'}));
  EXPECT_EQ(t.decode(ids), s2);
  // A byte that is not UTF-8 is read as U+FFFD, as llama.cpp reads it.
  EXPECT_EQ(enc(t, "a\xFF"), (std::vector<int32_t>{'a', 0xEF, 0xBF, 0xBD}));
}

TEST(Tokenizer, BadDataIsAnError) {
  auto expect_error = [](const TokenizerData& d, const std::string& needle) {
    try {
      Tokenizer t(d);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const squeeze::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Vocab v;
  TokenizerData d = v.d;
  d.merges = {"a b", "ab"};
  expect_error(d, "merge 1");
  d = v.d;
  d.merges = {"a  b"};
  expect_error(d, "merge 0");
  d = v.d;
  d.token_types[3] = 9;
  expect_error(d, "token 3");
  d = v.d;
  d.token_types.pop_back();
  expect_error(d, "token types");
  d = v.d;
  d.bos_id = 1000;
  expect_error(d, "BOS");
  d = v.d;
  d.add_eos = true;
  expect_error(d, "EOS");
  d = v.d;
  d.pre = "nope";
  expect_error(d, "nope");
  d = v.d;
  d.model = "bert";
  expect_error(d, "bert");
  d = v.d;
  d.tokens.clear();
  d.token_types.clear();
  expect_error(d, "empty");
  Tokenizer t(v.d);
  EXPECT_THROW(t.decode(std::vector<int32_t>{256}), squeeze::Error);
  EXPECT_THROW(t.decode(std::vector<int32_t>{-1}), squeeze::Error);
  EXPECT_THROW(t.token_text(999), squeeze::Error);
}

// A text two encodable tokens share makes encoding ambiguous: refused, naming the text
// and both ids. Duplicates encoding never produces (unused padding) are accepted, and so
// are a special and a plain token of the same text.
TEST(Tokenizer, DuplicateTokensAreRefusedWhereEncodingWouldBeAmbiguous) {
  Vocab v;
  v.merge("a", "b");
  TokenizerData d = v.d;
  const int32_t first = v.id("ab");
  d.tokens.push_back(d.tokens[static_cast<size_t>(first)]);
  d.token_types.push_back(static_cast<int32_t>(TokenType::normal));
  const std::string msg = squeeze::thrown_message([&] { Tokenizer t(d); });
  EXPECT_NE(msg.find("token 'ab' appears twice"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ids " + std::to_string(first) + " and " + std::to_string(d.tokens.size() - 1)), std::string::npos)
      << msg;
  d = v.d;
  v.add_token("<ctl>", TokenType::control);
  d = v.d;
  d.tokens.push_back("<ctl>");
  d.token_types.push_back(static_cast<int32_t>(TokenType::user_defined));
  EXPECT_NE(squeeze::thrown_message([&] { Tokenizer t(d); }).find("'<ctl>' appears twice"), std::string::npos);
  d = v.d;
  for (int i = 0; i < 3; ++i) {
    d.tokens.push_back("<pad>");
    d.token_types.push_back(static_cast<int32_t>(TokenType::unused));
  }
  d.tokens.push_back("<ctl>");  // as plain text too: BPE and the special matcher never compete
  d.token_types.push_back(static_cast<int32_t>(TokenType::normal));
  EXPECT_NO_THROW(Tokenizer t(d));
}

// Random vocabularies over a small alphabet so merges fire often; random texts of
// bytes, of that alphabet and of several scripts; every pre-tokenizer.
TEST(Tokenizer, RandomRoundTripAndNaiveReference) {
  std::mt19937 gen(1234);
  const std::string alphabet = "etaoin shr\n'1\xC3\xA9\xE6\x9D\xB1";
  for (int vocab_trial = 0; vocab_trial < 6; ++vocab_trial) {
    Vocab v;
    std::vector<std::string> syms;
    for (char c : alphabet) syms.emplace_back(1, c);
    std::map<std::pair<std::string, std::string>, int> rank;
    std::set<std::string> have;
    for (int m = 0; m < 300; ++m) {
      const std::string a = syms[gen() % syms.size()], b = syms[gen() % syms.size()];
      if (rank.count({a, b})) continue;
      rank[{a, b}] = static_cast<int>(v.d.merges.size());
      const bool with_token = gen() % 8 != 0;  // some merge results have no token
      v.merge(a, b, with_token && have.insert(a + b).second);
      syms.push_back(a + b);
    }
    v.add_token("<|sep|>", TokenType::control);
    v.d.pre = vocab_trial % 3 == 0 ? "gpt2" : vocab_trial % 3 == 1 ? "llama-bpe" : "qwen2";
    Tokenizer t(v.d);
    for (int trial = 0; trial < 300; ++trial) {
      std::string s;
      switch (trial % 3) {
        case 0:
          s.resize(gen() % 64);
          for (char& c : s) c = static_cast<char>(gen() & 0xFF);
          break;
        case 1:
          for (int i = gen() % 64; i > 0; --i) s += gen() % 50 == 0 ? std::string("<|sep|>") : std::string(1, alphabet[gen() % alphabet.size()]);
          break;
        default:
          s = random_utf8(gen, gen() % 32);
      }
      // Invalid UTF-8 is read as llama.cpp reads it (text/unicode.h): the same ids as
      // its repaired text, which is what decoding gives back.
      std::string repaired;
      if (lenient_utf8(s, repaired)) {
        ASSERT_EQ(enc(t, s), enc(t, repaired));
        s = repaired;
      }
      const auto ids = enc(t, s);
      ASSERT_EQ(t.decode(ids), s);
      if (s.find("<|sep|>") != std::string::npos) continue;
      // Same tokens as the naive merge, piece by piece.
      std::vector<int32_t> want;
      for (const Piece& p : pre_tokenize(s, t.pre_tokenizer())) {
        for (const std::string& sym : naive_bpe(s.substr(p.offset, p.length), rank)) {
          const auto id = t.find_token(gpt2_encode_bytes(sym));
          if (id) {
            want.push_back(*id);
          } else {
            for (unsigned char c : sym) want.push_back(c);
          }
        }
      }
      ASSERT_EQ(ids, want) << "trial " << trial;
    }
  }
}
