// tools/cmd_spec_bench.cpp — `squeeze spec-bench`: speculative decoding measured against
// plain decoding in one run. Each prompt is generated with every method in turn (plain,
// prompt lookup, DFlash when a drafter is given; adaptive and at fixed block sizes), so a
// noisy machine disturbs all of them alike. Reports tokens/s, speed-ups, mean accepted
// length τ, the acceptance rate by draft position, whether each output equals plain
// decoding's, and what a verification of B tokens costs against a one-token step.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "generate/decode.h"
#include "sampling_options.h"
#include "prompt_file.h"
#include "model/drafter.h"
#include "model/model.h"
#include "model/session.h"
#include "model/speculative.h"
#include "wall_clock.h"

namespace {

using namespace squeeze;
using squeeze::cli::Clock;
using squeeze::cli::seconds_since;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

struct Method {
  std::string name;  // "plain", "lookup", "dflash"
  int64_t block = 0; // 0: adaptive (the source's largest block); else fixed
  std::string label() const {
    return name == "plain" ? name : name + (block ? " B=" + std::to_string(block) : " adaptive");
  }
};

struct Tally {
  double seconds = 0;
  int64_t tokens = 0, identical = 0, runs = 0;
  model::SpeculatorStats stats;
  void add(const model::SpeculatorStats& s) {
    stats.steps += s.steps, stats.verify_steps += s.verify_steps, stats.drafted += s.drafted, stats.accepted += s.accepted;
    stats.draft_seconds += s.draft_seconds, stats.verify_seconds += s.verify_seconds;
    if (stats.proposed_at.size() < s.proposed_at.size()) {
      stats.proposed_at.resize(s.proposed_at.size()), stats.accepted_at.resize(s.accepted_at.size());
    }
    for (size_t j = 0; j < s.proposed_at.size(); ++j)
      stats.proposed_at[j] += s.proposed_at[j], stats.accepted_at[j] += s.accepted_at[j];
  }
};

int run_spec_bench(int argc, char** argv) {
  cli::Args args("spec-bench", "spec-bench -m MODEL.gguf --prompts FILE [--draft DRAFTER.gguf] [options]",
                 "Speculative decoding against plain decoding, every method on every prompt in turn, in one run.");
  args.option({"-m", "--model"}, "FILE", "GGUF target model")
      .option({"--draft"}, "FILE", "DFlash drafter for the model (adds the dflash rows)")
      .option({"--prompts"}, "FILE", "prompts, one per line")
      .flag({"--chat"}, "wrap each prompt as a user message in the model's chat template")
      .int_option({"-n", "--n-predict"}, "N", "tokens generated per prompt (end-of-sequence ignored)", {1, cli::kMaxTokens}, "128")
      .option({"--temps"}, "LIST", "temperatures, comma-separated", "0,0.7")
      .option({"--fixed-blocks"}, "LIST", "also run each source at these fixed block sizes (anchor included)", "")
      .option({"--verify-blocks"}, "LIST", "block sizes whose verification cost is measured", "1,2,3,4,6,8,12,16")
      .int_option({"--seed"}, "N", "sampling seed (each prompt adds its index)", {0, cli::kMaxSeed}, "1")
      .threads_option()
      .int_option({"--ctx"}, "N", "context length", {16, cli::kMaxTokens}, "2048");
  if (!args.parse(argc, argv)) return 0;
  SQZ_CHECK(args.has("--model") && args.has("--prompts"), "spec-bench needs -m MODEL.gguf and --prompts FILE");
  set_default_thread_count(args.get_int32("--threads"));
  const auto target = model::Model::load(args.get("--model"));
  std::unique_ptr<model::Drafter> drafter;
  if (args.has("--draft")) drafter = model::Drafter::load(args.get("--draft"), *target);
  const auto& tok = target->tokenizer();
  const std::vector<int32_t> banned = generate::unused_tokens(tok);
  const auto prompts = cli::read_prompt_file(args.get("--prompts"), *target, args.has("--chat"));
  const int64_t n = args.get_int("-n"), n_ctx = args.get_int("--ctx");

  std::vector<Method> methods = {{"plain", 0}, {"lookup", 0}};
  if (drafter) methods.push_back({"dflash", 0});
  for (const std::string& b : split(args.get("--fixed-blocks"))) {
    const int64_t block = cli::parse_int("--fixed-blocks", b, {2, 64});
    methods.push_back({"lookup", block});
    if (drafter) {
      SQZ_CHECK(block <= drafter->config().block_size, "--fixed-blocks: ", block, " exceeds the drafter's block size");
      methods.push_back({"dflash", block});
    }
  }

  // verification cost: one forward of B tokens (batch-invariant, as the speculator runs it)
  // after the first prompt, median of 7; B = 1 is a plain decode step
  std::vector<int64_t> verify_blocks;
  for (const std::string& b : split(args.get("--verify-blocks"))) verify_blocks.push_back(cli::parse_int("--verify-blocks", b, {1, 64}));
  for (const Method& m : methods)
    if (m.block) verify_blocks.push_back(m.block);
  verify_blocks.push_back(1);
  std::sort(verify_blocks.begin(), verify_blocks.end());
  verify_blocks.erase(std::unique(verify_blocks.begin(), verify_blocks.end()), verify_blocks.end());
  std::map<int64_t, double> verify_ms;
  {
    model::Session session(*target, {.n_ctx = n_ctx});
    session.forward(prompts[0]);
    const int64_t base = session.position();
    std::mt19937 rng(1);
    for (int64_t block : verify_blocks) {
      std::vector<int32_t> toks(static_cast<size_t>(block));
      for (auto& t : toks) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(tok.n_vocab()));
      session.set_batch_invariant(block > 1);
      std::vector<double> times;
      for (int r = 0; r < 7; ++r) {
        const auto t0 = Clock::now();
        session.forward(toks, /*all_logits=*/block > 1);
        times.push_back(seconds_since(t0));
        session.truncate(base);
      }
      std::sort(times.begin(), times.end());
      verify_ms[block] = times[3] * 1e3;
    }
  }

