// tests/chat/test_harmony_output.cpp — harmony's generated text (gpt-oss) → reasoning,
// content and tool calls: the format's cases (both placements of the recipient, preambles,
// parallel calls), the malformed forms (a missing <|message|>, unknown channels, truncation,
// text between messages, bodies that are not JSON), streaming (every split and byte by byte
// equal the one-shot parse, nothing undecided is emitted), a fuzz that no input throws or
// breaks those properties, and the round trip through the published template.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "chat/harmony_output.h"
#include "chat/template.h"
#include "common/parsed_output_test.h"
#include "core/mapped_file.h"

using squeeze::chat::expect;
using squeeze::chat::HarmonyOutputParser;
using squeeze::chat::Json;
using squeeze::chat::parse_harmony_output;
using squeeze::chat::ParsedOutput;
using squeeze::chat::show;
using squeeze::chat::ToolCall;

namespace {

struct Case {
  const char* name;
  std::string text;
  ParsedOutput want;
};

const ToolCall kParis{"get_weather", R"({"city":"Paris","days":2})"};
const std::string kArgs = R"({"city": "Paris", "days": 2})";

// The generation prompt ends with "<|start|>assistant": each text is what the model writes next.
std::vector<Case> cases() {
  const std::string next = "<|end|><|start|>assistant";
  return {
      {"answer", "<|channel|>final<|message|>Hello, world!\nWhat's up?<|return|>",
       expect("", "Hello, world!\nWhat's up?")},
      {"analysis_then_answer",
       "<|channel|>analysis<|message|>The user greets me.<|end|>"
       "<|start|>assistant<|channel|>final<|message|>Hi!<|return|>",
       expect("The user greets me.", "Hi!")},
      {"call_recipient_before_channel",
       "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant to=functions.get_weather"
       "<|channel|>commentary json<|message|>" +
           kArgs + "<|call|>",
       expect("Need the weather.", "", {kParis})},
      {"call_recipient_after_channel",
       "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + kArgs + "<|call|>",
       expect("", "", {kParis})},
      {"call_recipient_after_channel_no_space",
       "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>" + kArgs + "<|call|>",
       expect("", "", {kParis})},
      {"call_recipient_before_channel_constrained",
       " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>" + kArgs + "<|call|>",
       expect("", "", {kParis})},
      {"call_without_channel", " to=functions.get_weather<|message|>" + kArgs, expect("", "", {kParis})},
      {"call_in_the_analysis_channel", "<|channel|>analysis to=functions.get_weather<|message|>" + kArgs + "<|call|>",
       expect("", "", {kParis})},
      {"call_cut_at_the_stop",  // the <|call|> stop's text does not reach the parser
       "<|channel|>analysis<|message|>Call it." + next +
           " to=functions.get_weather<|channel|>commentary json<|message|>" + kArgs,
       expect("Call it.", "", {kParis})},
      {"preamble_then_call",
       "<|channel|>analysis<|message|>Weather tool." + next + "<|channel|>commentary<|message|>Checking Paris." + next +
           " to=functions.get_weather<|channel|>commentary json<|message|>" + kArgs + "<|call|>",
       expect("Weather tool.", "Checking Paris.", {kParis})},
      {"parallel_calls",
       " to=functions.get_weather<|channel|>commentary json<|message|>" + kArgs +
           "<|call|><|start|>assistant"
           " to=functions.get_time<|channel|>commentary json<|message|>{}<|call|>",
       expect("", "", {kParis, {"get_time", "{}"}})},
      {"arguments_compact_in_order",
       " to=functions.f<|channel|>commentary json<|message|>\n{ \"z\" : \"Zürich\", \"a\": {\"b\": [1, 2.5, null]} }\n",
       expect("", "", {{"f", R"({"z":"Zürich","a":{"b":[1,2.5,null]}})"}})},
      {"recipient_not_a_function", " to=browser.search<|channel|>commentary json<|message|>{\"q\": 1}<|call|>",
       expect("", "", {{"browser.search", R"({"q":1})"}})},
      // Malformed forms, read as meant where possible and as text otherwise.
      {"body_not_json_is_content", " to=functions.get_weather<|channel|>commentary json<|message|>Paris please<|call|>",
       expect("", "Paris please")},
      {"body_not_json_in_analysis_is_reasoning", " to=python<|channel|>analysis<|message|>print(1 + 1)<|call|>",
       expect("print(1 + 1)", "")},
      {"truncated_arguments_are_content",
       " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Pa", expect("", "{\"city\": \"Pa")},
      {"arguments_not_an_object", " to=functions.f<|channel|>commentary json<|message|>[1, 2]", expect("", "[1, 2]")},
      {"empty_function_name", " to=functions.<|channel|>commentary json<|message|>{}", expect("", "{}")},
      {"answer_to_the_user", " to=user<|channel|>final<|message|>Hi", expect("", "Hi")},
      {"missing_message_token",
       "<|channel|>analysis Thinking it over.<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
       expect(" Thinking it over.", "Done.")},
      {"missing_message_token_after_recipient", "<|channel|>commentary to=functions.get_weather " + kArgs + "<|call|>",
       expect("", "", {kParis})},
      {"unknown_channel_is_content", "<|channel|>scratchpad<|message|>notes" + next + "<|channel|>final<|message|>ok",
       expect("", "notesok")},
      {"no_channel_is_content", "<|message|>Hi<|return|>", expect("", "Hi")},
      {"truncated_analysis", "<|channel|>analysis<|message|>Let me think <|e", expect("Let me think <|e", "")},
      {"truncated_header", "<|channel|>analysis<|message|>a" + next + "<|channel|>fin", expect("a", "")},
      {"truncated_recipient", "<|channel|>commentary to=functions.get_we", expect("", "")},
      // max_tokens ends the output between the header's tokens: nothing of it shows.
      {"cut_after_channel_token", "<|channel|>analysis<|message|>a" + next + "<|channel|>", expect("a", "")},
      {"cut_after_recipient", "<|channel|>analysis<|message|>a" + next + " to=functions.get_weather", expect("a", "")},
      {"cut_after_start", "<|channel|>analysis<|message|>a" + next, expect("a", "")},
      // A word after the channel is the body's type, or (<|message|> missing) the body: at
      // the end, undecided, it is the body.
      {"cut_after_a_word_after_the_channel", "<|channel|>commentary json", expect("", " json")},
      {"garbage_between_messages",
       "<|channel|>analysis<|message|>a<|end|>junk<|start|>assistant<|channel|>final<|message|>b<|return|>",
       expect("a", "junkb")},
      {"channel_switch_in_a_body", "<|channel|>analysis<|message|>think<|channel|>final<|message|>answer",
       expect("think", "answer")},
      {"start_without_end", "<|channel|>analysis<|message|>think<|start|>assistant<|channel|>final<|message|>answer",
       expect("think", "answer")},
      {"prompt_end_repeated", "<|start|>assistant<|channel|>final<|message|>Hi<|return|>", expect("", "Hi")},
      {"turn_over_after_return", "<|channel|>final<|message|>Done.<|return|><|channel|>final<|message|>more",
       expect("", "Done.")},
      {"other_role_ends_the_turn", "<|channel|>final<|message|>Done.<|end|><|start|>user<|message|>more?",
       expect("", "Done.")},
      {"no_header_is_content", "Just text, no header.", expect("", "Just text, no header.")},
      {"special_text_that_is_not_markup",
       "<|channel|>final<|message|>a <|channel|> b <|message|> c to=x <|en d|> <|channel|>x y z <|start <|end",
       expect("", "a <|channel|> b <|message|> c to=x <|en d|> <|channel|>x y z <|start <|end")},
      {"empty", "", expect("", "")},
  };
}

ParsedOutput feed_all(const std::vector<std::string>& chunks) {
  HarmonyOutputParser p;
  ParsedOutput out;
  for (const auto& c : chunks) out.append(p.feed(c));
  out.append(p.finish());
  out.append(p.feed("ignored after finish"));
  return out;
}

}  // namespace

