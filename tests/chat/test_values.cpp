// tests/chat/test_values.cpp — tojson as transformers' json.dumps(ensure_ascii=False):
// separators, indent, key order, float repr, string escapes, and its options.
#include <gtest/gtest.h>

#include "chat/value.h"
#include "chat_test_util.h"

using squeeze::chat::float_repr;
using squeeze::chat::Json;
using squeeze::chat::testing::render;

TEST(ChatValues, FloatReprIsPythons) {
  EXPECT_EQ(float_repr(1.0), "1.0");
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(0.00001), "1e-05");
  EXPECT_EQ(float_repr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(float_repr(123456789.123), "123456789.123");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
}

TEST(ChatValues, TojsonIsJsonDumpsWithoutAsciiEscapes) {
  // Key order as given; ", " and ": "; non-ASCII kept; <, >, &, ' not HTML-escaped
  // (transformers replaces jinja2's HTML-safe tojson).
  const Json ctx = Json::parse(R"({"d": {"z": "\u00e9<>&'\"", "a": [1, 2.0, null, true], "e": {}, "l": []}})");
  EXPECT_EQ(render("{{ d | tojson }}", ctx),
            "{\"z\": \"\xc3\xa9<>&'\\\"\", \"a\": [1, 2.0, null, true], \"e\": {}, \"l\": []}");
  EXPECT_EQ(render("{{ d | tojson(indent=2) }}", ctx),
            "{\n  \"z\": \"\xc3\xa9<>&'\\\"\",\n  \"a\": [\n    1,\n    2.0,\n    null,\n    true\n  ],\n"
            "  \"e\": {},\n  \"l\": []\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true, separators=(',', ':')) }}"), R"({"a":2,"b":1})");
  EXPECT_EQ(render("{{ '\u00e9\U0001F600\n\u0001' | tojson(ensure_ascii=true) }}"),
            R"("\u00e9\ud83d\ude00\n\u0001")");
}

TEST(ChatValues, TojsonRejectsWhatJsonDumpsRejects) {
  EXPECT_NE(squeeze::chat::testing::render_error("{{ x | tojson }}").find("not JSON serializable"), std::string::npos);
}
