// tests/serve/test_harmony_api.cpp — a harmony model (gpt-oss's framing and published chat
// template, on a small random model whose unused tokens are renamed to harmony's specials)
// through ChatFormat and the OpenAI layer: the framing and its parser, the stops (<|return|>
// and <|call|> end the turn, <|end|> does not), reasoning_effort reaching the template's
// `Reasoning:` line (none → low, xhigh → high), reasoning_content reaching it as `thinking`,
// and a call read as tool_calls with finish_reason tool_calls, whole and streamed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/harmony_tokenizer.h"
#include "core/mapped_file.h"
#include "generate/chat_format.h"
#include "generate/thinking_budget.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "model/model.h"
#include "model/random_model.h"
#include "serve/openai_api.h"

using namespace squeeze;
using namespace squeeze::serve;
using chat::Json;

namespace {

// glimmer-tiny with random weights, the gpt-oss template, and harmony's specials in place
// of unused tokens (control tokens, <|return|> the EOS, no BOS added: as gpt-oss's GGUF).
// (make-model cannot write this vocabulary: the rewrite keeps the test to its own files.)
std::unique_ptr<model::Model> harmony_model() {
  const auto dir = std::filesystem::temp_directory_path() / ("squeeze_harmony_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string random = (dir / "random.gguf").string(), path = (dir / "harmony.gguf").string();
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.n_ctx = 4096;
  const std::string tmpl = read_whole_file(SQUEEZE_SOURCE_DIR "/tests/fixtures/chat_templates/gpt-oss.jinja");
  model::write_random_model({.config = c, .seed = 7, .path = random, .chat_template = tmpl});
  {
    const gguf::File f(random);
    gguf::Writer w(path);
    for (const auto& kv : f.metadata().entries()) w.metadata().set(kv.key, kv.value);
    auto tokens = f.metadata().get_string_array("tokenizer.ggml.tokens");
    auto types = f.metadata().get_i32_array("tokenizer.ggml.token_type");
    size_t next = 0;
    int32_t ret = -1, end = -1;
    for (size_t i = 0; i < tokens.size() && next < harmony_specials().size(); ++i) {
      if (types[i] != static_cast<int32_t>(text::TokenType::unused)) continue;
      tokens[i] = harmony_specials()[next++];
      types[i] = static_cast<int32_t>(text::TokenType::control);
      if (tokens[i] == "<|return|>") ret = static_cast<int32_t>(i);
      if (tokens[i] == "<|end|>") end = static_cast<int32_t>(i);
    }
    EXPECT_EQ(next, harmony_specials().size()) << "glimmer-tiny's vocabulary has too few unused tokens";
    w.metadata().set("tokenizer.ggml.tokens", gguf::Value::string_array(tokens));
    w.metadata().set("tokenizer.ggml.token_type", gguf::Value::i32_array(types));
    w.metadata().set("tokenizer.ggml.eos_token_id", gguf::Value::u32(static_cast<uint32_t>(ret)));
    // A file may name <|end|> its end-of-turn token (it ends a message, not the turn).
    w.metadata().set("tokenizer.ggml.eot_token_id", gguf::Value::u32(static_cast<uint32_t>(end)));
    w.metadata().set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(false));
    for (const auto& t : f.tensors()) w.add_tensor(t);
    w.finish();
  }
  auto m = model::Model::load(path);
  std::filesystem::remove_all(dir);  // mapped: the open mapping keeps the data
  return m;
}

struct Fixture {
  std::unique_ptr<model::Model> model = harmony_model();
  generate::ChatFormat chat{*model};
  ApiContext ctx;
  Fixture() {
    ctx.model = model.get();
    ctx.chat = &chat;
    ctx.model_id = "gpt-oss-tiny";
    ctx.n_ctx = ctx.max_tokens_limit = 8192;
  }
  int32_t id(const char* token) const { return *model->tokenizer().find_token(token); }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

Json user(const std::string& text) { return Json::array({{{"role", "user"}, {"content", text}}}); }

const Json kTools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
  "required": ["city"]}}}])");

// What gpt-oss writes after `<|start|>assistant`: its analysis, then a call (the <|call|>
// stop's text not included).
const std::string kOutput =
    "<|channel|>analysis<|message|>The user wants weather.<|end|><|start|>assistant to=functions.get_weather"
    "<|channel|>commentary json<|message|>{\"city\": \"Paris\", \"days\": 3}";

bool has(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

}  // namespace

TEST(HarmonyApi, TheVocabularyChoosesHarmonyAndItsStops) {
  const generate::ChatFormat& f = fx().chat;
  EXPECT_EQ(f.framing(), generate::OutputFraming::harmony);
  EXPECT_TRUE(f.renders_control() && f.calls_tools() && f.reasons() && f.thinks());
  // <|return|> ends the turn, and so does <|call|> (the tool answers next); <|end|> ends the
  // analysis message within it, so it never stops the answer.
  for (const auto* ids : {&f.stop_ids(), &f.turn_stop_ids()}) {
    EXPECT_TRUE(has(*ids, fx().id("<|return|>")));
    EXPECT_TRUE(has(*ids, fx().id("<|call|>")));
  }
  EXPECT_TRUE(has(f.stop_ids(), fx().id("<|end|>")));  // the file's eot_token_id
  EXPECT_FALSE(has(f.turn_stop_ids(), fx().id("<|end|>")));
  // The budget's close for this vocabulary ends the analysis and opens the final channel.
  const generate::ThinkingVocab v(fx().model->tokenizer());
  EXPECT_EQ(v.kind, generate::ThinkingVocab::Kind::harmony);
  EXPECT_EQ(v.close, f.tokenize("<|end|><|start|>assistant<|channel|>final<|message|>"));
}

