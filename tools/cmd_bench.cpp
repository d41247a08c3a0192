// tools/cmd_bench.cpp — `squeeze bench`: prompt-processing and generation speed of a model,
// measured like llama-bench (pp = prefill of P tokens in one batch; tg = N single-token
// decode steps; both after an optional prefilled depth D), so the two engines can be
// compared on the same GGUF file with the same settings.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "model/session.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int64_t> int_list(const std::string& s, const char* flag) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  // Each item through the same checked routine as any numeric option.
  for (std::string item; std::getline(ss, item, ',');)
    out.push_back(squeeze::cli::parse_int(flag, item, {0, squeeze::cli::kMaxTokens}));
  SQZ_CHECK(!out.empty(), flag, ": expected comma-separated non-negative integers, got '", s, "'");
  return out;
}

struct Stats {
  double mean = 0, sd = 0;
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / static_cast<double>(v.size() - 1)) : 0;
  return s;
}

int run_bench(int argc, char** argv) {
  squeeze::cli::Args args("bench", "bench -m MODEL.gguf [-p 512] [-n 128] [-d 0] [-r 3] [-t 2]",
                          "Measure prompt processing (pp: P tokens prefilled at once) and text generation\n"
                          "(tg: N decode steps) in tokens/s, optionally after a prefilled depth D, as\n"
                          "llama-bench does. Tokens are random ids; the weights and shapes are the model's.");
  args.option({"-m", "--model"}, "FILE", "GGUF model")
      .option({"-p", "--n-prompt"}, "LIST", "prompt lengths, comma-separated (0: skip)", "512")
      .option({"-n", "--n-gen"}, "LIST", "generation lengths, comma-separated (0: skip)", "128")
      .option({"-d", "--depth"}, "LIST", "context depths prefilled before each test", "0")
      .int_option({"-r", "--repetitions"}, "N", "repetitions of each test", {1, 1000000}, "3")
      .threads_option()
      .int_option({"-b", "--batch"}, "N", "prefill batch size", {1, squeeze::cli::kMaxBatch}, "512")
      .option({"--kv"}, "TYPE", "KV cache type: f16, bf16, f32 or q8_0 (8.5 bits per value; needs head_dim % 32 == 0)", "f16")
      .flag({"--csv"}, "print CSV rows instead of a table")
      .flag({"--profile"}, "after each tg test, the decode time per token by kind of op (adds clock reads)");
  if (!args.parse(argc, argv)) return 0;
  const auto prompts = int_list(args.get("--n-prompt"), "-p/--n-prompt");
  const auto gens = int_list(args.get("--n-gen"), "-n/--n-gen");
  const auto depths = int_list(args.get("--depth"), "-d/--depth");
  const std::string path = args.get("--model");
  SQZ_CHECK(!path.empty(), "missing -m MODEL.gguf");
  const int64_t reps = args.get_int("--repetitions");
  const std::string kv = args.get("--kv");
  const auto kv_type = squeeze::kernels::cpu::kv_type_from_name(kv, "--kv");
  squeeze::set_default_thread_count(args.get_int32("--threads"));
  const auto model = squeeze::model::Model::load(path);
  const auto& c = model->config();

  int64_t need = 1;
  for (int64_t d : depths)
    for (int64_t p : prompts)
      for (int64_t n : gens) need = std::max(need, d + std::max(p, n) + 1);
  squeeze::model::Session session(*model, {.n_ctx = std::max(need, int64_t{64}), .batch = args.get_int("--batch"),
                                           .kv_type = kv_type});
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(c.n_vocab - 1));
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = tok(rng);
    return t;
  };

  const bool csv = args.has("--csv");
  if (csv) std::printf("model,params,bytes,threads,test,depth,tokens,t_per_s,sd\n");
  else std::printf("| model | size | threads | test | t/s |\n|---|---|---|---|---|\n");
  const double size_mib = static_cast<double>(model->weight_bytes()) / (1 << 20);
  auto report = [&](const std::string& test, int64_t depth, int64_t tokens, const std::vector<double>& rates) {
    const Stats s = stats(rates);
    const std::string name = test + (depth ? " @ d" + std::to_string(depth) : "");
    if (csv) {
      std::printf("%s,%lld,%llu,%d,%s,%lld,%lld,%.3f,%.3f\n", path.c_str(), static_cast<long long>(0),
                  static_cast<unsigned long long>(model->weight_bytes()), squeeze::default_thread_pool().size(),
                  test.c_str(), static_cast<long long>(depth), static_cast<long long>(tokens), s.mean, s.sd);
    } else {
      std::printf("| %s | %.1f MiB | %d | %s | %.2f ± %.2f |\n", std::string(squeeze::model::arch_name(c.arch)).c_str(), size_mib,
                  squeeze::default_thread_pool().size(), name.c_str(), s.mean, s.sd);
    }
    std::fflush(stdout);
  };
  squeeze::model::StepProfile profile;
  const bool profiling = args.has("--profile");
  // Per op: ms per token and share of the profiled step time; in CSV mode as rows
  // "profile,<test>,<op>,<ms per token>,<share>".
  auto report_profile = [&](const std::string& test, int64_t depth) {
    const std::string name = test + (depth ? " @ d" + std::to_string(depth) : "");
    double total = 0;
    for (double t : profile.seconds) total += t;
    const double steps = static_cast<double>(std::max<int64_t>(profile.steps, 1));
    if (!csv) std::printf("\n%s, time per token by op (%lld steps):\n\n| op | ms / token | share |\n|---|---|---|\n",
                          name.c_str(), static_cast<long long>(profile.steps));
    for (size_t i = 0; i < squeeze::model::kStepOps; ++i) {
      const char* op = squeeze::model::step_op_name(static_cast<squeeze::model::StepOp>(i));
      const double ms = 1e3 * profile.seconds[i] / steps, share = total > 0 ? profile.seconds[i] / total : 0;
      if (csv) std::printf("profile,%s,%s,%.4f,%.4f\n", name.c_str(), op, ms, share);
      else std::printf("| %s | %.3f | %.1f%% |\n", op, ms, 100 * share);
    }
    if (!csv) std::printf("| total | %.3f | 100%% |\n\n", 1e3 * total / steps);
    std::fflush(stdout);
  };
  auto prefill_depth = [&](int64_t depth) {
    session.reset();
    if (depth > 0) session.forward(random_tokens(depth));
  };
  // One untimed warm-up run touches every weight page and the scratch buffers.
  prefill_depth(0);
  session.forward(random_tokens(std::min<int64_t>(8, need - 1)));

  for (int64_t depth : depths) {
    for (int64_t p : prompts) {
      if (p == 0) continue;
      std::vector<double> rates;
      for (int64_t r = 0; r < reps; ++r) {
        prefill_depth(depth);
        const auto t = random_tokens(p);
        const auto t0 = Clock::now();
        session.forward(t);
        rates.push_back(static_cast<double>(p) / std::chrono::duration<double>(Clock::now() - t0).count());
      }
      report("pp" + std::to_string(p), depth, p, rates);
    }
    for (int64_t n : gens) {
      if (n == 0) continue;
      std::vector<double> rates;
      for (int64_t r = 0; r < reps; ++r) {
        prefill_depth(depth);
        int32_t next = tok(rng);
        if (profiling) session.set_profile(&profile);
        const auto t0 = Clock::now();
        for (int64_t i = 0; i < n; ++i) {
          const auto logits = session.forward(std::span<const int32_t>(&next, 1));
          next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        }
        rates.push_back(static_cast<double>(n) / std::chrono::duration<double>(Clock::now() - t0).count());
        session.set_profile(nullptr);
      }
      report("tg" + std::to_string(n), depth, n, rates);
      if (profiling) {
        report_profile("tg" + std::to_string(n), depth);
        profile.clear();
      }
    }
  }
  return 0;
}

}  // namespace

SQZ_COMMAND("bench", "prompt-processing and generation speed (llama-bench style)", run_bench);
