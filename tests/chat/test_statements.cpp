// tests/chat/test_statements.cpp — if/elif/else, for (else, unpacking, filters,
// loop.*, break/continue), set (scoping, namespace attributes, tuple and block forms),
// macros, filter blocks and generation blocks.
#include <gtest/gtest.h>

#include "chat_test_util.h"

using squeeze::chat::Json;
using squeeze::chat::testing::render;

TEST(ChatStmt, IfElifElse) {
  const char* t = "{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(t, {{"n", 1}}), "one");
  EXPECT_EQ(render(t, {{"n", 2}}), "two");
  EXPECT_EQ(render(t, {{"n", 7}}), "many");
}

TEST(ChatStmt, ForLoopVariables) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
            "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('a', 'b') }},{% endfor %}"),
            "2a,13b,2a,");
}

TEST(ChatStmt, ForElseFilterAndUnpacking) {
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [3, 1, 2] if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% endfor %}"),
            "1/2:3 2/2:2 ");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"a", 1}, {"b", 2}}}}),
            "a=1;b=2;");
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", {{"d", {{"z", 1}, {"a", 2}}}}), "za");
}

TEST(ChatStmt, BreakAndContinue) {
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}"
                   "{% endif %}{{ i }}{% endfor %}"),
            "0134");
}

TEST(ChatStmt, SetInsideALoopDoesNotLeakOrPersist) {
  // jinja2: each iteration starts from the outer value; the loop's sets vanish after it.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = x + 1 %}{{ x }}{% endfor %}<{{ x }}>"),
            "1212<1>");
  EXPECT_EQ(render("{% for i in range(3) %}{% if i == 0 %}{% set y = 'a' %}{% endif %}[{{ y }}]{% endfor %}"),
            "[a][][]");
}

TEST(ChatStmt, NamespaceCarriesStateOutOfLoops) {
  EXPECT_EQ(render("{% set ns = namespace(found=false, n=0) %}{% for m in [1, 2, 3] %}{% set ns.found = true %}"
                   "{% set ns.n = ns.n + m %}{% endfor %}{{ ns.found }} {{ ns.n }}"),
            "True 6");
}

TEST(ChatStmt, SetForms) {
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}"), "12(1, 2)");
  EXPECT_EQ(render("{% set x %}block {{ 1 }}{% endset %}[{{ x }}]"), "[block 1]");
  EXPECT_EQ(render("{% set messages = messages[1:] %}{{ messages | length }}", {{"messages", {1, 2, 3}}}), "2");
}

TEST(ChatStmt, Macros) {
  EXPECT_EQ(render("{% set x = 1 %}{% macro m(a, b='q') %}{{ x }}{{ a }}{{ b }}{% endmacro %}{% set x = 2 %}"
                   "{{ m(1) }}{{ m(1, b=3) }}{{ m(a=5) }}"),
            "21q21325q");
  EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"), "321");
}

TEST(ChatStmt, FilterAndGenerationBlocks) {
  EXPECT_EQ(render("{% filter upper %}hello {{ 'x' }}{% endfilter %}"), "HELLO X");
  EXPECT_EQ(render("a{% generation %}b{% endgeneration %}c"), "abc");
}

TEST(ChatStmt, RenderChatPassesTransformersVariables) {
  squeeze::chat::Template t(
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}|{{ tools }}|{{ documents }}|{{ eos_token }}");
  const Json msgs = Json::array({{{"role", "user"}, {"content", "hi"}}});
  EXPECT_EQ(squeeze::chat::render_chat(t, msgs, true, "<s>", "</s>"), "<s><user>hi<assistant>|None|None|</s>");
  EXPECT_EQ(squeeze::chat::render_chat(t, msgs, false, "", "", Json::array({1})), "<user>hi|[1]|None|");
}
