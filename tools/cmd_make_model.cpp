// tools/cmd_make_model.cpp — `squeeze make-model`: a random-weight GGUF model of any
// built-in config (tests, benchmarks, races against other engines).
#include <cstdio>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "gguf/ggml_type.h"
#include "model/config.h"
#include "model/random_model.h"

namespace {

int run_make_model(int argc, char** argv) {
  squeeze::cli::Args args("make-model", "make-model --config NAME -o OUT.gguf [options]",
                          "Write a GGUF model with random weights, a byte-level BPE tokenizer and the\n"
                          "shapes of a built-in config (overridable), for tests and benchmarks.");
  args.option({"--config"}, "NAME", "built-in config (glimmer-30b, glimmer-1b, glimmer-tiny, llama-1b)", "glimmer-tiny")
      .option({"-o", "--output"}, "FILE", "output GGUF path")
      .option({"--type"}, "TYPE", "matrix type: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K", "F32")
      .option({"--seed"}, "N", "random seed", "1")
      .option({"--arch"}, "ARCH", "override the architecture (glimmer or llama; llama makes every layer global)")
      .option({"--layers"}, "N", "override the number of layers")
      .option({"--embd"}, "N", "override the hidden size")
      .option({"--heads"}, "N", "override the query heads")
      .option({"--kv-heads"}, "N", "override the KV heads")
      .option({"--head-dim"}, "N", "override the head dimension")
      .option({"--ff"}, "N", "override the FFN size")
      .option({"--vocab"}, "N", "override the vocabulary size")
      .option({"--window"}, "N", "override the sliding window")
      .option({"--ctx"}, "N", "override the context length");
  if (!args.parse(argc, argv)) return 0;
  using squeeze::model::ModelConfig;
  ModelConfig c = squeeze::model::builtin_config(args.get("--config"));
  auto override_int = [&](const char* flag, int64_t& field) {
    if (args.has(flag)) field = args.get_int(flag);
  };
  override_int("--embd", c.n_embd);
  override_int("--heads", c.n_head);
  override_int("--kv-heads", c.n_head_kv);
  override_int("--head-dim", c.head_dim);
  override_int("--ff", c.n_ff);
  override_int("--vocab", c.n_vocab);
  override_int("--window", c.sliding_window);
  override_int("--ctx", c.n_ctx);
  if (args.has("--layers")) {
    c.n_layer = args.get_int("--layers");
    SQZ_CHECK(c.n_layer > 0 && c.n_layer <= 4096, "--layers must be in 1..4096");
    c.is_local = squeeze::model::period_pattern(c.n_layer, 4);
  }
  if (args.has("--arch")) {
    c.arch = args.get("--arch");
    SQZ_CHECK(c.arch == "glimmer" || c.arch == "llama", "--arch must be glimmer or llama");
  }
  if (c.arch == "llama" || c.sliding_window == 0) {
    c.sliding_window = 0;
    c.is_local = squeeze::model::all_global_pattern(c.n_layer);
  }
  c.validate();
  const auto type = squeeze::gguf::ggml_type_from_name(args.get("--type"));
  SQZ_CHECK(type.has_value(), "unknown --type '", args.get("--type"), "'");
  const std::string out = args.get("--output");
  SQZ_CHECK(!out.empty(), "missing -o OUT.gguf");
  const auto fallbacks = squeeze::model::write_random_model({.config = c, .type = *type,
                                                              .seed = static_cast<uint64_t>(args.get_int("--seed")), .path = out});
  for (const auto& name : fallbacks)
    std::fprintf(stderr, "note: %s kept as F32 (row length not a multiple of the %s block)\n", name.c_str(),
                 args.get("--type").c_str());
  const auto params = squeeze::model::count_params(c);
  std::printf("wrote %s: %s, %lld layers (%s), %.1fM parameters, matrices %s\n", out.c_str(), c.arch.c_str(),
              static_cast<long long>(c.n_layer), squeeze::model::describe_pattern(c.is_local).c_str(), params.total / 1e6,
              args.get("--type").c_str());
  return 0;
}

}  // namespace

SQZ_COMMAND("make-model", "write a random-weight GGUF model of a built-in config", run_make_model);
