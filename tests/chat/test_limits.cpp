// tests/chat/test_limits.cpp — a chat template is untrusted input (it comes inside
// user-supplied GGUF files): whatever it does, a render ends quickly with a one-line
// error naming the limit it hit, never with a hang, a multi-gigabyte allocation or a
// stack overflow. Timings are not asserted; each render here ends within a second or
// two at the default limits (before they held, several ran past 20 s or crashed).
#include <gtest/gtest.h>

#include <string>

#include "chat_test_util.h"

using squeeze::chat::Json;
using squeeze::chat::RenderLimits;
using squeeze::chat::testing::render;
using squeeze::chat::testing::render_error;

namespace {

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// `body` inside a loop of `n` iterations with a namespace `ns` holding s='' and l=[].
std::string looped(const std::string& body, int n = 100000) {
  return "{% set ns = namespace(s='', l=[], d={}, x=none) %}{% for i in range(" + std::to_string(n) + ") %}" + body +
         "{% endfor %}{{ ns.s | length }}";
}

const char* const kBuilt = "built too much data";
const char* const kSteps = "step limit";
const char* const kDeep = "nested too deeply";

}  // namespace

// --- work and memory built up over many operations ------------------------------

TEST(ChatLimits, QuadraticStringAppendLoop) {
  const std::string e = render_error(looped("{% set ns.s = ns.s ~ 'xxxxxxxxxx' %}"));
  EXPECT_TRUE(has(e, kBuilt) || has(e, kSteps)) << e;
  EXPECT_EQ(e.rfind("t:1:", 0), 0u) << e;
}

TEST(ChatLimits, QuadraticListConcatenationLoop) {
  const std::string e = render_error(looped("{% set ns.l = ns.l + [i] %}"));
  EXPECT_TRUE(has(e, kBuilt) || has(e, kSteps)) << e;
}

TEST(ChatLimits, ListOfHugeStrings) {
  const std::string e = render_error(looped("{% set ns.l = ns.l + ['x' * 50000000] %}", 200));
  EXPECT_TRUE(has(e, kBuilt)) << e;
}

TEST(ChatLimits, ReadingAHugeStringRepeatedly) {
  // Each look-up of `big` used to copy its 60 MB.
  const std::string e =
      render_error("{% set big = 'x' * 60000000 %}{% for i in range(100000) %}{{ big | length }}{% endfor %}");
  EXPECT_TRUE(has(e, kSteps) || has(e, kBuilt)) << e;
  const std::string e2 = render_error("{% set big = 'x' * 60000000 %}{% for i in range(100000) %}{{ big[i] }}{% endfor %}");
  EXPECT_TRUE(has(e2, kSteps) || has(e2, kBuilt)) << e2;
}

TEST(ChatLimits, RepetitionOverflowAndEmptyRepetition) {
  // len * n overflowed size_t and passed the size check; '' * 10**18 looped 10**18 times.
  EXPECT_TRUE(has(render_error("{{ ('xx' * 4611686018427387904) | length }}"), "too large")) ;
  EXPECT_EQ(render("{{ ('' * 1000000000000000000) | length }}"), "0");
  EXPECT_EQ(render("{{ ([] * 1000000000000000000) | length }}"), "0");
  EXPECT_TRUE(has(render_error("{{ ([1, 2] * 4611686018427387904) | length }}"), "too large"));
}

TEST(ChatLimits, RangeInsideALoop) {
  const std::string e = render_error("{% for i in range(100000) %}{{ range(100000) | length }}{% endfor %}");
  EXPECT_TRUE(has(e, kSteps) || has(e, kBuilt)) << e;
}