TEST(HarmonyOutput, Cases) {
  for (const Case& c : cases()) {
    const ParsedOutput got = parse_harmony_output(c.text);
    EXPECT_EQ(got, c.want) << c.name << "\n got: " << show(got) << "\nwant: " << show(c.want);
  }
}

TEST(HarmonyOutput, StreamingEqualsOneShotAtEverySplit) {
  for (const Case& c : cases()) {
    for (size_t cut = 0; cut <= c.text.size(); ++cut) {
      const ParsedOutput got = feed_all({c.text.substr(0, cut), c.text.substr(cut)});
      ASSERT_EQ(got, c.want) << c.name << " split at " << cut << "\n got: " << show(got);
      for (size_t cut2 = cut; cut2 <= c.text.size(); cut2 += 5) {
        const ParsedOutput three =
            feed_all({c.text.substr(0, cut), c.text.substr(cut, cut2 - cut), c.text.substr(cut2)});
        ASSERT_EQ(three, c.want) << c.name << " split at " << cut << "," << cut2;
      }
    }
    std::vector<std::string> bytes;
    for (char ch : c.text) bytes.emplace_back(1, ch);
    EXPECT_EQ(feed_all(bytes), c.want) << c.name << " byte by byte";
  }
}

TEST(HarmonyOutput, HoldsBackOnlyWhatMayBeMarkup) {
  HarmonyOutputParser p;
  EXPECT_EQ(p.feed("<|channel|>analy"), ParsedOutput{});  // a header being written
  EXPECT_EQ(p.feed("sis<|message|>Thin"), expect("Thin", ""));
  EXPECT_EQ(p.feed("king <|e"), expect("king ", ""));  // "<|e" may become "<|end|>"
  EXPECT_EQ(p.feed("nd|><|start|>assistant<|channel|>final<|message|>It is"), expect("", "It is"));
  EXPECT_EQ(p.feed(" sunny.<|ret"), expect("", " sunny."));
  EXPECT_EQ(p.feed("urn|>ignored"), ParsedOutput{});
  EXPECT_EQ(p.finish(), ParsedOutput{});

  HarmonyOutputParser q;
  EXPECT_EQ(q.feed("<|channel|>analysis<|message|>Call.<|end|><|start|>assistant to=functions.get_weather"),
            expect("Call.", ""));
  EXPECT_EQ(q.feed("<|channel|>commentary json<|message|>{\"city\":"), ParsedOutput{});  // a call arrives whole
  EXPECT_EQ(q.feed(" \"Paris\", \"days\": 2}"), ParsedOutput{});
  EXPECT_EQ(q.feed("<|call|>"), expect("", "", {kParis}));
  EXPECT_EQ(q.finish(), ParsedOutput{});
}

