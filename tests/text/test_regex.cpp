// tests/text/test_regex.cpp — the code-point regex engine (text/regex.h), every
// pre-tokenizer on hand-checked inputs, the hand-written fast paths against the engine,
// and Unicode categories from utf8proc (combining marks are \p{M}, not \p{L}).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/pretokenize.h"
#include "text/regex.h"
#include "text/unicode.h"

using namespace squeeze::text;

namespace {

using V = std::vector<std::string>;

std::vector<uint32_t> cps(const std::string& s) {
  std::vector<uint32_t> out;
  for (const CodeUnit& u : decode_utf8(s)) out.push_back(u.cp);
  return out;
}

// Whole-text match length in code points at 0, or -1.
long m(const char* pattern, const std::string& s) {
  const Regex re(pattern);
  const auto t = cps(s);
  const size_t e = re.match_at(t, 0);
  return e == Regex::npos ? -1 : static_cast<long>(e);
}

V split(const std::string& s, PreTokenizer k) {
  V out;
  for (const Piece& p : pre_tokenize(s, k)) out.push_back(s.substr(p.offset, p.length));
  return out;
}

}  // namespace

TEST(Regex, Basics) {
  EXPECT_EQ(m("abc", "abcd"), 3);
  EXPECT_EQ(m("abd", "abcd"), -1);
  EXPECT_EQ(m("a|ab", "ab"), 1);  // leftmost-first, not longest
  EXPECT_EQ(m("(?:a|ab)c", "abc"), 3);  // backtracks into the alternation
  EXPECT_EQ(m("a+", "aaab"), 3);
  EXPECT_EQ(m("a+?", "aaab"), 1);
  EXPECT_EQ(m("a*ab", "aaab"), 4);   // greedy gives one back
  EXPECT_EQ(m("a*+ab", "aaab"), -1);  // possessive does not
  EXPECT_EQ(m("a{2,3}", "aaaa"), 3);
  EXPECT_EQ(m("a{2}", "a"), -1);
  EXPECT_EQ(m("a{2,}", "aaaaa"), 5);
  EXPECT_EQ(m("\\s+(?!\\S)", "   x"), 2);
  EXPECT_EQ(m("\\s+(?=x)", "   x"), 3);
  EXPECT_EQ(m("a$", "a"), 1);
  EXPECT_EQ(m("a$", "ab"), -1);
  EXPECT_EQ(m("\\w+\\b", "ab cd"), 2);
  EXPECT_EQ(m("(?i:'ll)", "'LL"), 3);
  EXPECT_EQ(m("'ll", "'LL"), -1);
  EXPECT_EQ(m("[^a-c]", "d"), 1);
  EXPECT_EQ(m("[^a-c]", "b"), -1);
  EXPECT_EQ(m("[a\\-]+", "-a-"), 3);
  EXPECT_EQ(m("[\\p{L}\\p{M}]+", "e\xCC\x81x1"), 3);  // e + U+0301 + x
  EXPECT_EQ(m("\\p{L}+", "e\xCC\x81x"), 1);
  EXPECT_EQ(m("\\P{L}", "1"), 1);
  EXPECT_EQ(m("[\\p{Lu}]+", "ABc"), 2);
  EXPECT_EQ(m("[一-龥]+", "\xE4\xB8\xAD\xE6\x96\x87x"), 2);  // 中文
  EXPECT_EQ(m("((?=[\\p{L}])([^a-z]))*", "ABc"), 2);
  EXPECT_EQ(m(".", "\n"), -1);
  EXPECT_EQ(m("(a|)+b", "aab"), 3);  // an empty iteration ends the loop, no hang
}

