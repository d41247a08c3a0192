// tests/chat/test_atem_calls.cpp — ATEM call markup → tool calls: the canonical form,
// arguments typed by the tools' schemas, values holding markup, the malformed forms models
// write (`<atem:parameter="x">`, a swallowed parameter tag), and what is refused.
#include <gtest/gtest.h>

#include "chat/atem_calls.h"

using squeeze::chat::Json;
using squeeze::chat::ParamKind;
using squeeze::chat::parse_atem_calls;
using squeeze::chat::schema_admits_string;
using squeeze::chat::ToolCall;
using squeeze::chat::ToolParams;

namespace {

ToolParams test_tools() {
  return ToolParams::from_json(Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
      "where": {"type": "object", "properties": {"lat": {"type": "number"}}}, "tags": {"type": "array"},
      "zip": {"type": ["string", "null"]}, "unit": {"enum": ["c", "f"]}}}}},
    {"name": "read", "parameters": {"properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}},
    {"name": "files.write", "parameters": {"properties": {"content": {"type": "string"}}}}
  ])"));
}

std::string call(const std::string& name, const std::string& params) {
  return "<atem:function_calls>\n<atem:invoke name=\"" + name + "\">\n" + params +
         "</atem:invoke>\n</atem:function_calls>";
}

std::string param(const std::string& name, const std::string& value) {
  return "<atem:parameter name=\"" + name + "\">" + value + "</atem:parameter>\n";
}

std::vector<ToolCall> calls_of(const std::string& body, const ToolParams& tools = test_tools()) {
  const auto calls = parse_atem_calls(body, tools);
  EXPECT_TRUE(calls.has_value()) << body;
  return calls.value_or(std::vector<ToolCall>{});
}

}  // namespace

TEST(ChatToolParams, SchemaKinds) {
  const ToolParams t = test_tools();
  EXPECT_TRUE(t.has_tool("get_weather") && t.has_tool("read") && t.has_tool("files.write"));
  EXPECT_FALSE(t.has_tool("files"));
  EXPECT_EQ(t.kind("get_weather", "city"), ParamKind::string);
  EXPECT_EQ(t.kind("get_weather", "days"), ParamKind::json);
  EXPECT_EQ(t.kind("get_weather", "where"), ParamKind::json);
  EXPECT_EQ(t.kind("get_weather", "zip"), ParamKind::string);
  EXPECT_EQ(t.kind("get_weather", "unit"), ParamKind::string);
  EXPECT_EQ(t.kind("get_weather", "nope"), ParamKind::unknown);
  EXPECT_EQ(t.kind("nope", "city"), ParamKind::unknown);

  EXPECT_TRUE(schema_admits_string(Json::object()));
  EXPECT_TRUE(schema_admits_string(Json::parse(R"({"anyOf": [{"type": "integer"}, {"type": "string"}]})")));
  EXPECT_FALSE(schema_admits_string(Json::parse(R"({"oneOf": [{"type": "integer"}, {"type": "null"}]})")));
  EXPECT_FALSE(schema_admits_string(Json::parse(R"({"enum": [1, 2]})")));
  EXPECT_FALSE(schema_admits_string(Json::parse(R"({"const": 3})")));
  EXPECT_FALSE(schema_admits_string(Json::parse(R"({"properties": {}})")));
  EXPECT_TRUE(schema_admits_string(Json::parse(R"({"$ref": "#/defs/x"})")));
}

TEST(ChatToolParams, MalformedToolListsGiveNoTools) {
  for (const char* bad : {"null", "{}", "3", R"([1, "x", null, {"function": 2}, {"name": ""}, {"name": 5}])"})
    EXPECT_TRUE(ToolParams::from_json(Json::parse(bad)).empty()) << bad;
  const ToolParams t = ToolParams::from_json(Json::parse(R"([{"name": "f", "parameters": {"properties": [1]}}])"));
  EXPECT_TRUE(t.has_tool("f"));
  EXPECT_EQ(t.kind("f", "x"), ParamKind::unknown);
}

TEST(ChatAtem, CanonicalCallWithTypedArguments) {
  const auto calls =
      calls_of(call("get_weather", param("city", "Paris") + param("days", "2") + param("metric", "true") +
                                       param("where", R"({"lat": 48.85})") + param("tags", "[1, \"a\"]")));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, R"({"city":"Paris","days":2,"metric":true,"where":{"lat":48.85},"tags":[1,"a"]})");
}

TEST(ChatAtem, StringParametersStayStringsVerbatim) {
  // What would be JSON elsewhere is text for a string parameter: quotes, spaces, numbers.
  const auto calls = calls_of(call("get_weather", param("city", " \"Paris\" ") + param("zip", "007") +
                                                      param("unit", "null") + param("days", " 14 ")));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"city":" \"Paris\" ","zip":"007","unit":"null","days":14})");
}

TEST(ChatAtem, NonStringTextThatIsNotJsonStaysAString) {
  const auto calls = calls_of(call("get_weather", param("days", "two") + param("metric", "yes please")));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"days":"two","metric":"yes please"})");
}

