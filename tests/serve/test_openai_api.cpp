// tests/serve/test_openai_api.cpp — the OpenAI objects without HTTP: request checking
// (status and parameter of each refusal) and Muse Glimmer output turned into
// reasoning_content / content / tool_calls, whole and as streaming deltas, however the
// generated text is split across updates.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/model.h"
#include "generate/chat_format.h"
#include "common/base64.h"
#include "serve/openai_api.h"
#include "vision/encoder.h"
#include "vision/image.h"

using namespace squeeze;
using namespace squeeze::serve;
using chat::Json;

namespace {

struct Fixture {
  std::unique_ptr<model::Model> model = model::Model::load(SQUEEZE_SOURCE_DIR "/models/muse-glimmer-kjv.f16.gguf");
  generate::ChatFormat chat{*model};
  ApiContext ctx;
  Fixture() {
    ctx.model = model.get();
    ctx.chat = &chat;
    ctx.model_id = "student";
    ctx.n_ctx = 256;
    ctx.max_tokens_limit = 256;
  }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

TEST(OpenAiApi, TheChatFormatChoosesTheFraming) {
  // The student's vocabulary has Muse Glimmer's framing: the OpenAI layer parses its output.
  EXPECT_EQ(fx().chat.framing(), generate::OutputFraming::muse_glimmer);
  EXPECT_TRUE(fx().chat.renders_control());
  // <|eot|> ends the turn; <|eom|> ends a message within it, so it never stops the answer.
  const auto& turn = fx().chat.turn_stop_ids();
  const auto eom = fx().model->tokenizer().find_token("<|eom|>"), eot = fx().model->tokenizer().find_token("<|eot|>");
  ASSERT_TRUE(eom.has_value() && eot.has_value());
  EXPECT_EQ(std::find(turn.begin(), turn.end(), *eom), turn.end());
  EXPECT_NE(std::find(turn.begin(), turn.end(), *eot), turn.end());
}

// The tool guide alone is ~750 tokens: tool requests are checked against a longer context.
ApiContext wide_ctx() {
  ApiContext c = fx().ctx;
  c.n_ctx = c.max_tokens_limit = 2048;
  return c;
}

Json user(const std::string& text) { return Json::array({{{"role", "user"}, {"content", text}}}); }

int status_of(const Json& body, Endpoint e = Endpoint::chat) {
  try {
    if (e == Endpoint::chat) {
      prepare_chat(body, fx().ctx);
    } else {
      prepare_completion(body, fx().ctx);
    }
  } catch (const ApiError& err) {
    return err.status;
  }
  return 200;
}

const Json kTools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}])");

// What the model writes after the generation prompt: reasoning, then a tool call.
const std::string kOutput =
    " to=self<|message|>The user wants weather.<|eom|><|start|>assistant to=get_weather<|message|>"
    "<atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris</atem:parameter>\n"
    "<atem:parameter name=\"days\">3</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";

}  // namespace

TEST(OpenAiApi, TheFormatsParserReadsItsFraming) {
  // The parser the format hands out is Muse Glimmer's: the thinking, then a typed tool call.
  const auto parser = fx().chat.output_parser(chat::ToolParams::from_json(kTools));
  chat::ParsedOutput out = parser->feed(kOutput);
  out.append(parser->finish());
  EXPECT_EQ(out.reasoning, "The user wants weather.");
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[0].arguments, R"({"city":"Paris","days":3})");
}

TEST(OpenAiRequest, ValidRequestsPrepareAndBadOnesAreRefusedWithTheirStatus) {
  EXPECT_EQ(status_of({{"messages", user("Hi")}}), 200);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"model", "student"}, {"max_tokens", 5}, {"stop", {"a", "b"}}}), 200);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"model", "other"}}), 404);
  EXPECT_EQ(status_of({{"messages", "Hi"}}), 400);
  EXPECT_EQ(status_of(Json::object()), 400);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"temperature", 3}}), 400);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"max_tokens", 100000}}), 400);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"seed", "x"}}), 400);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"stop", {""}}}), 400);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"reasoning_effort", "max"}}), 400);
  EXPECT_EQ(status_of({{"messages", user(std::string(3000, 'x'))}}), 400);  // past the 256-token context
  EXPECT_EQ(status_of({{"prompt", Json::array()}}, Endpoint::completion), 400);
  EXPECT_EQ(status_of({{"prompt", {1, 2, 3}}}, Endpoint::completion), 200);
  EXPECT_EQ(status_of({{"prompt", {1, -2}}}, Endpoint::completion), 400);
  EXPECT_THROW(parse_body("{\"a\": "), ApiError);
  EXPECT_THROW(parse_body(std::string(100, '[') + std::string(100, ']')), ApiError);
  EXPECT_EQ(parse_body("{\"a\": [1]}")["a"][0], 1);
}

