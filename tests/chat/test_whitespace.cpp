// tests/chat/test_whitespace.cpp — the lexer's whitespace rules: `-` markers,
// trim_blocks / lstrip_blocks (transformers' chat settings) against jinja2's defaults,
// `+` opt-outs, comments, raw blocks, newline normalisation and the trailing newline.
// Expected strings were produced with jinja2 3.1.
#include <gtest/gtest.h>

#include "chat_test_util.h"

using squeeze::chat::TemplateOptions;
using squeeze::chat::testing::render;

namespace {

TemplateOptions jinja_defaults() {
  TemplateOptions o;
  o.trim_blocks = false;
  o.lstrip_blocks = false;
  return o;
}

const char* kIndented = "a\n  {% if true %}\n  x\n  {% endif %}\n  {#c#}\nb\n";

}  // namespace

TEST(ChatWhitespace, ChatSettingsTrimAndLstripBlocks) { EXPECT_EQ(render(kIndented), "a\n  x\nb"); }

TEST(ChatWhitespace, JinjaDefaultsKeepEverything) {
  EXPECT_EQ(render(kIndented, {}, jinja_defaults()), "a\n  \n  x\n  \n  \nb");
}

TEST(ChatWhitespace, DashStripsAllWhitespaceOnThatSide) {
  EXPECT_EQ(render("a  \n {{- 'b' -}} \n\n c"), "abc");
  EXPECT_EQ(render("a\n  {%- if true -%}  \n b {%- endif %}"), "ab");
  EXPECT_EQ(render("x {#- note -#} y"), "xy");
}

TEST(ChatWhitespace, PlusDisablesLstripAndTrim) {
  EXPECT_EQ(render("  {%+ if true +%}\nx{% endif %}"), "  \nx");
}

TEST(ChatWhitespace, LstripOnlyWhenTheTagStartsItsLine) {
  EXPECT_EQ(render("ab  {% if true %}c{% endif %}"), "ab  c");
  EXPECT_EQ(render("\t {% if true %}c{% endif %}"), "c");
  // Variables are never lstripped.
  EXPECT_EQ(render("  {{ 'v' }}"), "  v");
}

TEST(ChatWhitespace, TrimBlocksEatsOneNewlineAfterBlocksNotVariables) {
  EXPECT_EQ(render("{% if true %}\n\nx{% endif %}\n{{ 'y' }}\nz"), "\nxy\nz");
}

TEST(ChatWhitespace, OneTrailingNewlineIsDropped) {
  EXPECT_EQ(render("x\n\n"), "x\n");
  TemplateOptions keep;
  keep.keep_trailing_newline = true;
  EXPECT_EQ(render("x\n", {}, keep), "x\n");
}

TEST(ChatWhitespace, NewlinesAreNormalised) {
  EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
  EXPECT_EQ(render("{{ 'x\r\ny' }}"), "x\ny");
}

TEST(ChatWhitespace, RawBlocksAreLiteral) {
  EXPECT_EQ(render("{% raw %}{{ x }}{% if %}{% endraw %}"), "{{ x }}{% if %}");
  EXPECT_EQ(render("a {%- raw -%}  b  {%- endraw -%} c"), "abc");
}

TEST(ChatWhitespace, CommentsVanish) { EXPECT_EQ(render("a{# {{ not this }} #}b"), "ab"); }

TEST(ChatWhitespace, BracesInsideExpressionsDoNotEndTheTag) {
  EXPECT_EQ(render("{{ {'a': {'b': 1}}['a']['b'] }}"), "1");
}