  for (const std::string& temp_text : split(args.get("--temps"))) {
    const double temp = cli::parse_real("--temps", temp_text, {.min = 0});
    std::vector<Tally> tally(methods.size());
    for (size_t p = 0; p < prompts.size(); ++p) {
      std::string plain_text;
      for (size_t mi = 0; mi < methods.size(); ++mi) {
        const Method& m = methods[mi];
        model::Session session(*target, {.n_ctx = n_ctx});
        std::unique_ptr<model::DraftSource> source;
        if (m.name == "lookup") source = std::make_unique<model::PromptLookupSource>(m.block ? m.block - 1 : 15);
        if (m.name == "dflash") source = std::make_unique<model::DFlashSource>(*drafter);
        std::unique_ptr<model::Speculator> spec;
        if (source) {
          const int64_t drafts = m.block ? m.block - 1 : source->max_proposal();
          spec = std::make_unique<model::Speculator>(session, *source,
                                                     model::SpeculatorParams{.max_drafts = drafts, .adaptive = m.block == 0});
        }
        generate::Sequence seq(tok,
                               text::Sampler({.temperature = static_cast<float>(temp), .top_k = 40, .top_p = 0.95f,
                                              .min_p = 0.05f, .seed = static_cast<uint64_t>(args.get_int("--seed")) + p}),
                               {.stop = {.max_tokens = n}, .n_ctx = session.n_ctx()}, nullptr, banned);
        const auto logits = spec ? spec->prefill(prompts[p]) : session.forward(prompts[p]);
        seq.start(session.position(), prompts[p]);
        std::string out;
        const auto t0 = Clock::now();
        const auto r = generate::decode(session, seq, logits, {.speculator = spec.get()}, [&](const std::string& s) { out += s; });
        Tally& t = tally[mi];
        t.seconds += seconds_since(t0);
        t.tokens += r.generated;
        ++t.runs;
        if (mi == 0) plain_text = out;
        t.identical += out == plain_text;
        if (spec) t.add(spec->stats());
      }
    }
    const double plain_tps = static_cast<double>(tally[0].tokens) / tally[0].seconds;
    double lookup_tps = 0;
    for (size_t mi = 0; mi < methods.size(); ++mi)
      if (methods[mi].name == "lookup" && methods[mi].block == 0) lookup_tps = tally[mi].tokens / tally[mi].seconds;
    std::printf("\n### temperature %s: %zu prompts × %lld tokens\n\n", temp_text.c_str(), prompts.size(),
                static_cast<long long>(n));
    std::printf("| method | tokens/s | vs plain | vs lookup | τ | modelled vs plain | drafts kept | verify steps | plain steps | same output |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t mi = 0; mi < methods.size(); ++mi) {
      const Tally& t = tally[mi];
      const double tps = static_cast<double>(t.tokens) / t.seconds;
      // the verify-cost model at a fixed block: τ one-token steps' worth of tokens for one
      // verification of B tokens plus the drafting, per step
      std::string modelled;
      if (methods[mi].block && t.stats.verify_steps > 0) {
        const double draft_ms = 1e3 * t.stats.draft_seconds / static_cast<double>(t.stats.verify_steps);
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f×", t.stats.tau() * verify_ms[1] / (verify_ms[methods[mi].block] + draft_ms));
        modelled = buf;
      }
      std::printf("| %s | %.1f | %.2f× | %s | %s | %s | %s | %lld | %lld | %lld/%lld |\n", methods[mi].label().c_str(), tps,
                  tps / plain_tps, lookup_tps > 0 ? (std::to_string(tps / lookup_tps).substr(0, 4) + "×").c_str() : "",
                  mi ? std::to_string(t.stats.tau()).substr(0, 4).c_str() : "", modelled.c_str(),
                  mi ? (std::to_string(t.stats.accepted) + "/" + std::to_string(t.stats.drafted)).c_str() : "",
                  static_cast<long long>(t.stats.verify_steps), static_cast<long long>(t.stats.steps - t.stats.verify_steps),
                  static_cast<long long>(t.identical), static_cast<long long>(t.runs));
    }
    std::printf("\nacceptance by draft position (kept / offered, positions 1, 2, …):\n\n");
    for (size_t mi = 1; mi < methods.size(); ++mi) {
      const auto& s = tally[mi].stats;
      std::printf("- %s:", methods[mi].label().c_str());
      for (size_t j = 0; j < s.proposed_at.size() && s.proposed_at[j] > 0; ++j)
        std::printf(" %.2f", static_cast<double>(s.accepted_at[j]) / static_cast<double>(s.proposed_at[j]));
      std::printf("\n");
    }
  }

  std::printf("\n### verification cost (after a %zu-token prompt; median of 7; B = 1 is a plain decode step)\n\n"
              "| B | ms | × one-token step |\n|---|---|---|\n", prompts[0].size());
  for (const auto& [block, ms] : verify_ms)
    std::printf("| %lld | %.2f | %.2f |\n", static_cast<long long>(block), ms, ms / verify_ms[1]);
  return 0;
}

}  // namespace

SQZ_COMMAND("spec-bench", "speculative decoding (DFlash, prompt lookup) measured against plain decoding", run_spec_bench);
