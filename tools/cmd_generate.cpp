// tools/cmd_generate.cpp — `squeeze generate`: prompt in, streamed text out, timings at the end.
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "args.h"
#include "generate/conversation.h"
#include "generate/chat_format.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "generate/decode.h"
#include "sampling_options.h"
#include "image_inputs.h"
#include "gguf/file_identity.h"
#include "model/model.h"
#include "model/session.h"
#include "npy.h"
#include "reasoning.h"
#include "speculation.h"
#include "generate/sequence.h"
#include "text/sampler.h"
#include "text/stop.h"
#include "wall_clock.h"

namespace {

using squeeze::cli::Clock;
using squeeze::cli::seconds_since;
void emit(const std::string& text) { squeeze::cli::emit_stdout(text); }

// "1,2,3" → ids, each checked against the vocabulary.
std::vector<int32_t> parse_token_ids(const std::string& text, int64_t n_vocab) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    SQZ_CHECK(!item.empty() && end == item.c_str() + item.size() && errno == 0, "--tokens: '", item,
              "' is not a token id (give comma-separated integers)");
    SQZ_CHECK(v >= 0 && v < n_vocab, "--tokens: id ", v, " is outside the vocabulary [0, ", n_vocab, ")");
    ids.push_back(static_cast<int32_t>(v));
    pos = comma + 1;
  }
  return ids;
}

