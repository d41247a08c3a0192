// tools/cmd_perplexity.cpp — `squeeze perplexity`: perplexity by llama-perplexity's method
// (eval/perplexity.h), its log-probability file for KL comparisons (eval/logits_file.h),
// and, against such a file, llama-perplexity's KL-divergence statistics.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "numbers_json.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "eval/logits_file.h"
#include "eval/perplexity.h"
#include "gguf/file_identity.h"
#include "model/model.h"
#include "model/session.h"

namespace {

using squeeze::fail;
namespace eval = squeeze::eval;

int run_perplexity(int argc, char** argv) {
  squeeze::cli::Args args(
      "perplexity", "perplexity -m MODEL.gguf (-f TEXT | --kl-base FILE) [-c 512] [options]",
      "Perplexity as llama-perplexity computes it: the text is tokenized with BOS, cut into\n"
      "chunks of -c tokens, each run from an empty cache with BOS as its first token, and\n"
      "the second half of each chunk scored. Figures compare directly with llama.cpp's at\n"
      "the same -c (llama-perplexity's own default -c is the model's context: pass it).\n"
      "--save-logits writes llama-perplexity's --kl-divergence-base file; --kl-base reads\n"
      "one (from squeeze or llama.cpp), runs its tokens and prints KL(base || model),\n"
      "the same-top-token rate and both perplexities.");
  args.option({"-m", "--model"}, "FILE", "GGUF model")
      .option({"-f", "--file"}, "TEXT", "text to score (UTF-8)")
      .int_option({"-c", "--ctx"}, "N", "tokens per chunk", {4, squeeze::cli::kMaxTokens}, "512")
      .int_option({"--chunks"}, "N", "score at most N chunks (0: all)", {0, squeeze::cli::kMaxTokens}, "0")
      .int_option({"--batch"}, "N", "prefill batch size", {1, squeeze::cli::kMaxBatch}, "64")
      .option({"--kv"}, "TYPE", "KV cache type: f16, bf16, f32 or q8_0 (8.5 bits per value; needs head_dim % 32 == 0)", "f16")
      .option({"--save-logits"}, "FILE", "write the scored log-probabilities (llama-perplexity --kl-divergence-base format)")
      .option({"--kl-base"}, "FILE", "compare with a saved log-probability file (its tokens are run; no -f)")
      .option({"--json"}, "FILE", "also write the final numbers as one JSON object")
      .threads_option();
  if (!args.parse(argc, argv)) return 0;
  const std::string model_path = args.get("--model");
  SQZ_CHECK(!model_path.empty(), "missing -m MODEL.gguf");
  const bool kl = args.has("--kl-base");
  if (kl == args.has("--file")) fail("give exactly one of -f TEXT or --kl-base FILE");
  if (kl && args.has("--save-logits")) fail("--save-logits and --kl-base cannot be combined");
  std::vector<std::string> input_paths = {model_path};
  for (const char* opt : {"--file", "--kl-base"})
    if (args.has(opt)) input_paths.push_back(args.get(opt));
  const squeeze::gguf::DeclaredInputs inputs(input_paths);
  for (const char* opt : {"--json", "--save-logits"})  // before minutes of scoring
    if (args.has(opt)) squeeze::gguf::check_output_path(args.get(opt));
  squeeze::set_default_thread_count(args.get_int32("--threads"));

  const auto model = squeeze::model::Model::load(model_path);
  const auto& tok = model->tokenizer();
  const int32_t n_vocab = static_cast<int32_t>(model->config().n_vocab);
  int32_t n_ctx = args.get_int32("--ctx");
  std::vector<int32_t> tokens;
  std::optional<eval::LogitsFileReader> base;
  if (kl) {
    base.emplace(args.get("--kl-base"));
    if (base->n_vocab() != n_vocab)
      fail(base->path(), ": vocabulary of ", base->n_vocab(), " tokens, but ", model_path, " has ", n_vocab);
    if (args.has("--ctx") && n_ctx != base->n_ctx())
      fail(base->path(), ": was computed with -c ", base->n_ctx(), ", not ", n_ctx);
    n_ctx = base->n_ctx();
    tokens.assign(base->tokens().begin(), base->tokens().end());
  } else {
    // llama-perplexity tokenizes with add_special (BOS when the vocabulary adds one) and
    // without parse_special: special-token texts in the file are plain text.
    tokens = tok.encode(squeeze::read_whole_file(args.get("--file")), {.add_special = false, .parse_special = false});
    if (tok.adds_bos()) tokens.insert(tokens.begin(), tok.bos_id());
  }
  if (n_ctx - 1 > model->config().n_ctx)
    fail("-c ", n_ctx, " exceeds the model's context of ", model->config().n_ctx);
  if (!kl && int64_t(tokens.size()) < 2 * int64_t(n_ctx))
    fail(args.get("--file"), " tokenizes to ", tokens.size(), " tokens; -c ", n_ctx, " needs at least ", 2 * int64_t(n_ctx));

  int32_t n_chunk = static_cast<int32_t>(int64_t(tokens.size()) / n_ctx);
  if (args.get_int("--chunks") > 0) n_chunk = static_cast<int32_t>(std::min<int64_t>(n_chunk, args.get_int("--chunks")));
  const int64_t per_chunk = eval::scored_per_chunk(n_ctx);
  std::printf("perplexity: %zu tokens, %d chunks of %d, %lld scored per chunk (%lld positions)\n", tokens.size(), n_chunk,
              n_ctx, static_cast<long long>(per_chunk), static_cast<long long>(per_chunk * n_chunk));
  std::fflush(stdout);

  std::optional<eval::LogitsFileWriter> save;
  if (args.has("--save-logits"))  // written as chunks finish; visible only when complete
    save.emplace(args.get("--save-logits"), n_ctx, n_vocab, n_chunk,
                 std::span<const int32_t>(tokens.data(), size_t(n_chunk) * n_ctx));

  const auto kv_type = squeeze::kernels::cpu::kv_type_from_name(args.get("--kv"), "--kv");
  squeeze::model::Session session(*model, {.n_ctx = n_ctx, .batch = args.get_int("--batch"), .kv_type = kv_type});
  auto& pool = squeeze::default_thread_pool();
  eval::NllStats nll;
  eval::KlStats kld;
  std::vector<double> row_nll(static_cast<size_t>(per_chunk));
  std::vector<eval::KlPosition> row_kl(static_cast<size_t>(per_chunk));
  const int64_t nv = eval::logits_row_values(n_vocab);
  std::vector<uint16_t> rows(save ? static_cast<size_t>(per_chunk * nv) : 0);

  const eval::ChunkPlan plan{.n_ctx = n_ctx, .n_chunk = n_chunk, .bos_id = tok.adds_bos() ? tok.bos_id() : -1};
  eval::run_chunks(session, tokens, plan, [&](int32_t c, std::span<const float> logits, std::span<const int32_t> targets) {
    auto row = [&](int64_t i) { return logits.subspan(size_t(i) * n_vocab, size_t(n_vocab)); };
    pool.parallel_for(0, per_chunk, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (base) row_kl[i] = eval::compare_to_base(row(i), base->row(c, i), targets[i]);
        else row_nll[i] = eval::token_nll(row(i), targets[i]);
        if (save) eval::encode_log_probs(row(i), rows.data() + i * nv);
      }
    });
    if (save) save->write_rows(rows);
    if (base) {
      for (const auto& p : row_kl) kld.add(p);
      std::printf("[%d] PPL %.4f  base %.4f  KLD %.6f  same top %.3f%%\n", c + 1, kld.ppl(), kld.ppl_base(),
                  kld.mean_kld().mean, 100 * kld.same_top().mean);
    } else {
      for (double v : row_nll) nll.add(v);
      std::printf("[%d]%.4f,", c + 1, nll.ppl());
    }
    std::fflush(stdout);
  });
  if (save) save->commit();

  std::vector<std::pair<std::string, double>> json = {
      {"n_ctx", n_ctx}, {"chunks", n_chunk}, {"positions", double(per_chunk * n_chunk)}};
  if (base) {
    const auto k = kld.mean_kld();
    const auto top = kld.same_top();
    std::printf("\nMean PPL(model)      : %10.6f\nMean PPL(base)       : %10.6f\n"
                "ln(PPL(model)/PPL(base)): %10.6f\nMean KLD             : %10.6f +/- %10.6f\n"
                "Maximum KLD          : %10.6f\n99.0%%   KLD          : %10.6f\nMedian  KLD          : %10.6f\n"
                "RMS delta-p          : %6.3f %%\nSame top p           : %6.3f +/- %5.3f %%\n",
                kld.ppl(), kld.ppl_base(), std::log(kld.ppl() / kld.ppl_base()), k.mean, k.error, kld.kld_quantile(1),
                kld.kld_quantile(0.99), kld.kld_quantile(0.5), 100 * kld.rms_p_diff(), 100 * top.mean, 100 * top.error);
    json.insert(json.end(), {{"ppl", kld.ppl()}, {"ppl_base", kld.ppl_base()}, {"mean_kld", k.mean},
                             {"mean_kld_error", k.error}, {"max_kld", kld.kld_quantile(1)},
                             {"kld_p99", kld.kld_quantile(0.99)}, {"median_kld", kld.kld_quantile(0.5)},
                             {"rms_p_diff", kld.rms_p_diff()}, {"same_top", top.mean}});
  } else {
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", nll.ppl(), nll.ppl_error());
    json.insert(json.end(), {{"ppl", nll.ppl()}, {"ppl_error", nll.ppl_error()}});
  }
  if (args.has("--json")) squeeze::cli::write_numbers_json(args.get("--json"), json);
  return 0;
}

}  // namespace

SQZ_COMMAND("perplexity", "perplexity by llama-perplexity's method; KL divergence against a saved base", run_perplexity);
