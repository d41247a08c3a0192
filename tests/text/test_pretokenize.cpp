// tests/text/test_pretokenize.cpp — hand-checked splits of the GPT-2, llama3 and qwen2
// pre-tokenizers, Unicode classes, and the "pieces tile the input" property.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/pretokenize.h"
#include "text/unicode.h"

using namespace squeeze::text;

namespace {
std::vector<std::string> split(const std::string& s, PreTokenizer k) {
  std::vector<std::string> out;
  for (const Piece& p : pre_tokenize(s, k)) out.push_back(s.substr(p.offset, p.length));
  return out;
}
using V = std::vector<std::string>;
}  // namespace

TEST(Unicode, DecodeValidAndInvalid) {
  const std::string s = "a\xC3\xA9\xE6\x9D\xB1\xF0\x9F\x98\x80";  // a é 東 😀
  auto u = decode_utf8(s);
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[0].cp, 'a');
  EXPECT_EQ(u[1].cp, 0xE9u);
  EXPECT_EQ(u[2].cp, 0x6771u);
  EXPECT_EQ(u[3].cp, 0x1F600u);
  // Overlong '/', a surrogate, a truncated sequence, a stray continuation, 0xFF: each
  // invalid byte is its own unit.
  for (const std::string bad : {"\xC0\xAF", "\xED\xA0\x80", "\xE6\x9D", "\x80", "\xFF", "\xF4\x90\x80\x80"}) {
    auto v = decode_utf8(bad);
    ASSERT_EQ(v.size(), bad.size()) << bad.size();
    for (const auto& x : v) EXPECT_EQ(x.cp, kInvalidCodePoint);
  }
  std::string enc;
  for (uint32_t cp : {0x41u, 0xE9u, 0x6771u, 0x1F600u}) append_utf8(enc, cp);
  EXPECT_EQ(enc, "A\xC3\xA9\xE6\x9D\xB1\xF0\x9F\x98\x80");
  EXPECT_THROW(append_utf8(enc, 0xD800), squeeze::Error);
}

// llama.cpp's reading of invalid UTF-8 (the tokenizer fixtures hold its ids for these).
TEST(Unicode, LenientUtf8AsByteLevelBpeReadsIt) {
  std::string out = "untouched";
  EXPECT_FALSE(lenient_utf8("a\xC3\xA9\xE6\x9D\xB1\xF0\x9F\x98\x80", out));
  EXPECT_EQ(out, "untouched");
  const std::string fffd = "\xEF\xBF\xBD";
  const std::pair<std::string, std::string> cases[] = {
      {"a\x80" "b", "a" + fffd + "b"},                     // stray continuation
      {"\xFF\xFEx", fffd + fffd + "x"},                   // never UTF-8
      {"h\xE2\x82", "h" + fffd + fffd},                   // truncated: each byte on its own
      {"\xE6\x9Dz", fffd + fffd + "z"},                   // truncated mid-text
      {"a\xC0\xAF" "b", "a/b"},                            // overlong '/': its value, shortest form
      {"\xED\xA0\x80", "\xED\xA0\x80"},                 // a surrogate stays (its three bytes)
      {"\xF7\xBF\xBF\xBF!", fffd + "!"},                 // past U+10FFFF
      {"caf\xE9 ok", "caf" + fffd + " ok"},             // Latin-1
  };
  for (const auto& [in, want] : cases) {
    ASSERT_TRUE(lenient_utf8(in, out)) << in;
    EXPECT_EQ(out, want) << in;
  }
}

TEST(Unicode, Classes) {
  EXPECT_TRUE(is_letter('a'));
  EXPECT_TRUE(is_letter(0xE9));     // é
  EXPECT_TRUE(is_letter(0x3B1));    // α
  EXPECT_TRUE(is_letter(0x6771));   // 東
  EXPECT_TRUE(is_letter(0x05D0));   // א
  EXPECT_TRUE(is_letter(0xAA));     // ª is Lo
  EXPECT_FALSE(is_letter(0xD7));    // × is Sm
  EXPECT_FALSE(is_letter('1'));
  EXPECT_TRUE(is_number('7'));
  EXPECT_TRUE(is_number(0xB2));     // ² is No
  EXPECT_TRUE(is_number(0x0663));   // Arabic-Indic three
  EXPECT_TRUE(is_number(0x2167));   // Roman numeral eight, Nl
  EXPECT_FALSE(is_number('a'));
  EXPECT_FALSE(is_letter(0x1F600));
  EXPECT_FALSE(is_number(0x1F600));
  for (uint32_t cp : {0x20u, 0x09u, 0x0Au, 0x0Du, 0xA0u, 0x3000u, 0x2009u, 0x85u}) EXPECT_TRUE(is_whitespace(cp)) << cp;
  for (uint32_t cp : {0x1Fu, 0x200Bu, 0x61u, 0x1Cu}) EXPECT_FALSE(is_whitespace(cp)) << cp;
  EXPECT_FALSE(is_letter(kInvalidCodePoint) || is_number(kInvalidCodePoint) || is_whitespace(kInvalidCodePoint));
}

