// tests/chat/test_family_output.cpp — the other families' generated text → reasoning, content
// and tool calls: Qwen's tags (<think>, <tool_call> JSON) and Llama 3's JSON calls. Each
// case's expected parse, the malformed forms (which degrade to content as written),
// streaming (every split into two and three pieces equals the one-shot parse) and a random
// fuzz that nothing throws and splits never matter.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>

#include "chat/json_tool_calls.h"
#include "chat/llama3_output.h"
#include "chat/tagged_output.h"
#include "chat/value.h"
#include "common/parsed_output_test.h"

using namespace squeeze::chat;

namespace {

using MakeParser = std::function<std::unique_ptr<OutputParser>()>;

ParsedOutput streamed(const MakeParser& make, const std::vector<std::string_view>& pieces) {
  auto p = make();
  ParsedOutput all;
  for (std::string_view piece : pieces) all.append(p->feed(piece));
  all.append(p->finish());
  all.append(p->feed("ignored after finish"));
  return all;
}

// One-shot, then every split into two pieces and a sample of splits into three.
void expect_parse(const MakeParser& make, const std::string& name, const std::string& text, const ParsedOutput& want) {
  const ParsedOutput whole = streamed(make, {text});
  EXPECT_EQ(whole, want) << name << ": " << show(whole);
  for (size_t i = 0; i <= text.size(); ++i) {
    const std::string_view t = text;
    const ParsedOutput two = streamed(make, {t.substr(0, i), t.substr(i)});
    ASSERT_EQ(two, want) << name << " split at " << i << ": " << show(two);
    for (size_t j = i; j <= text.size(); j += 7) {
      const ParsedOutput three = streamed(make, {t.substr(0, i), t.substr(i, j - i), t.substr(j)});
      ASSERT_EQ(three, want) << name << " split at " << i << "," << j;
    }
  }
}

const ToolCall kParis{"get_weather", R"({"city":"Paris","days":2})"};

}  // namespace

TEST(JsonToolCalls, ObjectsWithANameAndArguments) {
  EXPECT_EQ(json_tool_call(R"( {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}} )"), kParis);
  EXPECT_EQ(json_tool_call(R"({"name": "get_weather", "parameters": {"city": "Paris", "days": 2}})"), kParis);
  EXPECT_EQ(json_tool_call(R"({"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"})"), kParis);
  EXPECT_EQ(json_tool_call(R"({"name": "now"})"), (ToolCall{"now", "{}"}));
  for (const char* bad : {"", "{}", "[1]", R"({"name": ""})", R"({"name": 3, "arguments": {}})",
                          R"({"name": "f", "arguments": [1]})", R"({"name": "f", "arguments": "nope"})",
                          R"({"name": "f", "arguments": {)", "not json"})
    EXPECT_FALSE(json_tool_call(bad).has_value()) << bad;
  std::string deep = R"({"name": "f", "arguments": )";
  for (int i = 0; i < 5000; ++i) deep += "[";
  EXPECT_FALSE(json_tool_call(deep).has_value());  // bounded depth, no stack overflow
  const auto two = json_tool_calls(R"({"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": "}{;"}})");
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].arguments, R"({"x":"}{;"})");
  EXPECT_FALSE(json_tool_calls(R"(; {"name": "a"})").has_value());
  EXPECT_FALSE(json_tool_calls(R"({"name": "a"} trailing)").has_value());
}

TEST(TaggedOutput, ThinkingAnswersAndCallsAsQwenWritesThem) {
  const MakeParser qwen = [] { return std::make_unique<TaggedOutputParser>(); };
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>";
  const std::vector<std::tuple<std::string, std::string, ParsedOutput>> cases = {
      {"plain", "Hello, world!\n", expect("", "Hello, world!\n")},
      {"think_then_answer", "<think>\nParis is in France.\n\n</think>\n\nIt is Paris.", expect("Paris is in France.", "It is Paris.")},
      {"empty_think", "<think>\n\n</think>\n\nHi", expect("", "Hi")},
      {"think_with_inner_newlines", "<think>\n\na\n\nb\n</think>c", expect("a\n\nb", "c")},
      {"leading_space_then_think", "  <think>x</think>y", expect("x", "y")},
      {"call", call, expect("", "", {kParis})},
      {"think_then_call", "<think>\nNeed weather.\n</think>\n\n" + call, expect("Need weather.", "", {kParis})},
      {"text_then_calls", "Let me check.\n" + call + "\n" + call + "\n", expect("", "Let me check.\n", {kParis, kParis})},
      {"call_then_text", call + "\n\nDone.", expect("", "Done.", {kParis})},
      {"unclosed_think", "<think>\nstill thinking\n", expect("still thinking", "")},
      {"unclosed_call", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}",
       expect("", "", {kParis})},
      {"malformed_call", "<tool_call>\n{\"name\": get_weather}\n</tool_call> ok",
       expect("", "<tool_call>\n{\"name\": get_weather}\n</tool_call> ok")},
      {"malformed_unclosed_call", "a <tool_call>{\"nam", expect("", "a <tool_call>{\"nam")},
      {"think_later_is_content", "Answer <think>x</think>", expect("", "Answer <think>x</think>")},
      {"tag_prefixes", "<thin <tool_cal </think", expect("", "<thin <tool_cal </think")},
      {"only_space", " \n ", expect("", " \n ")},
  };
  for (const auto& [name, text, want] : cases) expect_parse(qwen, name, text, want);
  // A template that opened <think> in the prompt (Qwen3.5's): the text starts inside it.
  const MakeParser prefilled = [] { return std::make_unique<TaggedOutputParser>(true); };
  expect_parse(prefilled, "prefilled", "Paris.\n</think>\n\nParis", expect("Paris.", "Paris"));
  expect_parse(prefilled, "prefilled_unclosed", "\nhmm", expect("hmm", ""));
}

