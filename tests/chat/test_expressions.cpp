// tests/chat/test_expressions.cpp — literals, operators and precedence, access,
// slices, tests, filters and methods, each against what jinja2 3.1 prints.
#include <gtest/gtest.h>

#include "chat_test_util.h"

using squeeze::chat::Json;
using squeeze::chat::testing::render;

TEST(ChatExpr, LiteralsPrintAsPython) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.5, {'k': [2]}, (1,)] }}"), "[1, 'a', None, True, 1.5, {'k': [2]}, (1,)]");
  EXPECT_EQ(render("{{ None }}|{{ True }}|{{ 1e20 }}|{{ 1.0 }}|{{ 0.1 + 0.2 }}|{{ 1e-5 }}|{{ 1_000 }}"),
            "None|True|1e+20|1.0|0.30000000000000004|1e-05|1000");
  EXPECT_EQ(render(R"({{ "it's" }}|{{ ['it\'s', "a\"b", 'x\ny'] }})"), R"(it's|["it's", 'a"b', 'x\ny'])");
  EXPECT_EQ(render(R"({{ '\u00e9\x41\t|\z' 'joined' }})"), "\xc3\xa9" "A\t|\\zjoined");
}

TEST(ChatExpr, ArithmeticFollowsPython) {
  EXPECT_EQ(render("{{ 10 / 4 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ 'ab' * 2 }}"),
            "2.5 -4 2 1024 0.5 3.0 abab");
  EXPECT_EQ(render("{{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ 'a' ~ 1 ~ none ~ x }} {{ [1] + [2] }} {{ true + 1 }}"),
            "3 9 a1None [1, 2] 2");
}

TEST(ChatExpr, FiltersBindTighterThanArithmetic) {
  EXPECT_EQ(render("{{ 'a' + ' b ' | trim + 'c' }}"), "abc");
  EXPECT_EQ(render("{{ -3 | abs }}"), "3");
}

TEST(ChatExpr, LogicAndComparisons) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }}{{ 3 > 2 > 5 }}{{ 1 == 1.0 }}{{ 'a' != 'b' }}{{ not 1 and 0 or 'z' }}"),
            "TrueFalseTrueTruez");
  EXPECT_EQ(render("{{ 'a' in 'cat' }}{{ 'k' in {'k': 1} }}{{ 1 in [1] }}{{ 9 not in [1] }}{{ 'q' in x }}"),
            "TrueTrueTrueTrueFalse");
  EXPECT_EQ(render("{{ 'x' if 1 else 'y' }}{{ 'x' if 0 else 'y' }}[{{ 'x' if 0 }}]"), "xy[]");
}

TEST(ChatExpr, AccessAndSlices) {
  const Json ctx = {{"m", {{"role", "user"}, {"items", 3}}}, {"xs", {3, 1, 2}}, {"s", "h\xc3\xa9llo"}};
  EXPECT_EQ(render("{{ m['role'] }} {{ m.role }} {{ xs[-1] }} {{ xs.0 }} [{{ xs[9] }}] [{{ m.nope }}]", ctx),
            "user user 2 3 [] []");
  EXPECT_EQ(render("{{ xs[1:] }} {{ xs[::-1] }} {{ xs[-2:] }} {{ s[1:3] }} {{ s[::-1] }} {{ s | length }}", ctx),
            "[1, 2] [2, 1, 3] [1, 2] \xc3\xa9l oll\xc3\xa9h 5");
  // Attribute access prefers methods (m.items is dict.items), subscripts prefer keys.
  EXPECT_EQ(render("{{ m['items'] }} {{ m.items() | list }}", ctx), "3 [('role', 'user'), ('items', 3)]");
}

