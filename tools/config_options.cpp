// tools/config_options.cpp — --config and shape overrides → ModelConfig.
#include "config_options.h"

#include "core/error.h"

namespace squeeze::cli {

void add_config_options(Args& args, const std::string& default_config) {
  args.option({"--config"}, "NAME", "built-in config (glimmer-30b, glimmer-1b, glimmer-tiny, llama-1b, kjv-teacher, glimmer-kjv)", default_config)
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
}

model::ModelConfig config_from_args(const Args& args) {
  SQZ_CHECK(!args.get("--config").empty(), "missing --config NAME");
  model::ModelConfig c = model::builtin_config(args.get("--config"));
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
    c.is_local = model::period_pattern(c.n_layer, 4);
  }
  if (args.has("--arch")) {
    c.arch = args.get("--arch");
    SQZ_CHECK(c.arch == "glimmer" || c.arch == "llama", "--arch must be glimmer or llama");
  }
  if (c.arch == "llama" || c.sliding_window == 0) {
    c.sliding_window = 0;
    c.is_local = model::all_global_pattern(c.n_layer);
  }
  c.validate();
  return c;
}

}  // namespace squeeze::cli
