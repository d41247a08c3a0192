// tests/chat/test_muse_glimmer_output.cpp — Muse Glimmer's generated text → reasoning,
// content and tool calls: the format's cases, the malformed forms models write, the
// leniencies, streaming (every split equals the one-shot parse, nothing undecided is
// emitted) and a fuzz that no input throws or breaks those properties.
#include <gtest/gtest.h>

#include <random>

#include "chat/muse_glimmer_output.h"
#include "common/parsed_output_test.h"

using squeeze::chat::expect;
using squeeze::chat::Json;
using squeeze::chat::MuseGlimmerOutputParser;
using squeeze::chat::parse_muse_glimmer_output;
using squeeze::chat::ParsedOutput;
using squeeze::chat::show;
using squeeze::chat::ToolCall;
using squeeze::chat::ToolParams;

namespace {

const std::string kCall =
    "<atem:function_calls>\n<atem:invoke name=\"special_function\">\n"
    "<atem:parameter name=\"arg1\">1</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";

ToolParams tools() {
  return ToolParams::from_json(Json::parse(R"([
    {"type": "function", "function": {"name": "special_function", "parameters": {"type": "object",
      "properties": {"arg1": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "read", "parameters": {"type": "object",
      "properties": {"filePath": {"type": "string"}, "limit": {"type": "integer"}}}}}
  ])"));
}

struct Case {
  const char* name;
  std::string text;
  ParsedOutput want;
  bool with_tools = true;
};

// The generation prompt ends with "<|start|>assistant": each text is what the model writes next.
std::vector<Case> cases() {
  const ToolCall special{"special_function", R"({"arg1":1})"};
  return {
      {"plain_answer", " to=user<|message|>Hello, world!\nWhat's up?<|eot|>", expect("", "Hello, world!\nWhat's up?")},
      {"answer_without_recipient", "<|message|>Hi<|eot|>", expect("", "Hi")},
      {"tool_call_first", " to=special_function<|message|>" + kCall, expect("", "", {special})},
      {"tool_call_first_closed", " to=special_function<|message|>" + kCall + "<|eot|>", expect("", "", {special})},
      {"answer_then_call",
       " to=user<|message|>Hello, world!\nWhat's up?<|eom|><|start|>assistant to=special_function<|message|>" + kCall,
       expect("", "Hello, world!\nWhat's up?", {special})},
      {"quoted_markup_stays_content", " to=user<|message|>You invoke it like this:\n" + kCall + "<|eot|>",
       expect("", "You invoke it like this:\n" + kCall)},
      {"json_after_reasoning",
       " to=self<|message|>I need to output the invoice details in JSON<|eom|>"
       "<|start|>assistant to=user<|message|>{\"amount\": 123.45, \"date\": \"2025-12-03\"}",
       expect("I need to output the invoice details in JSON", R"({"amount": 123.45, "date": "2025-12-03"})")},
      {"markup_in_reasoning_stays_reasoning",
       " to=self<|message|>I could use " + kCall + " here<|eom|><|start|>assistant to=user<|message|>Hello!<|eot|>",
       expect("I could use " + kCall + " here", "Hello!")},
      {"reasoning_then_call",
       " to=self<|message|>Need the file.<|eom|><|start|>assistant to=read<|message|><atem:function_calls>\n"
       "<atem:invoke name=\"read\">\n<atem:parameter name=\"filePath\">/tmp/a b.txt</atem:parameter>\n"
       "<atem:parameter name=\"limit\">10</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|>",
       expect("Need the file.", "", {{"read", R"({"filePath":"/tmp/a b.txt","limit":10})"}})},
      {"parallel_calls",
       " to=special_function<|message|>" + kCall + "<|eom|><|start|>assistant to=special_function<|message|>" + kCall +
           "<|eot|>",
       expect("", "", {special, special})},
      {"parameter_without_name_attribute",
       " to=read<|message|><atem:function_calls>\n<atem:invoke name=\"read\">\n"
       "<atem:parameter=\"filePath\">/etc/hosts</atem:parameter>\n</atem:invoke>\n</atem:function_calls>",
       expect("", "", {{"read", R"({"filePath":"/etc/hosts"})"}})},
      {"swallowed_parameter_tag",
       " to=read<|message|><atem:function_calls>\n<atem:invoke name=\"read.filePath\">/tmp/norm.txt"
       "</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eot|>",
       expect("", "", {{"read", R"({"filePath":"/tmp/norm.txt"})"}})},
      {"swallowed_parameter_tag_without_tools",
       " to=read<|message|><atem:function_calls>\n<atem:invoke name=\"read.filePath\">/tmp/norm.txt"
       "</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eot|>",
       expect("",
              "<atem:function_calls>\n<atem:invoke name=\"read.filePath\">/tmp/norm.txt</atem:parameter>\n"
              "</atem:invoke>\n</atem:function_calls>"),
       false},
      {"malformed_call_degrades_to_content",
       " to=self<|message|>hmm<|eom|><|start|>assistant to=read<|message|><atem:function_calls>\n"
       "<atem:invoke name=\"read\">\n<atem:parameter name=\"filePath\">/etc",
       expect("hmm", "<atem:function_calls>\n<atem:invoke name=\"read\">\n<atem:parameter name=\"filePath\">/etc")},
      {"truncated_reasoning", " to=self<|message|>Let me think about <|e", expect("Let me think about <|e", "")},
      {"no_header_is_content", "Just text, no header.", expect("", "Just text, no header.")},
      {"prompt_end_repeated", "<|start|>assistant to=user<|message|>Hi<|eot|>", expect("", "Hi")},
      {"start_without_eom_ends_the_message",
       " to=self<|message|>think<|start|>assistant to=user<|message|>answer<|eot|>", expect("think", "answer")},
      {"recipient_switch_in_place",
       " to=self<|message|>Checking the file. to=read<|message|><atem:function_calls>\n"
       "<atem:invoke name=\"read\">\n<atem:parameter name=\"filePath\">/x</atem:parameter>\n"
       "</atem:invoke>\n</atem:function_calls>",
       expect("Checking the file.", "", {{"read", R"({"filePath":"/x"})"}})},
      {"turn_over_after_eot", " to=user<|message|>Done.<|eot|><|start|>user<|message|>more?<|eot|>",
       expect("", "Done.")},
      {"other_role_ends_the_turn", " to=user<|message|>Done.<|eom|><|start|>user<|message|>more?", expect("", "Done.")},
      {"text_after_eom_without_header", " to=self<|message|>a<|eom|>b to c", expect("a", "b to c")},
      {"special_text_that_is_not_markup",
       " to=user<|message|>a <|message|> b <| c |> to= d to=x <|eo m|> <|start <|eom<|eot|",
       expect("", "a <|message|> b <| c |> to= d to=x <|eo m|> <|start <|eom<|eot|")},
      {"empty", "", expect("", "")},
  };
}

ParsedOutput feed_all(const std::vector<std::string>& chunks, const ToolParams& t) {
  MuseGlimmerOutputParser p(t);
  ParsedOutput out;
  for (const auto& c : chunks) out.append(p.feed(c));
  out.append(p.finish());
  return out;
}

}  // namespace

TEST(MuseGlimmerOutput, Cases) {
  for (const Case& c : cases()) {
    const ParsedOutput got = parse_muse_glimmer_output(c.text, c.with_tools ? tools() : ToolParams{});
    EXPECT_EQ(got, c.want) << c.name << "\n got: " << show(got) << "\nwant: " << show(c.want);
  }
}

TEST(MuseGlimmerOutput, StreamingEqualsOneShotAtEverySplit) {
  for (const Case& c : cases()) {
    const ToolParams t = c.with_tools ? tools() : ToolParams{};
    for (size_t cut = 0; cut <= c.text.size(); ++cut) {
      const ParsedOutput got = feed_all({c.text.substr(0, cut), c.text.substr(cut)}, t);
      ASSERT_EQ(got, c.want) << c.name << " split at " << cut << "\n got: " << show(got);
    }
    std::vector<std::string> bytes;
    for (char ch : c.text) bytes.emplace_back(1, ch);
    EXPECT_EQ(feed_all(bytes, t), c.want) << c.name << " byte by byte";
  }
}

TEST(MuseGlimmerOutput, HoldsBackOnlyWhatMayBeMarkup) {
  MuseGlimmerOutputParser p(tools());
  EXPECT_EQ(p.feed(" to=us"), ParsedOutput{});  // a header being written
  EXPECT_EQ(p.feed("er<|message|>Hello"), expect("", "Hello"));
  EXPECT_EQ(p.feed(" wor"), expect("", " wor"));
  EXPECT_EQ(p.feed("ld <|eo"), expect("", "ld "));  // "<|eo" may become "<|eom|>"
  EXPECT_EQ(p.feed("t|>ignored"), ParsedOutput{});
  EXPECT_EQ(p.finish(), ParsedOutput{});
  EXPECT_EQ(p.feed("after finish"), ParsedOutput{});

  MuseGlimmerOutputParser q(tools());
  EXPECT_EQ(q.feed(" to=self<|message|>I will call to=rea"), expect("I will call", ""));
  EXPECT_EQ(q.feed("d<|message|><atem:function_calls>"), ParsedOutput{});  // a call arrives whole
  EXPECT_EQ(q.feed("<atem:invoke name=\"read\"></atem:invoke></atem:function_calls>"), ParsedOutput{});
  EXPECT_EQ(q.finish(), expect("", "", {{"read", "{}"}}));
}

TEST(MuseGlimmerOutput, ToolCallsAreTypedByTheRequestsTools) {
  const std::string text =
      " to=read<|message|><atem:function_calls>\n<atem:invoke name=\"read\">\n"
      "<atem:parameter name=\"filePath\">42</atem:parameter>\n"
      "<atem:parameter name=\"limit\">42</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";
  EXPECT_EQ(parse_muse_glimmer_output(text, tools()).tool_calls,
            (std::vector<ToolCall>{{"read", R"({"filePath":"42","limit":42})"}}));
  EXPECT_EQ(parse_muse_glimmer_output(text).tool_calls,
            (std::vector<ToolCall>{{"read", R"({"filePath":42,"limit":42})"}}));
}

namespace {

// Pieces of the format to splice: whole headers and call blocks (so the fuzz reaches
// reasoning and calls), and their atoms in all the wrong places.
// clang-format off
const std::vector<std::string> kHeaders = {
    " to=self<|message|>", " to=user<|message|>", "<|message|>", " to=read<|message|>",
    " to=special_function<|message|>", "<|start|>assistant to=self<|message|>",
};
const std::vector<std::string> kPieces = {
    // whole units
    "<|eom|><|start|>assistant to=self<|message|>", "<|eom|><|start|>assistant to=read<|message|>",
    "<|eom|><|start|>assistant", " to=read<|message|>",
    "<atem:function_calls>\n<atem:invoke name=\"read\">\n<atem:parameter name=\"limit\">7</atem:parameter>\n"
    "</atem:invoke>\n</atem:function_calls>",
    "<atem:invoke name=\"read.filePath\">/x</atem:parameter>\n</atem:invoke>",
    "<atem:invoke name=\"special_function\"><atem:parameter=\"arg1\">{}</atem:parameter></atem:invoke>",
    "<atem:function_calls>\n<atem:invoke name=\"read\">\n<atem:parameter name=\"filePath\">",
    "</atem:parameter>\n</atem:invoke>\n</atem:function_calls>", "</atem:parameter>\n<atem:parameter name=\"limit\">",
    // atoms
    "<|eom|>", "<|eot|>", "<|start|>", "assistant", " to=", "to=", "self", "user", "read", "<|message|>", "<|", "|>",
    "<atem:function_calls>", "</atem:function_calls>", "<atem:invoke name=\"", "<atem:invoke name=\"read\">",
    "<atem:invoke name=\"read.filePath\">", "\">", "</atem:invoke>", "<atem:parameter name=\"",
    "<atem:parameter=\"limit\">", "</atem:parameter>", "\n", " ", "\"", "12", "{\"a\": [1, ", "]}", "é", "\xff",
    "\xe2\x82", "x",
};
// clang-format on

std::string random_text(std::mt19937& rng) {
  std::string s = rng() % 2 ? kHeaders[rng() % kHeaders.size()] : "";
  const int n = std::uniform_int_distribution<int>(0, 30)(rng);
  for (int i = 0; i < n; ++i) {
    if (rng() % 4 == 0) {
      s += static_cast<char>(rng() % 256);  // raw bytes: control, NUL, invalid UTF-8
    } else {
      s += kPieces[rng() % kPieces.size()];
    }
  }
  return s;
}

std::vector<std::string> random_chunks(const std::string& s, std::mt19937& rng) {
  std::vector<std::string> chunks;
  for (size_t i = 0; i < s.size();) {
    const size_t n = std::min(s.size() - i, static_cast<size_t>(rng() % 8));
    chunks.push_back(s.substr(i, n));
    i += n;
  }
  return chunks;
}

}  // namespace

TEST(MuseGlimmerOutput, FuzzNeverThrowsAndStreamsAsOneShot) {
  std::mt19937 rng(20260901);
  const ToolParams with = tools(), without;
  size_t calls = 0, reasoning = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string text = random_text(rng);
    const ToolParams& t = iter % 2 ? with : without;
    ParsedOutput whole;
    ASSERT_NO_THROW(whole = parse_muse_glimmer_output(text, t)) << Json(text).dump();
    ParsedOutput streamed;
    ASSERT_NO_THROW(streamed = feed_all(random_chunks(text, rng), t));
    ASSERT_EQ(streamed, whole) << Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
    for (const ToolCall& c : whole.tool_calls) {
      ASSERT_FALSE(c.name.empty());
      ASSERT_TRUE(Json::accept(c.arguments)) << c.arguments;
      ASSERT_TRUE(Json::parse(c.arguments).is_object());
    }
    calls += whole.tool_calls.size();
    reasoning += !whole.reasoning.empty();
  }
  // The fuzz reaches the interesting states, not only the content fallback.
  // (This seed: 115 calls, 5271 turns with reasoning.)
  EXPECT_GT(calls, 50u);
  EXPECT_GT(reasoning, 2000u);
}

TEST(MuseGlimmerOutput, RandomBytesNeverThrow) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text(rng() % 300, '\0');
    for (char& ch : text) ch = static_cast<char>(rng() % 256);
    ParsedOutput whole;
    ASSERT_NO_THROW(whole = parse_muse_glimmer_output(text, tools()));
    ASSERT_EQ(feed_all(random_chunks(text, rng), tools()), whole);
  }
}
