// tools/cmd_eval.cpp — `squeeze eval`: held-out perplexity and next-token top-1 accuracy of
// a model on a text file, and, against a base model sharing its vocabulary (e.g. the
// unquantized original), mean KL(base ‖ model), top-1 agreement and the perplexity ratio.
// Text is cut into non-overlapping windows of --ctx tokens; every position after the first
// of a window is scored (as llama-perplexity scores its chunks). --tasks adds two 4-way
// multiple-choice scores on line-per-verse text (eval/choice_tasks.h); --sampled N the
// reverse KL to --base on the model's own sampled continuations (eval/sampled_kl.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "args.h"
#include "command.h"
#include "numbers_json.h"
#include "reasoning.h"
#include "reasoning_eval.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "eval/choice_tasks.h"
#include "eval/log_probs.h"
#include "eval/sampled_kl.h"
#include "model/model.h"
#include "model/session.h"

namespace {

using squeeze::model::Model;
using squeeze::model::Session;

using squeeze::eval::log_softmax;

struct Scores {
  double nll = 0;        // sum of -log p(next token)
  int64_t correct = 0;   // argmax == next token
  int64_t n = 0;
  double kl = 0;         // sum of KL(base || model)
  int64_t agree = 0;     // argmax(model) == argmax(base)
  double base_nll = 0;
};

int run_eval(int argc, char** argv) {
  squeeze::cli::Args args("eval", "eval -m MODEL.gguf -f TEXT.txt [--base BASE.gguf] [--ctx 256] [--chunks N]",
                          "Perplexity and top-1 accuracy of a model on held-out text; with --base, the KL\n"
                          "divergence from the base model's distribution, top-1 agreement and the\n"
                          "perplexity ratio (how much quantization or distillation changed the model).\n"
                          "--reasoning PROBLEMS.jsonl: exact-match accuracy, thinking tokens and budget hits\n"
                          "at each reasoning level and with no thinking (docs/reasoning.md).");
  args.option({"-m", "--model"}, "FILE", "the model to evaluate")
      .option({"-f", "--file"}, "TEXT", "held-out text (UTF-8)")
      .option({"--base"}, "FILE", "a reference model with the same vocabulary")
      .int_option({"--ctx"}, "N", "tokens per scored window", {2, squeeze::cli::kMaxTokens}, "256")
      .int_option({"--chunks"}, "N", "score at most N windows (0: all)", {0, squeeze::cli::kMaxTokens}, "0")
      .flag({"--tasks"}, "also score the next-word and verse-ending 4-way choice tasks on the text")
      .int_option({"--task-items"}, "N", "items per task", {1, 1 << 24}, "300")
      .int_option({"--sampled"}, "N", "with --base: reverse KL(model || base) on N continuations the model samples",
                  {0, 1 << 24}, "0")
      .int_option({"--prompt-len"}, "N", "--sampled: prompt tokens taken from the text", {1, squeeze::cli::kMaxTokens}, "32")
      .int_option({"--gen-len"}, "N", "--sampled: tokens the model samples per prompt", {1, squeeze::cli::kMaxTokens}, "32")
      .int_option({"--seed"}, "N", "seed of the task items and the sampling", {0, squeeze::cli::kMaxSeed}, "1")
      .option({"--kv"}, "TYPE", "KV cache type of the evaluated model: f16, bf16, f32 or q8_0", "f16")
      .option({"--json"}, "FILE", "also write the numbers as one JSON object")
      .threads_option();
  squeeze::cli::add_reasoning_eval_options(args);
  squeeze::cli::add_reasoning_options(args);
  if (!args.parse(argc, argv)) return 0;
  if (args.has("--reasoning")) return squeeze::cli::run_reasoning_eval(args);
  for (const char* o : {"--reasoning-effort", "--thinking-budget", "--problems", "--answer-tokens", "--bootstrap", "--budget-sweep", "--plot"})
    SQZ_CHECK(!args.has(o), o, " needs --reasoning PROBLEMS.jsonl");
  const std::string model_path = args.get("--model"), text_path = args.get("--file");
  SQZ_CHECK(!model_path.empty(), "missing -m MODEL.gguf");
  SQZ_CHECK(!text_path.empty(), "missing -f TEXT.txt");
  const int64_t ctx = args.get_int("--ctx"), max_chunks = args.get_int("--chunks");
  const int64_t n_sampled = args.get_int("--sampled");
  SQZ_CHECK(n_sampled == 0 || args.has("--base"), "--sampled needs --base (the reference model)");
  const auto kv_type = squeeze::kernels::cpu::kv_type_from_name(args.get("--kv"), "--kv");
  squeeze::set_default_thread_count(args.get_int32("--threads"));
  const squeeze::gguf::DeclaredInputs inputs({model_path, text_path, args.get("--base")});
  if (args.has("--json")) squeeze::gguf::check_output_path(args.get("--json"));  // before minutes of scoring

  std::ifstream in(text_path, std::ios::binary);
  if (!in) squeeze::fail(text_path, ": cannot open");
  std::stringstream buf;
  buf << in.rdbuf();
  const auto model = Model::load(model_path);
  std::unique_ptr<Model> base;
  if (args.has("--base")) {
    base = Model::load(args.get("--base"));
    SQZ_CHECK(base->config().n_vocab == model->config().n_vocab, "--base has a vocabulary of ",
              base->config().n_vocab, " tokens, the model ", model->config().n_vocab);
    for (int32_t id = 0; id < model->tokenizer().n_vocab(); ++id)
      SQZ_CHECK(base->tokenizer().token_text(id) == model->tokenizer().token_text(id),
                "--base and the model tokenize differently (token ", id, ")");
  }
  const std::vector<int32_t> tokens = model->tokenizer().encode(buf.str(), {.add_special = false});
  const int64_t n_windows_all = static_cast<int64_t>(tokens.size()) / ctx;
  SQZ_CHECK(n_windows_all > 0, text_path, ": ", tokens.size(), " tokens, fewer than one window of --ctx ", ctx);
  const int64_t n_windows = max_chunks > 0 ? std::min(max_chunks, n_windows_all) : n_windows_all;

  Session session(*model, {.n_ctx = ctx, .batch = std::min<int64_t>(ctx, 512), .kv_type = kv_type});
  std::unique_ptr<Session> base_session;
  if (base) base_session = std::make_unique<Session>(*base, squeeze::model::SessionParams{.n_ctx = ctx, .batch = std::min<int64_t>(ctx, 512)});
  const int64_t V = model->config().n_vocab;
  Scores s;
  std::vector<double> lp, lq;
  for (int64_t w = 0; w < n_windows; ++w) {
    const std::span<const int32_t> window(tokens.data() + w * ctx, static_cast<size_t>(ctx));
    session.reset();
    const auto logits = session.forward(window, /*all_logits=*/true);
    std::span<const float> base_logits;
    if (base_session) {
      base_session->reset();
      base_logits = base_session->forward(window, true);
    }
    for (int64_t i = 0; i + 1 < ctx; ++i) {
      const auto row = logits.subspan(static_cast<size_t>(i * V), static_cast<size_t>(V));
      const int32_t next = window[static_cast<size_t>(i + 1)];
      log_softmax(row, lq);
      s.nll -= lq[static_cast<size_t>(next)];
      const auto arg = std::max_element(row.begin(), row.end()) - row.begin();
      s.correct += arg == next;
      ++s.n;
      if (base_session) {
        const auto brow = base_logits.subspan(static_cast<size_t>(i * V), static_cast<size_t>(V));
        log_softmax(brow, lp);
        double kl = 0;
        for (int64_t v = 0; v < V; ++v) kl += std::exp(lp[static_cast<size_t>(v)]) * (lp[static_cast<size_t>(v)] - lq[static_cast<size_t>(v)]);
        s.kl += kl;
        s.base_nll -= lp[static_cast<size_t>(next)];
        s.agree += (std::max_element(brow.begin(), brow.end()) - brow.begin()) == arg;
      }
    }
    std::fprintf(stderr, "\rwindow %lld/%lld  ppl %.4f", static_cast<long long>(w + 1), static_cast<long long>(n_windows),
                 std::exp(s.nll / static_cast<double>(s.n)));
  }
  std::fprintf(stderr, "\n");
  const double n = static_cast<double>(s.n);
  std::vector<std::pair<std::string, double>> json;  // every printed number, for scripts
  std::printf("| metric | value |\n|---|---|\n");
  std::printf("| tokens scored | %lld (%lld windows of %lld) |\n", static_cast<long long>(s.n),
              static_cast<long long>(n_windows), static_cast<long long>(ctx));
  std::printf("| perplexity | %.4f |\n", std::exp(s.nll / n));
  std::printf("| top-1 accuracy | %.2f%% |\n", 100.0 * static_cast<double>(s.correct) / n);
  json.insert(json.end(), {{"tokens", n}, {"perplexity", std::exp(s.nll / n)},
                           {"top1", static_cast<double>(s.correct) / n}});
  if (base) {
    std::printf("| base perplexity | %.4f |\n", std::exp(s.base_nll / n));
    std::printf("| perplexity ratio (model / base) | %.4f |\n", std::exp((s.nll - s.base_nll) / n));
    std::printf("| mean KL(base ‖ model) | %.6f nats |\n", s.kl / n);
    std::printf("| top-1 agreement with base | %.2f%% |\n", 100.0 * static_cast<double>(s.agree) / n);
    json.insert(json.end(), {{"base_perplexity", std::exp(s.base_nll / n)},
                             {"perplexity_ratio", std::exp((s.nll - s.base_nll) / n)},
                             {"kl", s.kl / n},
                             {"top1_agreement", static_cast<double>(s.agree) / n}});
  }
  const auto seed = static_cast<uint64_t>(args.get_int("--seed"));
  if (args.has("--tasks")) {
    for (auto task : {squeeze::eval::ChoiceTask::next_word, squeeze::eval::ChoiceTask::verse_ending}) {
      const auto items = squeeze::eval::make_choice_items(task, buf.str(), args.get_int("--task-items"), seed);
      const auto r = squeeze::eval::score_choice_items(*model, task, items);
      std::printf("| task %s (4-way, chance 25%%) | %.2f%% of %lld |\n", squeeze::eval::task_name(task),
                  100.0 * r.accuracy(), static_cast<long long>(r.items));
      json.emplace_back(std::string("task_") + (task == squeeze::eval::ChoiceTask::next_word ? "next_word" : "verse_ending"),
                        r.accuracy());
    }
  }
  if (n_sampled > 0) {
    const auto r = squeeze::eval::sampled_kl(*model, *base, tokens,
                                             {.sequences = n_sampled, .prompt_len = args.get_int("--prompt-len"),
                                              .gen_len = args.get_int("--gen-len"), .temperature = 1.0f, .seed = seed});
    std::printf("| reverse KL(model ‖ base) on model samples | %.6f nats (%lld tokens) |\n", r.reverse_kl,
                static_cast<long long>(r.tokens));
    std::printf("| base perplexity of model samples | %.4f |\n", std::exp(r.reference_nll));
    json.insert(json.end(), {{"sampled_reverse_kl", r.reverse_kl}, {"sampled_base_perplexity", std::exp(r.reference_nll)},
                             {"sampled_model_perplexity", std::exp(r.model_nll)}});
  }
  if (args.has("--json")) squeeze::cli::write_numbers_json(args.get("--json"), json);
  return 0;
}

}  // namespace

SQZ_COMMAND("eval", "perplexity, top-1 accuracy, and KL / agreement against a base model", run_eval);