TEST(ChatLimits, StringFiltersOnBigInputsInALoop) {
  const std::string pre = "{% set big = 'ab,' * 10000000 %}{% for i in range(100000) %}";
  for (const std::string op : {"big | upper | length", "big.split(',') | length", "big.replace(',', ';;;;') | length",
                               "big | indent(8) | length", "big | trim | length", "big.count(',')",
                               "'x' in big", "big | escape | length",
                               "big | title | length", "big[1:] | length", "big | reverse | length",
                               "(big ~ 'y') | length", "big | string | length"}) {
    const std::string e = render_error(pre + "{{ " + op + " }}{% endfor %}");
    EXPECT_TRUE(has(e, kSteps) || has(e, kBuilt) || has(e, "too large")) << op << ": " << e;
  }
}

TEST(ChatLimits, AmplifyingOperationsCheckBeforeBuilding) {
  // Each of these would build gigabytes from a few megabytes.
  const std::string big = "{% set big = 'x' * 1000000 %}";
  for (const std::string op : {"('a' * 1000000).replace('a', big) | length",
                               "(',' * 10000000).split(',') | length",
                               "(('\\n' * 1000000) | indent(big, true, true)) | length",
                               "([big] * 100000) | join | length", "([big] * 100000) | join(big) | length",
                               "big.join([big] * 100000) | length", "([big] * 100000) | tojson | length",
                               "([big] * 100000) | string | length", "([big] * 100000) | map('upper') | list | length",
                               "([big] * 100000) | sum(start='') | length"}) {
    const std::string e = render_error(big + "{{ " + op + " }}");
    EXPECT_TRUE(has(e, kBuilt) || has(e, "too large") || has(e, kSteps)) << op << ": " << e;
  }
}

TEST(ChatLimits, QuadraticBuiltinsCountTheirWork) {
  // unique and `in` on a list compare element by element: n^2 equality tests.
  const std::string list = "{% set l = range(100000) | list %}";
  EXPECT_TRUE(has(render_error(list + "{{ l | unique | list | length }}"), kSteps));
  EXPECT_TRUE(has(render_error(list + "{% for i in l %}{{ -1 in l }}{% endfor %}"), kSteps));
  EXPECT_TRUE(has(render_error(list + "{% for i in l %}{{ l | sort | first }}{% endfor %}"), kSteps));
  EXPECT_TRUE(has(render_error(list + "{% for i in l %}{{ l == l }}{% endfor %}"), kSteps));
}

TEST(ChatLimits, DictBuildingLoop) {
  // Each dict holds the previous one: deep, and rebuilt every iteration.
  const std::string e2 = render_error(looped("{% set ns.d = dict(ns.d, k=ns.d) %}"));
  EXPECT_TRUE(has(e2, kDeep) || has(e2, kBuilt) || has(e2, kSteps)) << e2;
  const std::string e3 = render_error(looped("{% set ns.d = dict(ns.d, a=i) %}{% set ns.l = ns.d.items() | list %}"));
  EXPECT_TRUE(has(e3, "(no error)") || has(e3, kSteps) || has(e3, kBuilt)) << e3;
}

TEST(ChatLimits, StrftimeFormatCannotAllocateWildly) {
  const std::string e = render_error("{% set f = '%Y' * 30000000 %}{% for i in range(1000) %}{{ strftime_now(f) | length }}{% endfor %}");
  EXPECT_TRUE(has(e, kBuilt) || has(e, kSteps) || has(e, "too large")) << e;
}

TEST(ChatLimits, MacroOutputInALoop) {
  const std::string e = render_error(
      "{% set big = 'x' * 60000000 %}{% macro m() %}{{ big }}{% endmacro %}{% for i in range(100000) %}{{ m() | length }}"
      "{% endfor %}");
  EXPECT_TRUE(has(e, kBuilt) || has(e, kSteps)) << e;
}

TEST(ChatLimits, BuiltBytesLimitIsConfigurable) {
  RenderLimits small;
  small.max_built_bytes = 1000;
  EXPECT_TRUE(has(render_error("{{ ('x' * 2000) | length }}", {}, small), kBuilt));
  EXPECT_EQ(render_error("{{ ('x' * 100) | length }}", {}, small), "(no error)");
}

// --- deeply nested values -----------------------------------------------------