TEST(PreTokenize, Gpt2HandChecked) {
  const auto k = PreTokenizer::gpt2;
  EXPECT_EQ(split("Hello world's  test 123 !!  \n", k),
            (V{"Hello", " world", "'s", " ", " test", " 123", " !!", "  \n"}));
  EXPECT_EQ(split("I'LL they're we'd", k), (V{"I", "'", "LL", " they", "'re", " we", "'d"}));
  EXPECT_EQ(split("a\n\nb", k), (V{"a", "\n", "\n", "b"}));
  EXPECT_EQ(split("x   ", k), (V{"x", "   "}));
  EXPECT_EQ(split("abc12de", k), (V{"abc", "12", "de"}));
  EXPECT_EQ(split("''s", k), (V{"''", "s"}));
  EXPECT_EQ(split(" \xC2\xA0x", k), (V{" ", "\xC2\xA0", "x"}));  // NBSP is \s but not the optional space
  EXPECT_EQ(split("na\xC3\xAFve caf\xC3\xA9 \xE6\x9D\xB1\xE4\xBA\xAC \xD9\xA1\xD9\xA2", k),
            (V{"na\xC3\xAFve", " caf\xC3\xA9", " \xE6\x9D\xB1\xE4\xBA\xAC", " \xD9\xA1\xD9\xA2"}));
  EXPECT_EQ(split("\xFF\xFE" "ab \x80", k), (V{"\xFF\xFE", "ab", " \x80"}));
  EXPECT_TRUE(split("", k).empty());
}

TEST(PreTokenize, Llama3HandChecked) {
  const auto k = PreTokenizer::llama3;
  EXPECT_EQ(split("Hello world's  test 12345 !!\n\n  x", k),
            (V{"Hello", " world", "'s", " ", " test", " ", "123", "45", " !!\n\n", " ", " x"}));
  EXPECT_EQ(split("I'LL", k), (V{"I", "'LL"}));
  EXPECT_EQ(split("\t\tfoo\n  bar", k), (V{"\t", "\tfoo", "\n", " ", " bar"}));
  EXPECT_EQ(split("(hello)", k), (V{"(hello", ")"}));
  EXPECT_EQ(split("a \n \nb", k), (V{"a", " \n \n", "b"}));
  EXPECT_EQ(split("x  \n  ", k), (V{"x", "  \n", "  "}));
  EXPECT_EQ(split("\n1", k), (V{"\n", "1"}));
  EXPECT_EQ(split("12345", PreTokenizer::qwen2), (V{"1", "2", "3", "4", "5"}));
}

TEST(PreTokenize, Names) {
  EXPECT_EQ(pre_tokenizer_from_name("default"), PreTokenizer::gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("llama-bpe"), PreTokenizer::llama3);
  EXPECT_EQ(pre_tokenizer_from_name("qwen2"), PreTokenizer::qwen2);
  try {
    pre_tokenizer_from_name("no-such-split");
    FAIL();
  } catch (const squeeze::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-split"), std::string::npos);
  }
}

TEST(PreTokenize, PiecesTileRandomBytes) {
  std::mt19937 gen(7);
  // Bytes biased towards spaces, newlines, apostrophes, digits, letters and UTF-8 leads.
  const std::string alphabet = " \n\r\t'sS0a9.\xC3\xA9\xE6\x9D\xB1\xFF\x80";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string s(gen() % 40, '\0');
    for (char& c : s) c = (gen() % 4 == 0) ? static_cast<char>(gen() & 0xFF) : alphabet[gen() % alphabet.size()];
    for (auto k : {PreTokenizer::gpt2, PreTokenizer::llama3, PreTokenizer::qwen2}) {
      size_t pos = 0;
      for (const Piece& p : pre_tokenize(s, k)) {
        ASSERT_EQ(p.offset, pos);
        ASSERT_GT(p.length, 0u);
        pos += p.length;
      }
      ASSERT_EQ(pos, s.size());
    }
  }
}