// Tool-call arguments are JSON inside a string: bounded like the body. 25,000 levels used
// to overflow the stack converting them to template values (the server died).
TEST(OpenAiRequest, JsonInsideStringsIsBoundedLikeTheBody) {
  const auto call_with = [](const std::string& arguments) {
    Json messages = user("Hi");
    messages.push_back({{"role", "assistant"},
                        {"content", ""},
                        {"tool_calls", {{{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", arguments}}}}}}});
    return Json{{"messages", messages}};
  };
  const std::string deep = "{\"a\": " + std::string(25000, '[') + std::string(25000, ']') + "}";
  try {
    prepare_chat(call_with(deep), fx().ctx);
    FAIL() << "accepted 25,000 levels";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64 levels"), std::string::npos) << e.what();
  }
  EXPECT_EQ(status_of(call_with("{\"a\": [[1]]}")), 200);
  // Logit bias: token ids of the vocabulary, biases in [-100, 100].
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"logit_bias", {{"5", -100}, {"6", 2.5}}}}), 200);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"logit_bias", {{"-5", 1}}}}), 400);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"logit_bias", {{"5x", 1}}}}), 400);
  EXPECT_EQ(status_of({{"messages", user("Hi")}, {"logit_bias", {{"5", 101}}}}), 400);
}

TEST(OpenAiRequest, MuseGlimmerChatKeepsEomRunningAndRendersControlText) {
  const ApiContext ctx = wide_ctx();
  const PreparedRequest r = prepare_chat({{"messages", user("Hi")}, {"tools", kTools}, {"reasoning_effort", "medium"}}, ctx);
  const auto eom = fx().model->tokenizer().find_token("<|eom|>");
  ASSERT_TRUE(eom.has_value());
  EXPECT_EQ(std::count(r.gen.stop_ids.begin(), r.gen.stop_ids.end(), *eom), 0);
  EXPECT_TRUE(r.gen.render_control && ctx.chat->calls_tools() && ctx.chat->thinks());
  EXPECT_GE(r.gen.thinking_budget, 0);  // the level's budget
  EXPECT_NE(r.prompt_text.find("Reasoning strength: medium."), std::string::npos);
  EXPECT_NE(r.prompt_text.find("get_weather"), std::string::npos);
  EXPECT_TRUE(r.tools.has_tool("get_weather"));
}

TEST(OpenAiResponse, ToolCallAndReasoningWholeAndStreamedInAnySplit) {
  const ApiContext ctx = wide_ctx();
  const PreparedRequest r = prepare_chat({{"messages", user("Weather in Paris?")}, {"tools", kTools}}, ctx);
  ResponseBuilder whole(r, ctx);
  whole.add({.text = kOutput});
  whole.add({.finish = FinishReason::stop, .prompt_tokens = 100, .completion_tokens = 40});
  const Json obj = whole.final_object();
  const Json& msg = obj["choices"][0]["message"];
  EXPECT_EQ(obj["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(msg["reasoning_content"], "The user wants weather.");
  EXPECT_TRUE(msg["content"].is_null());
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            Json::parse(R"({"city": "Paris", "days": 3})"));
  EXPECT_GT(obj["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int>(), 0);
  EXPECT_EQ(obj["usage"]["total_tokens"], 140);

  for (size_t piece : {1u, 3u, 7u, 64u}) {
    ResponseBuilder b(r, ctx);
    std::vector<Json> chunks;
    for (size_t i = 0; i < kOutput.size(); i += piece) {
      auto c = b.chunks({.text = kOutput.substr(i, piece)});
      chunks.insert(chunks.end(), c.begin(), c.end());
    }
    auto c = b.chunks({.finish = FinishReason::stop, .prompt_tokens = 100, .completion_tokens = 40});
    chunks.insert(chunks.end(), c.begin(), c.end());
    ASSERT_GE(chunks.size(), 3u);
    EXPECT_EQ(chunks.front()["choices"][0]["delta"]["role"], "assistant");
    std::string reasoning, content;
    Json calls = Json::array();
    for (const Json& ch : chunks) {
      const Json& d = ch["choices"][0]["delta"];
      if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
      if (d.contains("content")) content += d["content"].get<std::string>();
      if (d.contains("tool_calls"))
        for (const Json& t : d["tool_calls"]) calls.push_back(t);
    }
    EXPECT_EQ(reasoning, "The user wants weather.") << piece;
    EXPECT_EQ(content, "") << piece;
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0]["index"], 0);
    EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "tool_calls");
  }
}

