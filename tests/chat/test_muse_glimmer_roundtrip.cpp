// tests/chat/test_muse_glimmer_roundtrip.cpp — the template and the output parser agree:
// an assistant turn rendered by tests/fixtures/chat_templates/muse-glimmer.jinja, read back
// from where the generation prompt ends, gives the message it was rendered from (reasoning,
// answer, calls with their argument types).
#include <gtest/gtest.h>

#include "chat/muse_glimmer_output.h"
#include "chat/template.h"
#include "core/mapped_file.h"

using squeeze::chat::Json;
using squeeze::chat::parse_muse_glimmer_output;
using squeeze::chat::ParsedOutput;
using squeeze::chat::ToolParams;

namespace {

const Json kTools = Json::parse(R"([
  {"type": "function", "function": {"name": "files.write", "description": "Write a file.", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"},
    "append": {"type": "boolean"}, "mode": {"type": ["integer", "null"]}, "tags": {"type": "array"},
    "meta": {"type": "object"}, "ratio": {"type": "number"}}}}},
  {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}
])");

// What the model would write after the generation prompt, had it produced `assistant`.
std::string generated_part(const Json& assistant) {
  squeeze::chat::TemplateOptions o;
  o.name = "muse-glimmer.jinja";
  o.now = 1721952000;
  const squeeze::chat::Template t(squeeze::read_whole_file(SQUEEZE_CHAT_TEMPLATES "/muse-glimmer.jinja"), o);
  const Json user = Json::array({{{"role", "user"}, {"content", "Go."}}});
  Json both = user;
  both.push_back(assistant);
  const std::string prompt = render_chat(t, user, true, "", "", kTools);
  const std::string full = render_chat(t, both, false, "", "", kTools);
  EXPECT_EQ(full.substr(0, prompt.size()), prompt);
  return full.substr(std::min(prompt.size(), full.size()));
}

Json calls_as_json(const ParsedOutput& out) {
  Json calls = Json::array();
  for (const auto& c : out.tool_calls) calls.push_back({{"name", c.name}, {"arguments", Json::parse(c.arguments)}});
  return calls;
}

}  // namespace

TEST(MuseGlimmerRoundTrip, ReasoningAndAnswer) {
  const Json msg = {{"role", "assistant"},
                    {"reasoning_content", "Two and two.\n<atem:function_calls> is not a call"},
                    {"content", "4, not <atem:invoke name=\"x\">"}};
  const ParsedOutput out = parse_muse_glimmer_output(generated_part(msg), ToolParams::from_json(kTools));
  EXPECT_EQ(out.reasoning, msg["reasoning_content"]);
  EXPECT_EQ(out.content, msg["content"]);
  EXPECT_TRUE(out.tool_calls.empty());
}

TEST(MuseGlimmerRoundTrip, ToolCallsKeepTheirArgumentTypes) {
  const Json args = Json::parse(R"({"path": "/tmp/a b.txt", "content": "  007\n\"quoted\"\n</atem:parameter> inside\n",
                                    "append": false, "mode": null, "tags": ["x", 1, 2.5, true], "meta": {"k": [null]},
                                    "ratio": 0.25})");
  const Json msg = {
      {"role", "assistant"},
      {"reasoning_content", "Save it, then check the weather."},
      {"tool_calls",
       Json::array({{{"type", "function"}, {"function", {{"name", "files.write"}, {"arguments", args}}}},
                    {{"type", "function"},
                     {"function", {{"name", "get_weather"}, {"arguments", {{"city", "42"}, {"days", 3}}}}}}})}};
  const std::string text = generated_part(msg);
  const ParsedOutput out = parse_muse_glimmer_output(text, ToolParams::from_json(kTools));
  EXPECT_EQ(out.reasoning, "Save it, then check the weather.");
  EXPECT_EQ(out.content, "");
  const Json want = Json::array({{{"name", "files.write"}, {"arguments", args}},
                                 {{"name", "get_weather"}, {"arguments", {{"city", "42"}, {"days", 3}}}}});
  EXPECT_EQ(calls_as_json(out), want) << text;
}
