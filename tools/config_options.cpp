// tools/config_options.cpp — --config and shape overrides → ModelConfig.
#include "config_options.h"

#include "core/error.h"

namespace squeeze::cli {

void add_config_options(Args& args, const std::string& default_config) {
  std::string names;
  for (const auto& n : model::builtin_config_names()) names += (names.empty() ? "" : ", ") + n;
  args.group("model shape")
      .option({"--config"}, "NAME", "built-in config (" + names + ")", default_config)
      .option({"--arch"}, "ARCH",
              "override the architecture (glimmer, llama, gemma3, muse-glimmer, qwen2, qwen3 or qwen3moe; llama, "
              "qwen2 (Q/K/V biases, NeoX RoPE) and qwen3 (QK-norm, NeoX RoPE) make every layer global, "
              "gemma3 sets its options: pre+post norms, QK-norm, GeGLU, NeoX RoPE, scaled embeddings, [L x5 G] "
              "pattern; muse-glimmer sets its: embedding norm, pre+post norms, QK-norm, sigmoid attention gate, "
              "no RoPE on global layers (every 4th from the last), untied head, logit scale and soft-cap 20)")
      // Coarse bounds that keep every product in int64; ModelConfig::validate() checks
      // the shape as a whole (heads divide, window below the context, ...).
      .int_option({"--layers"}, "N", "override the number of layers", {1, 4096})
      .int_option({"--embd"}, "N", "override the hidden size", {1, 1 << 20})
      .int_option({"--heads"}, "N", "override the query heads", {1, 4096})
      .int_option({"--kv-heads"}, "N", "override the KV heads", {1, 4096})
      .int_option({"--head-dim"}, "N", "override the head dimension", {1, 1 << 16})
      .int_option({"--ff"}, "N", "override the FFN size", {1, 1 << 22})
      .int_option({"--vocab"}, "N", "override the vocabulary size", {1, 1 << 24})
      .int_option({"--window"}, "N", "override the sliding window (0: none, every layer global)", {0, kMaxTokens})
      .int_option({"--ctx"}, "N", "override the context length", {1, kMaxTokens});
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
  const int64_t old_layers = c.n_layer;
  override_int("--layers", c.n_layer);
  // Layer kinds (expert or dense FFN) repeat their pattern over the new depth.
  if (!c.layer_kinds.empty() && c.n_layer != old_layers) {
    std::vector<model::LayerKind> kinds(static_cast<size_t>(c.n_layer));
    for (size_t i = 0; i < kinds.size(); ++i) kinds[i] = c.layer_kinds[i % c.layer_kinds.size()];
    c.layer_kinds = std::move(kinds);
  }
  model::Arch arch = c.arch;
  if (args.has("--arch")) {
    const std::optional<model::Arch> given = model::parse_arch(args.get("--arch"));
    SQZ_CHECK(given, "--arch must be one of ", model::supported_archs(), " (got '", args.get("--arch"), "')");
    arch = *given;
  }
  // After the shape overrides: gemma3's embedding and score scales and muse-glimmer's
  // logit scale and pattern depend on the shape.
  if (args.has("--arch") || arch == model::Arch::gemma3 || arch == model::Arch::muse_glimmer)
    model::set_arch_defaults(c, arch);
  if ((args.has("--layers") || args.has("--arch")) && c.arch != model::Arch::muse_glimmer)
    c.is_local = model::period_pattern(c.n_layer, model::arch_info(c.arch).default_pattern_period);
  if (model::arch_info(c.arch).window == model::WindowKey::none || c.sliding_window == 0) {
    c.sliding_window = 0;
    c.is_local = model::all_global_pattern(c.n_layer);
  }
  c.validate();
  return c;
}

}  // namespace squeeze::cli