TEST(HarmonyApi, ReasoningEffortReachesTheTemplate) {
  for (const auto& [asked, line] : std::vector<std::pair<std::string, std::string>>{{"low", "Reasoning: low\n"},
                                                                                    {"medium", "Reasoning: medium\n"},
                                                                                    {"high", "Reasoning: high\n"},
                                                                                    {"xhigh", "Reasoning: high\n"},
                                                                                    {"none", "Reasoning: low\n"},
                                                                                    {"minimal", "Reasoning: low\n"}}) {
    const PreparedRequest r = prepare_chat({{"messages", user("Hi")}, {"reasoning_effort", asked}}, fx().ctx);
    EXPECT_NE(r.prompt_text.find(line), std::string::npos) << asked << ": " << r.prompt_text;
    EXPECT_TRUE(r.prompt_text.ends_with("<|start|>assistant"));
    EXPECT_TRUE(r.gen.render_control);
    EXPECT_GE(r.gen.thinking_budget, 0) << asked;  // the level's budget applies to the analysis
    EXPECT_FALSE(has(r.gen.stop_ids, fx().id("<|end|>")));
  }
  // Without one, the server's default level.
  ApiContext ctx = fx().ctx;
  ctx.default_reasoning_effort = "low";
  EXPECT_NE(prepare_chat({{"messages", user("Hi")}}, ctx).prompt_text.find("Reasoning: low\n"), std::string::npos);
}

TEST(HarmonyApi, ToolsAndPastReasoningReachTheTemplate) {
  const Json messages = Json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "reasoning_content": "Call the tool.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}
  ])");
  const PreparedRequest r = prepare_chat({{"messages", messages}, {"tools", kTools}}, fx().ctx);
  EXPECT_NE(r.prompt_text.find("<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools"),
            std::string::npos);
  EXPECT_NE(r.prompt_text.find("type get_weather = (_: {\ncity: string,\ndays?: number,\n}) => any;"),
            std::string::npos);
  // The pending call's reasoning is shown (no final answer follows it yet), as `thinking`.
  EXPECT_NE(
      r.prompt_text.find("<|start|>assistant<|channel|>analysis<|message|>Call the tool.<|end|>"
                         "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
                         "{\"city\": \"Paris\"}<|call|>"
                         "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"18 C\"<|end|>"),
      std::string::npos)
      << r.prompt_text;
  EXPECT_TRUE(r.tools.has_tool("get_weather"));
}

TEST(HarmonyApi, ACallIsToolCallsWholeAndStreamedInAnySplit) {
  const PreparedRequest r = prepare_chat({{"messages", user("Weather in Paris?")}, {"tools", kTools}}, fx().ctx);
  ResponseBuilder whole(r, fx().ctx);
  whole.add({.text = kOutput});
  whole.add({.finish = FinishReason::stop, .prompt_tokens = 100, .completion_tokens = 40});
  const Json obj = whole.final_object();
  const Json& msg = obj["choices"][0]["message"];
  EXPECT_EQ(obj["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(msg["reasoning_content"], "The user wants weather.");
  EXPECT_TRUE(msg["content"].is_null());
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris","days":3})");
  EXPECT_TRUE(msg["tool_calls"][0]["id"].is_string());

  for (size_t piece : {1u, 4u, 9u, 64u}) {
    ResponseBuilder b(r, fx().ctx);
    std::vector<Json> chunks;
    for (size_t i = 0; i < kOutput.size(); i += piece) {
      auto c = b.chunks({.text = kOutput.substr(i, piece)});
      chunks.insert(chunks.end(), c.begin(), c.end());
    }
    auto c = b.chunks({.finish = FinishReason::stop, .prompt_tokens = 100, .completion_tokens = 40});
    chunks.insert(chunks.end(), c.begin(), c.end());
    std::string reasoning, content;
    size_t calls = 0;
    for (const Json& ch : chunks) {
      const Json& d = ch["choices"][0]["delta"];
      if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
      if (d.contains("content")) content += d["content"].get<std::string>();
      if (d.contains("tool_calls")) calls += d["tool_calls"].size();
    }
    EXPECT_EQ(reasoning, "The user wants weather.") << piece;
    EXPECT_EQ(content, "") << piece;
    EXPECT_EQ(calls, 1u) << piece;
    EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "tool_calls") << piece;
  }
}

TEST(HarmonyApi, AnAnswerAfterTheAnalysisIsContent) {
  const PreparedRequest r = prepare_chat({{"messages", user("Hi")}}, fx().ctx);
  ResponseBuilder b(r, fx().ctx);
  b.add(
      {.text = "<|channel|>analysis<|message|>Greet back.<|end|><|start|>assistant<|channel|>final<|message|>Hello!"});
  b.add({.finish = FinishReason::stop, .prompt_tokens = 10, .completion_tokens = 10});
  const Json obj = b.final_object();
  EXPECT_EQ(obj["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(obj["choices"][0]["message"]["reasoning_content"], "Greet back.");
  EXPECT_EQ(obj["choices"][0]["message"]["content"], "Hello!");
}