int run_generate(int argc, char** argv) {
  using namespace squeeze::cli;
  squeeze::cli::Args args("generate", "generate -m MODEL.gguf -p PROMPT [options]",
                          "Run a prompt through a model and stream the continuation. Ends with a timing\n"
                          "line: prompt tokens/s, generation tokens/s and the KV cache's bytes.");
  args.group("model and prompt")
      .option({"-m", "--model"}, "FILE", "GGUF model")
      .option({"-p", "--prompt"}, "TEXT", "prompt text")
      .option({"--tokens"}, "IDS", "the prompt as comma-separated token ids instead of text (reference checks)")
      .flag({"--chat"}, "apply the model's chat template (tokenizer.chat_template) to the prompt as one user\n"
                         "message; print only the answer, which ends at EOS or the template's end-of-turn token")
      .option({"--system"}, "TEXT", "with --chat: the system message")
      .int_option({"-n", "--n-predict"}, "N", "tokens to generate", {0, kMaxTokens}, "64");
  args.group("context and speed")
      .threads_option()
      .int_option({"--ctx"}, "N", "context length (0: the model's)", {0, kMaxTokens}, "0")
      .int_option({"--batch"}, "N", "prefill batch size", {1, kMaxBatch}, "64")
      .flag({"--batch-invariant"}, "run every product as `squeeze serve` does (docs/development.md: the determinism\n"
                                   "rule): the tokens equal the server's for the same prompt, seed and options; the\n"
                                   "prompt runs slower")
      .option({"--kv"}, "TYPE", "KV cache type: f16, bf16, f32 or q8_0 (8.5 bits per value; needs head_dim % 32 == 0)", "f16");
  args.group("output")
      .option({"--stop"}, "TEXT", "stop when this text is generated")
      .flag({"--ignore-eos"}, "keep generating past end-of-sequence (and end-of-turn)")
      .option({"--dump"}, "DIR", "write every intermediate of the prompt's forward pass and its logits as .npy");
  args.group("images")
      .option({"--image"}, "FILE", "a PNG or JPEG image before the prompt's text (repeatable; needs --mmproj). With\n"
                                   "--tokens, each <|patch|> id of the prompt stands for the next image");
  add_image_options(args);
  add_sampling_options(args);
  add_speculation_options(args);
  add_reasoning_options(args);
  if (!args.parse(argc, argv)) return 0;
  const std::string path = args.get("--model");
  SQZ_CHECK(!path.empty(), "missing -m MODEL.gguf");
  SQZ_CHECK(args.has("--prompt") != args.has("--tokens"), "give the prompt as -p TEXT or --tokens IDS (one of them)");
  const bool chat = args.has("--chat");
  SQZ_CHECK(!chat || !args.has("--tokens"), "--chat needs -p TEXT");
  SQZ_CHECK(chat || !args.has("--system"), "--system needs --chat");
  SQZ_CHECK(chat || (!args.has("--reasoning-effort") && !args.has("--thinking-budget")),
            "--reasoning-effort and --thinking-budget need --chat");
  const std::vector<std::string> image_files = args.get_all("--image");
  SQZ_CHECK(image_files.empty() || args.has("--mmproj"), "--image needs --mmproj PROJECTOR.gguf");
  std::vector<std::string> input_files{path};
  if (args.has("--mmproj")) input_files.push_back(args.get("--mmproj"));
  input_files.insert(input_files.end(), image_files.begin(), image_files.end());
  const squeeze::gguf::DeclaredInputs inputs(input_files);  // --dump files never replace them
  squeeze::set_default_thread_count(args.get_int32("--threads"));

  const auto model = squeeze::model::Model::load(path);
  const std::string kv = args.get("--kv");
  const auto kv_type = squeeze::kernels::cpu::kv_type_from_name(kv, "--kv");
  squeeze::model::Session session(*model, {.n_ctx = args.get_int("--ctx"), .batch = args.get_int("--batch"),
                                           .kv_type = kv_type, .batch_invariant = args.has("--batch-invariant")});
  const Speculation speculation = make_speculation(args, *model, session);
  const auto image_inputs = ImageInputs::from_args(args, *model);
  SQZ_CHECK(!image_inputs || !speculation.speculator, "images with speculative decoding are not supported yet");
  std::vector<std::shared_ptr<const squeeze::vision::ImageFeatures>> images;
  for (const std::string& f : image_files) {
    const int64_t hits = image_inputs->cache().hits();
    images.push_back(image_inputs->file(f));
    std::fprintf(stderr, "%s\n", describe_image(f, *images.back(), image_inputs->cache().hits() > hits).c_str());
  }
  SQZ_CHECK(!speculation.speculator || !args.has("--dump"), "--dump runs without speculative decoding");
  const auto& tok = model->tokenizer();
  std::optional<squeeze::generate::ChatFormat> format;
  std::vector<int32_t> prompt;
  std::string rendering;  // a chat's prompt as the template wrote it
  ReasoningSettings reasoning;
  if (chat) {
    format.emplace(*model);  // fails naming tokenizer.chat_template when the model has none
    reasoning = reasoning_settings(args, *model);
    squeeze::generate::Conversation conversation;
    if (args.has("--system")) conversation.set_system(args.get("--system"));
    conversation.add("user", args.get("--prompt"), {}, image_files);
    rendering = format->render(conversation.to_json(), /*add_generation_prompt=*/true, nullptr,
                               reasoning.template_variables());
    prompt = format->tokenize(rendering);
  } else if (args.has("--tokens")) {
    prompt = parse_token_ids(args.get("--tokens"), model->config().n_vocab);
  } else {
    prompt = tok.encode(args.get("--prompt"));
    if (image_inputs) {  // the images first, after a BOS the tokenizer adds
      const auto at = prompt.begin() + (!prompt.empty() && prompt.front() == tok.bos_id() ? 1 : 0);
      prompt.insert(at, images.size(), image_inputs->tokens().patch);
    }
  }
  SQZ_CHECK(!prompt.empty(), "the prompt encodes to no tokens");
  squeeze::vision::PromptRows rows;
  if (image_inputs) {
    rows = image_inputs->expand(prompt, images);
    prompt = rows.ids;
  }
  const int64_t n_predict = args.get_int("--n-predict");
  if (static_cast<int64_t>(prompt.size()) > session.n_ctx())
    squeeze::fail("the prompt has ", prompt.size(), " tokens, which does not fit the context of ", session.n_ctx());

  // Dumps gather every chunk's rows so each file holds the whole prompt.
  std::map<std::string, std::pair<std::vector<float>, int64_t>> dumps;
  if (args.has("--dump")) {
    session.set_dump([&dumps](const std::string& name, const float* data, int64_t rows, int64_t cols) {
      auto& [values, width] = dumps[name];
      width = cols;
      values.insert(values.end(), data, data + rows * cols);
    });
  }

  squeeze::text::StopParams stop;
  if (!args.has("--ignore-eos")) {
    if (chat) stop.eos_ids = format->turn_stop_ids();
    else if (tok.eos_id() >= 0) stop.eos_ids = {tok.eos_id()};
  }
  // A chat: the thinking (as the model's framing separates it) goes to stderr, the answer to
  // stdout; a raw prompt's continuation is printed as it comes.
  std::optional<ThinkingPrinter> printer;
  if (chat) printer.emplace(format->output_parser({}, rendering), [](const std::string& t) { std::fputs(t.c_str(), stderr); }, emit);
  if (args.has("--stop")) stop.stop_strings = {args.get("--stop")};
  stop.max_tokens = n_predict;
  const std::vector<int32_t> banned = squeeze::generate::unused_tokens(tok);
  squeeze::generate::Sequence seq(tok, squeeze::text::Sampler(sampler_params(args)),
                                  {.stop = stop, .n_ctx = session.n_ctx(), .render_control = chat && format->renders_control()},
                                  reasoning.new_turn(chat && format->prompt_opens_thinking(rendering)), banned);

  if (!chat) emit(args.has("--prompt") ? args.get("--prompt") : tok.decode(prompt));  // a chat prints only the answer, as `squeeze chat` does

  const auto t0 = Clock::now();
  auto logits = speculation.speculator ? speculation.speculator->prefill(prompt)
                                       : session.forward(prompt, rows.embeddings, /*all_logits=*/args.has("--dump"));
  const double prompt_s = seconds_since(t0);
  session.set_dump(nullptr);
  if (args.has("--dump")) {
    const std::string dir = args.get("--dump");
    std::filesystem::create_directories(dir);
    for (const auto& [name, entry] : dumps)
      squeeze::cli::write_npy(dir + "/" + name + ".npy", entry.first.data(),
                              static_cast<int64_t>(entry.first.size()) / entry.second, entry.second);
    const std::vector<float> ids(prompt.begin(), prompt.end());  // exact: ids < 2^24
    squeeze::cli::write_npy(dir + "/tokens.npy", ids.data(), 1, static_cast<int64_t>(ids.size()));
    logits = logits.subspan(logits.size() - static_cast<size_t>(model->config().n_vocab));
  }

  const auto t1 = Clock::now();
  seq.start(session.position(), prompt);
  const squeeze::generate::DecodeResult result =
      squeeze::generate::decode(session, seq, logits, {.speculator = speculation.speculator.get()},
             printer ? std::function<void(const std::string&)>([&printer](const std::string& t) { printer->feed(t); })
                     : std::function<void(const std::string&)>(emit));
  if (printer) printer->finish();
  if (result.context_full)
    std::fprintf(stderr, "\n[context of %lld tokens is full]", static_cast<long long>(session.n_ctx()));
  const int64_t generated = result.generated;
  const double gen_s = seconds_since(t1);
  const auto mem = session.kv_memory();
  std::fprintf(stderr,
               "\nprompt: %zu tokens in %.3f s (%.1f t/s) | generation: %lld tokens in %.3f s (%.1f t/s) | "
               "KV: %zu bytes for %lld positions | threads %d\n",
               prompt.size(), prompt_s, prompt.size() / std::max(prompt_s, 1e-9), static_cast<long long>(generated), gen_s,
               generated / std::max(gen_s, 1e-9), mem.bytes_held, static_cast<long long>(mem.positions),
               squeeze::default_thread_pool().size());
  if (speculation.speculator) std::fprintf(stderr, "%s\n", speculation_summary(speculation).c_str());
  if (const auto* thinking = seq.thinking())
    std::fprintf(stderr, "reasoning %s: %lld thinking tokens of a budget of %lld%s\n", reasoning.level.c_str(),
                 static_cast<long long>(thinking->thinking_tokens()), static_cast<long long>(thinking->budget()),
                 thinking->forced_close() ? " (the budget closed the thinking)" : "");
  return 0;
}

}  // namespace

SQZ_COMMAND("generate", "generate text from a prompt with a GGUF model", run_generate);
