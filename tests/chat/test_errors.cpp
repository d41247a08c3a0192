// tests/chat/test_errors.cpp — every failure is one line naming the template position;
// undefined values fail only where jinja2's Undefined fails; hostile templates hit
// limits instead of exhausting memory, stack or time.
#include <gtest/gtest.h>

#include "chat_test_util.h"

using squeeze::chat::Json;
using squeeze::chat::RenderLimits;
using squeeze::chat::testing::render;
using squeeze::chat::testing::render_error;

namespace {
bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }
}  // namespace

TEST(ChatErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(render_error("{{ 1 + }}"), "t:1:8: expected an expression, got '}}'");
  EXPECT_EQ(render_error("ok\n  {% if x %}never"), "t:2:3: block opened here is never closed: expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(render_error("{% endfor %}"), "t:1:4: unknown or unsupported tag 'endfor'");
  EXPECT_EQ(render_error("{% include 'x' %}"), "t:1:4: unknown or unsupported tag 'include'");
  EXPECT_EQ(render_error("{{ 'abc }}"), "t:1:4: unterminated string");
  EXPECT_EQ(render_error("{# open"), "t:1:1: unterminated comment");
  EXPECT_EQ(render_error("{{ x"), "t:1:1: unterminated '{{' tag");
  EXPECT_EQ(render_error("{% break %}"), "t:1:4: 'break' outside a loop");
  EXPECT_EQ(render_error("{{ a ? b }}"), "t:1:6: unexpected character '?'");
}

TEST(ChatErrors, RuntimeErrorsNameThePosition) {
  EXPECT_EQ(render_error("\n{{ raise_exception('Roles must alternate') }}"), "t:2:4: Roles must alternate");
  EXPECT_EQ(render_error("{{ 1 / 0 }}"), "t:1:6: division by zero");
  EXPECT_EQ(render_error("{{ 'a' + 1 }}"), "t:1:8: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(render_error("{{ x | nosuch }}"), "t:1:8: no filter named 'nosuch'");
  EXPECT_EQ(render_error("{{ [1].append(2) }}"), "t:1:7: access to attribute 'append' of 'list' object is unsafe.");
}

TEST(ChatErrors, UndefinedIsLenientUntilUsedStrictly) {
  EXPECT_EQ(render("[{{ x }}][{{ x | length }}][{% for a in x %}{% endfor %}][{{ x is defined }}][{{ x ~ 'a' }}]"),
            "[][0][][False][a]");
  EXPECT_EQ(render("[{{ m.missing }}][{{ m['missing'] }}][{{ m.missing is defined }}]", {{"m", Json::object()}}),
            "[][][False]");
  EXPECT_EQ(render_error("{{ x.y }}"), "t:1:5: 'x' is undefined");
  EXPECT_EQ(render_error("{{ m.a.b }}", {{"m", Json::object()}}), "t:1:7: 'dict object' has no attribute 'a'");
  EXPECT_EQ(render_error("{{ x + 1 }}"), "t:1:6: 'x' is undefined");
  EXPECT_EQ(render_error("{{ x() }}"), "t:1:4: 'x' is undefined");
}

TEST(ChatErrors, LimitsStopHostileTemplates) {
  EXPECT_TRUE(has(render_error("{% for i in range(100001) %}{% endfor %}"), "Range too big"));
  EXPECT_TRUE(has(render_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), "nesting too deep"));
  EXPECT_TRUE(has(render_error("{{ 'x' * 100000000000 }}"), "too large"));
  EXPECT_TRUE(has(render_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"),
                  "nested too deeply"));
  EXPECT_TRUE(has(render_error(std::string(2000, '[') + std::string(2000, ']')), "(no error)"));  // plain text
  RenderLimits small;
  small.max_steps = 1000;
  EXPECT_TRUE(has(render_error("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", {}, small),
                  "step limit"));
  small = {};
  small.max_output = 1000;
  EXPECT_TRUE(has(render_error("{% for i in range(1000) %}xxxxxxxxxx{% endfor %}", {}, small), "output too large"));
}

TEST(ChatErrors, MalformedInputsNeverCrash) {
  // Every prefix of a real template either renders or fails with a message.
  const std::string t =
      "{%- for m in messages -%}{{ '<|' + m['role'] + '|>' }}{% if m.content is string %}{{ m.content | trim }}"
      "{% else %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}{%- endfor -%}"
      "{% raw %}{{x}}{% endraw %}{# c #}{{ {'a': [1, (2, 3)]} | tojson }}";
  const Json ctx = {{"messages", {{{"role", "user"}, {"content", " hi "}}}}};
  for (size_t n = 0; n <= t.size(); ++n) {
    const std::string msg = render_error(t.substr(0, n), ctx);
    EXPECT_TRUE(msg == "(no error)" || msg.rfind("t:", 0) == 0) << n << ": " << msg;
  }
}