TEST(OpenAiResponse, UsageChunkOnlyWhenAskedAndCompletionObjects) {
  PreparedRequest r = prepare_completion({{"prompt", "And God said"}, {"stream", true}}, fx().ctx);
  ResponseBuilder b(r, fx().ctx);
  auto c = b.chunks({.text = " Let there"});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["object"], "text_completion");
  EXPECT_EQ(c[0]["choices"][0]["text"], " Let there");
  c = b.chunks({.finish = FinishReason::length, .prompt_tokens = 4, .completion_tokens = 2});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["choices"][0]["finish_reason"], "length");

  r = prepare_completion({{"prompt", "And God said"}, {"stream", true}, {"stream_options", {{"include_usage", true}}}}, fx().ctx);
  ResponseBuilder u(r, fx().ctx);
  c = u.chunks({.finish = FinishReason::stop, .prompt_tokens = 4, .cached_tokens = 0, .completion_tokens = 1});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(c[1]["choices"].empty());
  EXPECT_EQ(c[1]["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(c[1]["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

namespace {

Json image_part(const std::string& file) {
  const auto bytes = vision::read_image_bytes(SQUEEZE_SOURCE_DIR "/tests/fixtures/vision/" + file);
  return {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + squeeze::testing::base64_encode(bytes)}}}};
}

}  // namespace

TEST(OpenAiRequest, ImagePartsWidenToTheImagesTokens) {
  const vision::VisionEncoder enc = vision::VisionEncoder::random(vision::small_encoder_config(256), 5);
  vision::PreprocessOptions opt;
  opt.max_image_tokens = 8;
  vision::FeatureCache cache(enc, opt);
  ApiContext ctx = fx().ctx;
  ctx.images = &cache;
  ctx.image_tokens = vision::ImageTokenIds::of(fx().model->tokenizer());
  const Json body = {{"messages", Json::array({{{"role", "user"},
                                                {"content", Json::array({image_part("rgb_noise.png"),
                                                                         {{"type", "text"}, {"text", "What is it?"}},
                                                                         image_part("grey.png")})}}})}};
  const PreparedRequest r = prepare_chat(body, ctx);
  const auto& ids = r.gen.prompt;
  ASSERT_EQ(r.gen.images.size(), 2u);
  ASSERT_EQ(r.gen.embeddings.size(), ids.size());
  ASSERT_EQ(r.gen.keys.size(), ids.size());
  int64_t patch_rows = 0, starts = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(r.gen.embeddings[i] != nullptr, ids[i] == ctx.image_tokens.patch) << i;
    patch_rows += ids[i] == ctx.image_tokens.patch;
    starts += ids[i] == ctx.image_tokens.start;
  }
  EXPECT_EQ(patch_rows, r.gen.images[0]->tokens + r.gen.images[1]->tokens);
  EXPECT_EQ(starts, 2);
  EXPECT_NE(r.prompt_text.find("<|patch|>What is it?<|patch|>"), std::string::npos);
  prepare_chat(body, ctx);  // the same images again: found in the cache
  EXPECT_EQ(cache.misses(), 2);
  EXPECT_EQ(cache.hits(), 2);

  std::string param;
  const auto status = [&](const Json& b, const ApiContext& c) {
    try {
      prepare_chat(b, c);
    } catch (const ApiError& e) {
      param = e.param;
      return e.status;
    }
    return 200;
  };
  const auto with = [](Json part) {
    return Json{{"messages", Json::array({{{"role", "user"}, {"content", Json::array({std::move(part)})}}})}};
  };
  EXPECT_EQ(status(with(image_part("grey.png")), fx().ctx), 400);  // a server without a projector
  EXPECT_EQ(param, "messages[0]");
  EXPECT_EQ(status(with({{"type", "image_url"}, {"image_url", {{"url", "https://example.com/a.png"}}}}), ctx), 400);
  EXPECT_EQ(param, "messages[0]");
  EXPECT_EQ(status(with({{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}}}}), ctx), 400);
  EXPECT_EQ(param, "messages[0]");
  EXPECT_EQ(status(with({{"type", "image_url"}}), ctx), 400);
  EXPECT_EQ(param, "messages[0]");
  // A text part spelling the placeholder cannot smuggle in an image without features: it
  // stays text (generate/content_literals.h), or, parsed as the ecosystem does, is refused.
  EXPECT_EQ(status(with({{"type", "text"}, {"text", "<|patch|>"}}), ctx), 200);
  ApiContext parsing = ctx;
  parsing.parse_special_in_content = true;
  EXPECT_EQ(status(with({{"type", "text"}, {"text", "<|patch|>"}}), parsing), 400);
  EXPECT_EQ(param, "messages");
}