namespace {

// Pieces of the format to splice: whole headers and bodies (so the fuzz reaches reasoning,
// preambles and calls), and their atoms in all the wrong places.
// clang-format off
const std::vector<std::string> kHeaders = {
    "<|channel|>analysis<|message|>", "<|channel|>final<|message|>", "<|channel|>commentary<|message|>",
    " to=functions.get_weather<|channel|>commentary json<|message|>",
    "<|channel|>commentary to=functions.f <|constrain|>json<|message|>", "<|start|>assistant<|channel|>final<|message|>",
};
const std::vector<std::string> kPieces = {
    // whole units
    "<|end|><|start|>assistant<|channel|>final<|message|>", "<|end|><|start|>assistant<|channel|>analysis<|message|>",
    "<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>",
    "<|end|><|start|>assistant<|channel|>commentary to=functions.f<|constrain|>json<|message|>",
    "{\"city\": \"Paris\", \"days\": 2}", "{}", "<|call|><|start|>assistant", "<|end|><|start|>assistant",
    // atoms
    "<|end|>", "<|call|>", "<|return|>", "<|start|>", "assistant", "<|channel|>", "<|constrain|>", "<|message|>",
    " to=", "to=", "functions.", "analysis", "final", "commentary", " json", "json", "user", "<|", "|>", "{", "}",
    "[1, ", "]", "\"", "\n", " ", "12", "é", "\xff", "\xe2\x82", "x",
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

TEST(HarmonyOutput, FuzzNeverThrowsAndStreamsAsOneShot) {
  std::mt19937 rng(20250805);
  size_t calls = 0, reasoning = 0, content = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string text = random_text(rng);
    ParsedOutput whole;
    ASSERT_NO_THROW(whole = parse_harmony_output(text))
        << Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
    ParsedOutput streamed;
    ASSERT_NO_THROW(streamed = feed_all(random_chunks(text, rng)));
    ASSERT_EQ(streamed, whole) << Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
    for (const ToolCall& c : whole.tool_calls) {
      ASSERT_FALSE(c.name.empty());
      ASSERT_TRUE(Json::accept(c.arguments)) << c.arguments;
      ASSERT_TRUE(Json::parse(c.arguments).is_object());
    }
    calls += whole.tool_calls.size();
    reasoning += !whole.reasoning.empty();
    content += !whole.content.empty();
  }
  // The fuzz reaches the interesting states, not only the content fallback.
  std::printf("fuzz: %zu calls, %zu turns with reasoning, %zu with content\n", calls, reasoning, content);
  EXPECT_GT(calls, 50u);
  EXPECT_GT(reasoning, 2000u);
  EXPECT_GT(content, 2000u);
}

TEST(HarmonyOutput, RandomBytesNeverThrow) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text(rng() % 300, '\0');
    for (char& ch : text) ch = static_cast<char>(rng() % 256);
    ParsedOutput whole;
    ASSERT_NO_THROW(whole = parse_harmony_output(text));
    ASSERT_EQ(feed_all(random_chunks(text, rng)), whole);
  }
}