TEST(ChatExpr, Tests) {
  const Json ctx = {{"n", nullptr}, {"d", Json::object()}, {"l", Json::array()}};
  EXPECT_EQ(render("{{ x is defined }}{{ x is not defined }}{{ n is none }}{{ n is not none }}", ctx),
            "FalseTrueTrueFalse");
  EXPECT_EQ(render("{{ 's' is string }}{{ d is mapping }}{{ l is iterable }}{{ 's' is sequence }}{{ 1.5 is number }}", ctx),
            "TrueTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ true is true }}{{ 1 is true }}{{ false is false }}{{ false is boolean }}{{ 0 is boolean }}"),
            "TrueFalseTrueTrueFalse");
  EXPECT_EQ(render("{{ 4 is even }}{{ 3 is odd }}{{ 'x' is equalto 'x' }}{{ 9 is divisibleby 3 }}{{ x is iterable }}"),
            "TrueTrueTrueTrueTrue");
}

TEST(ChatExpr, StringFiltersAndMethods) {
  const Json ctx = {{"s", "  Hello World  "}};
  EXPECT_EQ(render("[{{ s | trim }}][{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}]", ctx),
            "[Hello World][Hello World][Hello World  ][  Hello World]");
  EXPECT_EQ(render("{{ s.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }}", ctx),
            "['Hello', 'World'] ['a', 'b', '', 'c'] ['a', 'b c'] ['a b', 'c']");
  EXPECT_EQ(render("{{ 'hELLO wOrld' | title }} {{ 'hELLO' | capitalize }} {{ 'aB' | upper }}{{ 'aB' | lower }}"),
            "Hello World Hello ABab");
  EXPECT_EQ(render("{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'a-b-c'.replace('-', '+', 1) }}"
                   "{{ 'a-b' | replace('-', '') }}"),
            "TrueTruea+b-cab");
  EXPECT_EQ(render("{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}"), "a\n  b\n\n  c|  a\n  b");
}

TEST(ChatExpr, SequenceFilters) {
  const Json ctx = {{"xs", {3, 1, 2}},
                    {"ms", {{{"role", "user"}, {"content", "hi"}}, {{"role", "assistant"}, {"content", "yo"}}}}};
  EXPECT_EQ(render("{{ xs | join(', ') }}|{{ xs | first }}|{{ xs | last }}|{{ xs | length }}|{{ xs | sort }}|"
                   "{{ xs | reverse | list }}|{{ xs | sum }}|{{ xs | max }}|{{ xs | min }}|{{ xs | unique | list }}",
                   ctx),
            "3, 1, 2|3|2|3|[1, 2, 3]|[2, 1, 3]|6|3|1|[3, 1, 2]");
  EXPECT_EQ(render("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}"
                   "{{ ms | rejectattr('role', 'equalto', 'user') | map(attribute='content') | join }}"
                   "{{ ms | map(attribute='role') | map('upper') | list }}",
                   ctx),
            "['hi']yo['USER', 'ASSISTANT']");
  EXPECT_EQ(render("{{ {'a': 1} | items | list }} {{ {'a': 1} | list }} {{ 'ab' | list }} {{ x | length }}"),
            "[('a', 1)] ['a'] ['a', 'b'] 0");
}

TEST(ChatExpr, ConversionFilters) {
  EXPECT_EQ(render("{{ x | default('d') }}|{{ '' | default('e', true) }}|{{ 0 | d(5) }}|{{ '42' | int + 1 }}|"
                   "{{ 'z' | int }}|{{ 3.7 | int }}|{{ 3 | string }}|{{ 2.5 | round }}|{{ '1.5' | float }}"),
            "d|e|0|43|0|3|3|2.0|1.5");
}

TEST(ChatExpr, DictMethods) {
  const Json ctx = {{"d", {{"a", 1}, {"b", 2}}}};
  EXPECT_EQ(render("{{ d.get('a') }}{{ d.get('q') }}{{ d.get('q', 5) }}{{ d.keys() | list }}{{ d.values() | list }}", ctx),
            "1None5['a', 'b'][1, 2]");
}

TEST(ChatExpr, Globals) {
  EXPECT_EQ(render("{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ range(3, 0, -1) | list }}"),
            "[0, 1, 2][1, 3, 5][3, 2, 1]");
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y %H:%M') }}"), "26 Jul 2024 00:00");
  EXPECT_EQ(render("{{ dict(a=1, b='x') | tojson }}"), R"({"a": 1, "b": "x"})");
}
