// tools/cmd_make_model.cpp — `squeeze make-model`: a random-weight GGUF model of any
// built-in config (tests, benchmarks, races against other engines).
#include <cstdio>
#include <optional>

#include "args.h"
#include "chat/template.h"
#include "command.h"
#include "config_options.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/file_identity.h"
#include "gguf/ggml_type.h"
#include "model/config.h"
#include "model/model.h"
#include "model/random_model.h"
#include "vision/encoder.h"
#include "model/tensor_table.h"

namespace {

int run_make_model(int argc, char** argv) {
  squeeze::cli::Args args("make-model", "make-model --config NAME -o OUT.gguf [options]",
                          "Write a GGUF model with random weights, a byte-level BPE tokenizer and the\n"
                          "shapes of a built-in config (overridable), for tests and benchmarks.");
  args.option({"-o", "--output"}, "FILE", "output GGUF path")
      .option({"--type"}, "TYPE",
              "matrix type: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, or a quantization preset "
              "(Q4_K_M, Q5_K_M, ...: each tensor the preset's type, written directly)",
              "F32")
      .int_option({"--seed"}, "N", "random seed", {0, squeeze::cli::kMaxSeed}, "1")
      .option({"--chat-template"}, "FILE", "a Jinja chat template to store as tokenizer.chat_template")
      .flag({"--text-tags"}, "<think> </think> <tool_call> </tool_call> as text tokens, as in Qwen's vocabularies\n"
                             "(thinking and tool calls in tags) instead of control tokens")
      .option({"--drafter-for"}, "MODEL", "write a random DFlash drafter for this model instead (the reference recipe's\n"
                                         "shape: its width and heads, default taps; --draft-layers, --draft-block, --draft-window)")
      .int_option({"--draft-layers"}, "N", "drafter layers", {1, 64}, "5")
      .int_option({"--draft-block"}, "B", "drafter block size", {2, 64}, "16")
      .int_option({"--draft-window"}, "N", "drafter sliding window (0: none)", {0, 1 << 20}, "0")
      .option({"--mmproj-for"}, "MODEL", "write a random Muse Glimmer vision projector (GGUF, f32) for this model instead:\n"
                                        "the small tower (4 blocks of width 64) projecting into the model's width");
  squeeze::cli::add_config_options(args, "glimmer-tiny");
  if (!args.parse(argc, argv)) return 0;
  if (args.has("--mmproj-for")) {
    const std::string out = args.get("--output");
    SQZ_CHECK(!out.empty(), "missing -o OUT.gguf");
    const squeeze::gguf::DeclaredInputs inputs({args.get("--mmproj-for")});
    const auto target = squeeze::model::Model::load(args.get("--mmproj-for"));
    const auto c = squeeze::vision::small_encoder_config(target->config().n_embd);
    const uint64_t seed = static_cast<uint64_t>(args.get_int("--seed"));
    squeeze::vision::VisionEncoder::random(c, seed).save(out, "small vision tower (random weights, seed " + std::to_string(seed) + ")");
    std::printf("wrote %s: muse-glimmer projector, %lld blocks of width %lld, into width %lld\n", out.c_str(),
                static_cast<long long>(c.layers), static_cast<long long>(c.width), static_cast<long long>(c.text_width));
    return 0;
  }
  if (args.has("--drafter-for")) {
    const auto type = squeeze::gguf::ggml_type_from_name(args.get("--type"));
    SQZ_CHECK(type.has_value(), "unknown --type '", args.get("--type"), "'");
    const std::string out = args.get("--output");
    SQZ_CHECK(!out.empty(), "missing -o OUT.gguf");
    const squeeze::gguf::DeclaredInputs inputs({args.get("--drafter-for")});
    const auto target = squeeze::model::Model::load(args.get("--drafter-for"));
    const auto d = squeeze::model::default_draft_config(target->config(), args.get_int("--draft-layers"),
                                                         args.get_int("--draft-block"), target->config().n_vocab - 1,
                                                         args.get_int("--draft-window"));
    squeeze::model::write_random_drafter(d, *type, static_cast<uint64_t>(args.get_int("--seed")), out);
    std::printf("wrote %s: dflash drafter, %lld layers, %.1fM parameters, block %lld\n", out.c_str(),
                static_cast<long long>(d.n_layer), d.n_params() / 1e6, static_cast<long long>(d.block_size));
    return 0;
  }
  const squeeze::model::ModelConfig c = squeeze::cli::config_from_args(args);
  // A plain type keeps make-model's rule (matrices that cannot take it stay F32); a preset
  // (anything find_quant_preset knows that is not a plain type) writes its mix.
  const auto type = squeeze::gguf::ggml_type_from_name(args.get("--type"));
  std::optional<squeeze::model::QuantPreset> preset;
  if (!type) preset = squeeze::model::find_quant_preset(args.get("--type"));
  SQZ_CHECK(type || preset, "unknown --type '", args.get("--type"), "' (a GGUF type or a quantization preset)");
  const std::string out = args.get("--output");
  SQZ_CHECK(!out.empty(), "missing -o OUT.gguf");
  std::string chat_template;
  if (args.has("--chat-template")) {
    const std::string t = args.get("--chat-template");
    chat_template = squeeze::read_whole_file(t);
    SQZ_CHECK(!chat_template.empty(), t, ": the chat template is empty");
    squeeze::chat::TemplateOptions options;
    options.name = t;
    const squeeze::chat::Template check(chat_template, options);  // syntax errors now, not at chat time
  }
  const squeeze::gguf::DeclaredInputs inputs({args.get("--chat-template")});
  const auto fallbacks = squeeze::model::write_random_model(
      {.config = c, .type = type.value_or(squeeze::gguf::GgmlType::F32), .preset = preset,
       .seed = static_cast<uint64_t>(args.get_int("--seed")), .path = out, .chat_template = chat_template,
       .text_tags = args.has("--text-tags")});
  for (const auto& note : fallbacks) std::fprintf(stderr, "note: %s\n", note.c_str());
  const auto params = squeeze::model::count_params(c);
  std::printf("wrote %s: %s, %lld layers (%s), %.1fM parameters, matrices %s\n", out.c_str(), std::string(squeeze::model::arch_name(c.arch)).c_str(),
              static_cast<long long>(c.n_layer), squeeze::model::describe_pattern(c.is_local).c_str(), params.total / 1e6,
              args.get("--type").c_str());
  return 0;
}

}  // namespace

SQZ_COMMAND("make-model", "write a random-weight GGUF model of a built-in config", run_make_model);