namespace {

// What the model would write after the generation prompt, had it produced `assistant`:
// gpt-oss's published template renders the turn as it trains the model to write it.
std::string generated_part(const Json& assistant, const Json& tools) {
  squeeze::chat::TemplateOptions o;
  o.name = "gpt-oss.jinja";
  o.now = 1721952000;
  const squeeze::chat::Template t(squeeze::read_whole_file(SQUEEZE_CHAT_TEMPLATES "/gpt-oss.jinja"), o);
  const Json user = Json::array({{{"role", "user"}, {"content", "Go."}}});
  Json both = user;
  both.push_back(assistant);
  const std::string prompt = render_chat(t, user, true, "", "", tools);
  const std::string full = render_chat(t, both, false, "", "", tools);
  EXPECT_EQ(full.substr(0, prompt.size()), prompt);
  return full.substr(std::min(prompt.size(), full.size()));
}

}  // namespace

TEST(HarmonyRoundTrip, TheTemplatesTurnsReadBack) {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}])");
  const Json answer = {{"role", "assistant"}, {"thinking", "Two and two.\nFour."}, {"content", "4, <b>not</b> 5"}};
  EXPECT_EQ(parse_harmony_output(generated_part(answer, tools)), expect("Two and two.\nFour.", "4, <b>not</b> 5"));
  const Json call = {
      {"role", "assistant"},
      {"thinking", "Need the weather."},
      {"tool_calls",
       Json::array({{{"type", "function"},
                     {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}, {"days", 2}}}}}}})}};
  const std::string text = generated_part(call, tools);
  EXPECT_NE(text.find("to=functions.get_weather<|channel|>commentary json<|message|>"), std::string::npos) << text;
  EXPECT_EQ(parse_harmony_output(text), expect("Need the weather.", "", {kParis}));
}