TEST(Llama3Output, CallsAreTheWholeAnswer) {
  const MakeParser llama = [] { return std::make_unique<Llama3OutputParser>(); };
  const std::vector<std::tuple<std::string, std::string, ParsedOutput>> cases = {
      {"plain", "The capital is Paris.", expect("", "The capital is Paris.")},
      {"call", R"({"name": "get_weather", "parameters": {"city": "Paris", "days": 2}})", expect("", "", {kParis})},
      {"python_tag_call", "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}",
       expect("", "", {kParis})},
      {"spaced_calls", "\n {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}};"
                       " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}\n",
       expect("", "", {kParis, kParis})},
      {"json_not_a_call", "{\"answer\": 42}", expect("", "{\"answer\": 42}")},
      {"call_then_text", R"({"name": "f", "parameters": {}} and more)", expect("", R"({"name": "f", "parameters": {}} and more)")},
      {"cut_off_call", R"({"name": "f", "parameters": {"a": )", expect("", R"({"name": "f", "parameters": {"a": )")},
      {"builtin_call", "<|python_tag|>brave_search.call(query=\"x \\\"y\\\"\")",
       expect("", "", {{"brave_search", R"({"query":"x \"y\""})"}})},
      {"builtin_call_keywords", " <|python_tag|>wolfram_alpha.call( query = 'a,b)' , n=2, exact=True, hint=None )\n",
       expect("", "", {{"wolfram_alpha", R"j({"query":"a,b)","n":2,"exact":true,"hint":null})j"}})},
      {"builtin_no_arguments", "<|python_tag|>tool.call()", expect("", "", {{"tool", "{}"}})},
      {"builtin_untagged_is_text", "brave_search.call(query=\"x\")", expect("", "brave_search.call(query=\"x\")")},
      {"builtin_positional", "<|python_tag|>f.call(\"x\")", expect("", "<|python_tag|>f.call(\"x\")")},
      {"builtin_unterminated", "<|python_tag|>f.call(q=\"x)", expect("", "<|python_tag|>f.call(q=\"x)")},
      {"builtin_repeated_key", "<|python_tag|>f.call(q=1, q=2)", expect("", "<|python_tag|>f.call(q=1, q=2)")},
      {"builtin_code", "<|python_tag|>print(1)", expect("", "<|python_tag|>print(1)")},
      {"tag_prefix_text", "<|pyt", expect("", "<|pyt")},
      {"leading_space_text", "  Sure.", expect("", "  Sure.")},
      {"empty", "", expect("", "")},
  };
  for (const auto& [name, text, want] : cases) expect_parse(llama, name, text, want);
}

// Random texts built from the formats' pieces: nothing throws, and a random split into up
// to five pieces always equals the one-shot parse.
TEST(FamilyOutput, FuzzedSplitsNeverMatter) {
  const std::vector<std::string> pieces = {"<think>", "</think>", "<tool_call>", "</tool_call>", "\n", " ", "x",
                                           "{\"name\": \"f\", \"arguments\": {\"a\": 1}}", "{", "}", "\"", ";",
                                           "<|python_tag|>", "<", "</", "think", "é", "\n\n", "f.call(",
                                           "q=", "'a'", ")", ","};
  const std::vector<MakeParser> parsers = {[] { return std::make_unique<TaggedOutputParser>(); },
                                           [] { return std::make_unique<TaggedOutputParser>(true); },
                                           [] { return std::make_unique<Llama3OutputParser>(); }};
  std::mt19937 rng(17);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    for (const MakeParser& make : parsers) {
      const ParsedOutput whole = streamed(make, {text});
      std::vector<size_t> cuts = {0, text.size()};
      for (int c = 0; c < 4; ++c) cuts.push_back(rng() % (text.size() + 1));
      std::sort(cuts.begin(), cuts.end());
      std::vector<std::string_view> split;
      for (size_t c = 0; c + 1 < cuts.size(); ++c) split.push_back(std::string_view(text).substr(cuts[c], cuts[c + 1] - cuts[c]));
      ASSERT_EQ(streamed(make, split), whole) << Json(text).dump();
    }
  }
}