TEST(Regex, BadPatternsAreErrors) {
  for (const char* bad : {"(a", "a)", "[ab", "*a", "a{2,1}", "\\p{Nope}", "(?<=a)b", "\\1", "\\q", "a**"}) {
    try {
      Regex re(bad);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const squeeze::Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(Regex, SplitIsolatesMatchesAndGaps) {
  const Regex re("\\p{N}");
  const auto t = cps("ab12c3");
  std::vector<size_t> ends;
  re.split(t, ends);
  EXPECT_EQ(ends, (std::vector<size_t>{2, 3, 4, 5, 6}));
}

TEST(Regex, LongRunsUseNoStack) {
  const std::string letters(1 << 20, 'a');
  for (auto k : {PreTokenizer::tekken, PreTokenizer::gpt4o, PreTokenizer::deepseek_v3, PreTokenizer::bloom}) {
    const auto p = pre_tokenize(letters, k);
    ASSERT_EQ(p.size(), 1u) << pre_tokenizer_name(k);
  }
  const std::string spaces(1 << 20, ' ');
  EXPECT_EQ(pre_tokenize(spaces + "x", PreTokenizer::qwen35).size(), 2u);
}

TEST(Unicode, CategoriesFromUtf8proc) {
  EXPECT_EQ(general_category(0x0301), Category::Mn);   // combining acute
  EXPECT_EQ(general_category(0x1EED), Category::Ll);   // ử
  EXPECT_EQ(general_category('A'), Category::Lu);
  EXPECT_EQ(general_category(0x01C5), Category::Lt);   // ǅ
  EXPECT_EQ(general_category(0x0664), Category::Nd);   // Arabic-Indic four
  EXPECT_EQ(general_category(0x20AC), Category::Sc);   // €
  EXPECT_EQ(general_category(0x3002), Category::Po);   // 。
  EXPECT_EQ(general_category(0x200D), Category::Cf);   // ZWJ
  EXPECT_EQ(general_category(0x1F600), Category::So);
  EXPECT_EQ(general_category(kInvalidCodePoint), Category::Cn);
  EXPECT_FALSE(is_letter(0x0301));
  EXPECT_EQ(to_lower('A'), uint32_t{'a'});
  EXPECT_EQ(to_lower(0x0416), 0x0436u);  // Ж → ж
  EXPECT_STRNE(unicode_data_version(), "");
}

// Vietnamese in decomposed form: the combining marks are not letters, so llama3 puts
// them in a piece of "other" characters of their own (as HF tokenizers does).
TEST(PreTokenize, CombiningMarks) {
  const std::string nfd = "Cu\xCC\x9B\xCC\x89" "a";  // C u U+031B U+0309 a
  EXPECT_EQ(split(nfd, PreTokenizer::llama3), (V{"Cu", "\xCC\x9B\xCC\x89", "a"}));
  EXPECT_EQ(split(nfd, PreTokenizer::qwen35), (V{nfd}));  // qwen35 joins \p{M} to letters
  EXPECT_EQ(split("C\xE1\xBB\xAD" "a Vi\xE1\xBB\x87t", PreTokenizer::llama3),
            (V{"C\xE1\xBB\xAD" "a", " Vi\xE1\xBB\x87t"}));
}

TEST(PreTokenize, EveryKindHandChecked) {
  using P = PreTokenizer;
  EXPECT_EQ(split("abc 12345 x", P::starcoder), (V{"abc", " ", "1", "2", "3", "4", "5", " x"}));
  EXPECT_EQ(split("Hello, 世界! 12\nok", P::deepseek_coder),
            (V{"Hello", ",", " ", "世界", "!", " ", "1", "2", "\n", "ok"}));
  EXPECT_EQ(split("Hello world!! 12345\n", P::deepseek_llm),
            (V{"Hello", " world", "!!", " ", "12345", "\n"}));
  EXPECT_EQ(split("Hello .world 12345 日本語", P::deepseek_v3),
            (V{"Hello", " .", "world", " ", "123", "45", " ", "日本語"}));
  EXPECT_EQ(split("a+b=12345 'll", P::falcon), (V{"a", "+", "b", "=", "123", "45", " ", "'", "ll"}));
  EXPECT_EQ(split("Hello, world. x", P::bloom), (V{"Hello", ",", " world", ".", " x"}));
  EXPECT_EQ(split("ab12 cd", P::viking), (V{"ab", "1", "2", " cd"}));
  EXPECT_EQ(split("HelloWorld ABCdef 123", P::tekken), (V{"Hello", "World", " ABCdef", " ", "1", "2", "3"}));
  EXPECT_EQ(split("don't HELLO's 12345", P::gpt4o), (V{"don't", " HELLO's", " ", "123", "45"}));
  EXPECT_EQ(split("it's 12345", P::qwen35), (V{"it", "'s", " ", "1", "2", "3", "4", "5"}));
}

TEST(PreTokenize, AllNamesResolveAndCompile) {
  for (const std::string& name : pre_tokenizer_names()) {
    const PreTokenizer k = pre_tokenizer_from_name(name);
    EXPECT_NO_THROW(pre_tokenize("Hello, world! 123 \xE4\xB8\xAD\n", k)) << name;
  }
  EXPECT_EQ(pre_tokenizer_from_name("smollm"), PreTokenizer::starcoder);
  EXPECT_EQ(pre_tokenizer_from_name("dbrx"), PreTokenizer::llama3);
  EXPECT_EQ(pre_tokenizer_from_name("stablelm2"), PreTokenizer::qwen2);
  EXPECT_EQ(pre_tokenizer_from_name("poro-chat"), PreTokenizer::bloom);
  EXPECT_TRUE(pre_tokenizer_ignores_merges("llama-bpe"));
  EXPECT_FALSE(pre_tokenizer_ignores_merges("smollm"));
  EXPECT_THROW(pre_tokenizer_from_name("llama"), squeeze::Error);
}

// The hand-written GPT-2 / llama3 / qwen2 matchers agree with the engine running the
// same patterns, on random text of the classes that matter.
TEST(PreTokenize, FastPathsMatchRegexEngine) {
  std::mt19937 gen(11);
  const std::vector<std::string> atoms = {" ", "  ", "\n", "\r\n", "\t", "'", "'s", "'LL", "a", "Z", "7", "12345",
                                          ".", "!!", "\xC3\xA9", "\xCC\x81", "\xE4\xB8\xAD", "\xC2\xA0", "\xFF", "\x80",
                                          "\xF0\x9F\x98\x80", "\xD9\xA3"};
  for (int trial = 0; trial < 3000; ++trial) {
    std::string s;
    const size_t n = gen() % 16;
    for (size_t i = 0; i < n; ++i) s += atoms[gen() % atoms.size()];
    for (auto k : {PreTokenizer::gpt2, PreTokenizer::llama3, PreTokenizer::qwen2, PreTokenizer::starcoder}) {
      const auto a = pre_tokenize(s, k), b = pre_tokenize_with_regex(s, k);
      ASSERT_EQ(a.size(), b.size()) << pre_tokenizer_name(k) << " on " << s;
      for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].length, b[i].length) << s;
    }
  }
}
