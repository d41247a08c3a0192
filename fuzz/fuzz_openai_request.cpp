// fuzz/fuzz_openai_request.cpp — a request body as the server takes it: parse_body, then
// the chat, completion and embedding checks (prepare_chat, prepare_completion,
// prepare_embeddings, render_chat_prompt)
// against the shipped model (models/muse-glimmer-kjv.f16.gguf, loaded once; its chat
// template, tokenizer and Muse Glimmer output framing). A bad request must be an
// ApiError (a 4xx with its parameter); anything else escaping is a 500 or a crash.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/model.h"
#include "generate/chat_format.h"
#include "serve/embeddings_api.h"
#include "serve/openai_api.h"

using namespace squeeze;
using namespace squeeze::serve;
using squeeze::generate::ChatFormat;

namespace {

struct Server {
  std::unique_ptr<model::Model> model = model::Model::load(SQUEEZE_SOURCE_DIR "/models/muse-glimmer-kjv.f16.gguf");
  ChatFormat chat{*model};
  ApiContext ctx;
  Server() {
    ctx.model = model.get();
    ctx.chat = &chat;
    ctx.model_id = "student";
    // Room for the tool guide (~750 tokens), as tests/serve/test_openai_api.cpp's wide_ctx.
    ctx.n_ctx = ctx.max_tokens_limit = 2048;  // the student's chat format frames Muse Glimmer's output
  }
};

const Server& server() {
  static const Server s;
  return s;
}

template <class F>
void expect_api_errors_only(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    if (e.status < 400 || e.status >= 500) __builtin_trap();  // the client's fault, by its status
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Server& s = server();
  chat::Json body;
  try {
    body = parse_body(std::string(reinterpret_cast<const char*>(data), size), {.max_depth = 16, .max_object_keys = 64});
  } catch (const ApiError&) {
    return 0;
  }
  expect_api_errors_only([&] { (void)prepare_chat(body, s.ctx); });
  expect_api_errors_only([&] { (void)prepare_completion(body, s.ctx); });
  expect_api_errors_only([&] { (void)prepare_embeddings(body, s.ctx); });
  expect_api_errors_only([&] {
    std::vector<std::pair<size_t, size_t>> literal_ranges;
    (void)render_chat_prompt(body, s.ctx, nullptr, nullptr, &literal_ranges);
  });
  return 0;
}