TEST(ChatAtem, UndeclaredParametersAndUnknownToolsReadJsonWhenTheyCan) {
  const auto calls = calls_of(call("mystery", param("n", "42") + param("s", "hello world") +
                                                  param("o", "{\"a\": null}") + param("q", "\"quoted\"")),
                              ToolParams{});
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "mystery");
  EXPECT_EQ(calls[0].arguments, R"({"n":42,"s":"hello world","o":{"a":null},"q":"quoted"})");
}

TEST(ChatAtem, MultilineValuesAndMarkupInsideValues) {
  // A closer followed by anything but the next tag is part of the value.
  const std::string content = "line 1\n  <b>x</b> &amp;\n<atem:parameter name=\"y\">z</atem:parameter> tail\n";
  const auto calls = calls_of(call("files.write", param("content", content)));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "files.write");
  EXPECT_EQ(Json::parse(calls[0].arguments)["content"], content);
}

TEST(ChatAtem, SeveralInvokesBlocksAndNoWrapper) {
  const std::string a = "<atem:invoke name=\"read\">\n" + param("path", "/a") + "</atem:invoke>";
  const std::string b = "<atem:invoke name=\"read\">" + param("path", "/b") + param("limit", "3") + "</atem:invoke>";
  auto calls = calls_of("<atem:function_calls>\n" + a + "\n" + b + "\n</atem:function_calls>\n" + call("read", ""));
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].arguments, R"({"path":"/a"})");
  EXPECT_EQ(calls[1].arguments, R"({"path":"/b","limit":3})");
  EXPECT_EQ(calls[2].arguments, "{}");
  calls = calls_of("\n  " + a + "\n");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"path":"/a"})");
}

TEST(ChatAtem, ParameterWithoutNameAttribute) {
  // <atem:parameter="x"> — the `name` left out, seen from the released model.
  const auto calls =
      calls_of(call("read", "<atem:parameter=\"path\">/etc/hosts</atem:parameter>\n" + param("limit", "5")));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"path":"/etc/hosts","limit":5})");
}

TEST(ChatAtem, SwallowedParameterTagRecoveredWhenTheToolsConfirmIt) {
  // The opening parameter tag swallowed, its name glued to the invoke's.
  const std::string body =
      "<atem:function_calls>\n<atem:invoke name=\"read.path\">/tmp/norm.txt</atem:parameter>\n"
      "</atem:invoke>\n</atem:function_calls>";
  auto calls = calls_of(body);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "read");
  EXPECT_EQ(calls[0].arguments, R"({"path":"/tmp/norm.txt"})");
  // ... followed by further, well-formed parameters.
  calls = calls_of(call("read.path", "/x</atem:parameter>\n" + param("limit", "9")));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"path":"/x","limit":9})");
  // Without tools, or when the split names no declared parameter, it is not a call.
  EXPECT_FALSE(parse_atem_calls(body, ToolParams{}));
  EXPECT_FALSE(parse_atem_calls(call("read.nope", "/x</atem:parameter>\n"), test_tools()));
  EXPECT_FALSE(parse_atem_calls(call("files.write", "text</atem:parameter>\n"), test_tools()));
}

TEST(ChatAtem, WhatIsNotACallBlock) {
  const ToolParams t = test_tools();
  for (const std::string& bad : {
           std::string(""), std::string("  \n"), std::string("Sure! ") + call("read", param("path", "/a")),
           call("read", param("path", "/a")) + " done", std::string("<atem:function_calls>\n</atem:function_calls>"),
           call("read", param("path", "/a")).substr(0, 60),                        // truncated
           call("read", "<atem:parameter name=\"path\">/a\n"),                     // value never closed
           call("read", "<atem:parameter name=\"path\">/a</atem:parameter> x\n"),  // closer not followed by a tag
           call("read", "<atem:param name=\"path\">/a</atem:param>\n"),            // unknown tag
           call("read", "<atem:parameter name=path>/a</atem:parameter>\n"),        // unquoted name
           call("", ""), call("re\"ad", ""), std::string("<atem:invoke name=\"read\"></atem:invoke"),
           std::string("<atem:invokename=\"read\"></atem:invoke>"),
           std::string("<atem:function_calls><atem:invoke name=\"read\"></atem:invoke>"),  // wrapper not closed
       })
    EXPECT_FALSE(parse_atem_calls(bad, t)) << bad;
}

TEST(ChatAtem, HostileValuesDoNotThrow) {
  const ToolParams t = test_tools();
  const std::string deep(100000, '[');
  for (const std::string& v :
       {deep, deep + std::string(100000, ']'), std::string("1e999999"), std::string("123456789012345678901234567890"),
        std::string("\xff\xfe bad utf-8 \xc3"), std::string("\"\\ud800\""), std::string(1 << 16, '\0')}) {
    std::optional<std::vector<ToolCall>> calls;
    ASSERT_NO_THROW(calls = parse_atem_calls(call("get_weather", param("days", v) + param("city", v)), t));
    ASSERT_TRUE(calls.has_value());
    const Json args = Json::parse((*calls)[0].arguments);  // always valid JSON
    EXPECT_TRUE(args["city"].is_string());
  }
}
