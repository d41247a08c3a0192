// tools/cmd_generate.cpp — `squeeze generate`: prompt in, streamed text out, timings at the end.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "model/session.h"
#include "npy.h"
#include "text/sampler.h"
#include "text/stop.h"

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int run_generate(int argc, char** argv) {
  squeeze::cli::Args args("generate", "generate -m MODEL.gguf -p PROMPT [options]",
                          "Run a prompt through a model and stream the continuation. Ends with a timing\n"
                          "line: prompt tokens/s, generation tokens/s and the KV cache's bytes.");
  args.option({"-m", "--model"}, "FILE", "GGUF model")
      .option({"-p", "--prompt"}, "TEXT", "prompt text")
      .option({"-n", "--n-predict"}, "N", "tokens to generate", "64")
      .option({"-t", "--threads"}, "N", "threads (0: one per core)", "0")
      .option({"--ctx"}, "N", "context length (0: the model's)", "0")
      .option({"--batch"}, "N", "prefill batch size", "64")
      .option({"--temp"}, "T", "temperature (0: greedy)", "0.8")
      .option({"--top-k"}, "K", "top-k (0: off)", "40")
      .option({"--top-p"}, "P", "top-p (1: off)", "0.95")
      .option({"--min-p"}, "P", "min-p (0: off)", "0.05")
      .option({"--repeat-penalty"}, "X", "repetition penalty (1: off)", "1.0")
      .option({"--seed"}, "N", "sampling seed", "0")
      .option({"--stop"}, "TEXT", "stop when this text is generated")
      .option({"--kv"}, "TYPE", "KV cache type: f16 or f32", "f16")
      .option({"--dump"}, "DIR", "write every intermediate of the prompt's forward pass and its logits as .npy")
      .flag({"--ignore-eos"}, "keep generating past end-of-sequence");
  if (!args.parse(argc, argv)) return 0;
  const std::string path = args.get("--model");
  SQZ_CHECK(!path.empty(), "missing -m MODEL.gguf");
  SQZ_CHECK(args.has("--prompt"), "missing -p PROMPT");
  squeeze::set_default_thread_count(static_cast<int>(args.get_int("--threads")));

  const auto model = squeeze::model::Model::load(path);
  const std::string kv = args.get("--kv");
  SQZ_CHECK(kv == "f16" || kv == "f32", "--kv must be f16 or f32");
  squeeze::model::Session session(*model, {.n_ctx = args.get_int("--ctx"), .batch = args.get_int("--batch"),
                                           .kv_type = kv == "f16" ? squeeze::kernels::cpu::KvType::F16
                                                                  : squeeze::kernels::cpu::KvType::F32});
  const auto& tok = model->tokenizer();
  const std::vector<int32_t> prompt = tok.encode(args.get("--prompt"));
  SQZ_CHECK(!prompt.empty(), "the prompt encodes to no tokens");
  const int64_t n_predict = args.get_int("--n-predict");
  SQZ_CHECK(n_predict >= 0, "-n must be >= 0");
  if (static_cast<int64_t>(prompt.size()) >= session.n_ctx())
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

  squeeze::text::Sampler sampler({.temperature = static_cast<float>(args.get_double("--temp")),
                                  .top_k = static_cast<int32_t>(args.get_int("--top-k")),
                                  .top_p = static_cast<float>(args.get_double("--top-p")),
                                  .min_p = static_cast<float>(args.get_double("--min-p")),
                                  .repeat_penalty = static_cast<float>(args.get_double("--repeat-penalty")),
                                  .seed = static_cast<uint64_t>(args.get_int("--seed"))});
  squeeze::text::StopParams stop;
  if (!args.has("--ignore-eos") && tok.eos_id() >= 0) stop.eos_ids = {tok.eos_id()};
  if (args.has("--stop")) stop.stop_strings = {args.get("--stop")};
  stop.max_tokens = n_predict;
  squeeze::text::StopChecker checker(stop);

  std::fputs(args.get("--prompt").c_str(), stdout);
  std::fflush(stdout);
  for (int32_t t : prompt) sampler.accept(t);

  const auto t0 = Clock::now();
  auto logits = session.forward(prompt, /*all_logits=*/args.has("--dump"));
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

  // Tokens marked unused in the vocabulary are never generated (padding of a vocabulary).
  std::vector<int32_t> banned;
  for (int32_t id = 0; id < tok.n_vocab(); ++id)
    if (tok.token_type(id) == squeeze::text::TokenType::unused) banned.push_back(id);
  std::vector<float> masked;
  auto allowed = [&](std::span<const float> l) -> std::span<const float> {
    if (banned.empty()) return l;
    masked.assign(l.begin(), l.end());
    for (int32_t id : banned) masked[static_cast<size_t>(id)] = -INFINITY;
    return masked;
  };

  int64_t generated = 0;
  const auto t1 = Clock::now();
  const int64_t room = session.n_ctx() - session.position();
  while (generated < n_predict) {
    const int32_t next = sampler.sample(allowed(logits));
    sampler.accept(next);
    ++generated;
    const auto step = checker.push(next, tok.token_to_piece(next, {.render_control = false}));
    std::fputs(step.text.c_str(), stdout);
    std::fflush(stdout);
    if (step.stopped()) break;
    if (generated >= room) {
      std::fputs(checker.finish().c_str(), stdout);
      std::fprintf(stderr, "\n[context of %lld tokens is full]", static_cast<long long>(session.n_ctx()));
      break;
    }
    logits = session.forward(std::span<const int32_t>(&next, 1));
  }
  if (checker.reason() == squeeze::text::StopReason::none) std::fputs(checker.finish().c_str(), stdout);
  const double gen_s = seconds_since(t1);
  const auto mem = session.kv_memory();
  std::fprintf(stderr,
               "\nprompt: %zu tokens in %.3f s (%.1f t/s) | generation: %lld tokens in %.3f s (%.1f t/s) | "
               "KV: %zu bytes for %lld positions | threads %d\n",
               prompt.size(), prompt_s, prompt.size() / std::max(prompt_s, 1e-9), static_cast<long long>(generated), gen_s,
               generated / std::max(gen_s, 1e-9), mem.bytes_held, static_cast<long long>(mem.positions),
               squeeze::default_thread_pool().size());
  return 0;
}

}  // namespace

SQZ_COMMAND("generate", "generate text from a prompt with a GGUF model", run_generate);