TEST(ChatLimits, DeeplyNestedListBuiltInALoop) {
  // A 100k-deep value would overflow the stack when printed, compared or destroyed.
  const std::string e = render_error("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}");
  EXPECT_TRUE(has(e, kDeep)) << e;
  const std::string e2 = render_error("{% set ns = namespace(x={}) %}{% for i in range(100000) %}{% set ns.x = {'a': ns.x} %}{% endfor %}{{ ns.x | tojson }}");
  EXPECT_TRUE(has(e2, kDeep)) << e2;
  const std::string e3 = render_error("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}");
  EXPECT_TRUE(has(e3, kDeep)) << e3;
}

TEST(ChatLimits, NamespaceChainsAndCycles) {
  // Namespaces can be changed after they are stored, so they can chain or contain themselves.
  const std::string cycle = "{% set ns = namespace(x=none) %}{% set ns.x = ns %}";
  EXPECT_TRUE(has(render_error(cycle + "{{ ns }}"), kDeep));
  EXPECT_TRUE(has(render_error(cycle + "{{ ns == ns }}"), kDeep) || render_error(cycle + "{{ ns == ns }}") == "(no error)");
  EXPECT_TRUE(has(render_error(cycle + "{{ [ns] | tojson }}"), "not JSON serializable"));
  const std::string chain =
      "{% set head = namespace(x=none) %}{% set ns = namespace(p=head) %}{% for i in range(100000) %}"
      "{% set n = namespace(x=none) %}{% set p = ns.p %}{% set p.x = n %}{% set ns.p = n %}{% endfor %}";
  EXPECT_EQ(render_error(chain + "done"), "(no error)");  // destroying the chain must not overflow the stack
  EXPECT_TRUE(has(render_error(chain + "{{ head }}"), kDeep));
}

TEST(ChatLimits, DeeplyNestedContextIsRefused) {
  // Built and handed over by moves only: nlohmann's copy recurses (its destructor does not).
  Json deep = 1;
  for (int i = 0; i < 100000; ++i) {
    Json outer = Json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  Json context = Json::object();
  context["x"] = std::move(deep);
  const std::string e = render_error("{{ x | length }}", context);
  EXPECT_TRUE(has(e, "nested deeper than")) << e;
  Json ok = 1;
  for (int i = 0; i < 100; ++i) ok = Json::array({std::move(ok)});
  EXPECT_EQ(render("{{ x | tojson | length }}", {{"x", ok}}), "201");
}

TEST(ChatLimits, RecursionThroughMacros) {
  EXPECT_TRUE(has(render_error("{% macro f(n) %}{{ f(n + 1) ~ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "nesting too deep"));
  // Breadth instead of depth: 2^40 calls.
  const std::string e = render_error(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}");
  EXPECT_TRUE(has(e, kSteps)) << e;
}

// --- real templates are unaffected -----------------------------------------------

TEST(ChatLimits, RealisticTemplatesStillRender) {
  // A long conversation (~100k tokens) through the string-accumulating pattern some
  // templates use: quadratic, ~200 MB built in all, within the budget.
  Json messages = Json::array();
  for (int i = 0; i < 200; ++i)
    messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", std::string(2000, 'a' + i % 26)}});
  const std::string t =
      "{% set ns = namespace(s='') %}{% for m in messages %}{% set ns.s = ns.s ~ '<|' ~ m.role ~ '|>' ~ m.content | trim ~ "
      "'\\n' %}{% endfor %}{{ ns.s | length }}|{{ messages | map(attribute='content') | join('') | length }}|"
      "{{ messages | tojson | length > 0 }}";
  EXPECT_EQ(render(t, {{"messages", messages}}), std::to_string(200 * 2000 + 100 * 8 + 100 * 13 + 200) + "|400000|True");
  EXPECT_EQ(render("{{ [[1, [2, [3]]], {'a': (1, 2)}] }}|{{ ('ab' * 3) }}|{{ [1] * 3 }}"),
            "[[1, [2, [3]]], {'a': (1, 2)}]|ababab|[1, 1, 1]");
}
