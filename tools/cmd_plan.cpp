// tools/cmd_plan.cpp — `squeeze plan`: memory for a model at a context length (weights,
// KV cache hybrid / all-global / MHA, activations) and whether it fits a device.
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "args.h"
#include "command.h"
#include "convert/hf_arch.h"
#include "core/bounded_json.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "model/config.h"
#include "model/gguf_config.h"
#include "model/memory_plan.h"

namespace {

using namespace squeeze::model;

// A Hugging Face config.json (or a folder holding one) as squeeze convert reads it, plus
// the vision projector its vision_config describes (Muse Glimmer).
ModelConfig config_from_hf(const std::string& what, PlanParams& p) {
  std::string path = what;
  std::error_code ec;
  if (std::filesystem::is_directory(what, ec)) path = (std::filesystem::path(what) / "config.json").string();
  const nlohmann::json j = squeeze::parse_json_or_throw<nlohmann::json>(squeeze::read_whole_file(path), path,
                                                                         {.max_depth = 64, .max_object_keys = INT64_MAX});
  if (!j.is_object()) squeeze::fail(path, ": not a JSON object");
  ModelConfig c = squeeze::convert::read_hf_config(j, path).config;
  c.name = what;
  if (c.arch == Arch::muse_glimmer && j.contains("vision_config") && j["vision_config"].is_object()) {
    const auto& v = j["vision_config"];
    auto get = [&](const nlohmann::json& o, const char* k, int64_t dflt) {
      if (!o.contains(k) || o[k].is_null()) return dflt;
      if (!o[k].is_number_integer() || o[k].get<int64_t>() <= 0) squeeze::fail(path, ": vision_config \"", k, "\" must be a positive integer");
      return o[k].get<int64_t>();
    };
    const VisionShape r = released_muse_glimmer_vision();
    const int64_t pos_h = get(v, "pos_emb_height", r.pos_grid), pos_w = get(v, "pos_emb_width", r.pos_grid);
    VisionShape s{.layers = get(v, "num_hidden_layers", r.layers), .width = get(v, "hidden_size", r.width),
                  .mlp = get(v, "intermediate_size", r.mlp), .patch = get(v, "patch_size", r.patch),
                  .temporal = get(v, "patch_temporal", r.temporal), .pos_grid = 0, .merge = get(v, "merge_size", r.merge),
                  .adapter_hidden = get(j, "projector_hidden_size", r.adapter_hidden), .text_width = c.n_embd};
    if (get(j, "out_hidden_size", s.merge * s.merge * s.width) != s.merge * s.merge * s.width)
      squeeze::fail(path, ": out_hidden_size differs from merge_size² × vision hidden_size");
    s.pos_grid = pos_h == pos_w ? pos_h : 0;
    if (s.pos_grid == 0) squeeze::fail(path, ": vision_config pos_emb_height and pos_emb_width differ (unsupported)");
    p.vision = s;
  }
  return c;
}

int run_plan(int argc, char** argv) {
  std::string names;
  for (const auto& n : builtin_config_names()) names += (names.empty() ? "" : ", ") + n;
  squeeze::cli::Args args("plan", "plan CONFIG|M.gguf|HF_DIR|config.json [--ctx N] [--type Q4_K_M] [--kv bf16] [--device 24GB]",
                          "Print the memory a model needs: weights, KV cache (hybrid local/global, all-global and\n"
                          "MHA-style), activations, the total, and whether it fits a device.\n"
                          "CONFIG is a built-in config (" + names + "), a GGUF model file, or a Hugging Face\n"
                          "config.json (or its folder) of an architecture `squeeze convert` reads. For Muse Glimmer\n"
                          "the vision projector (from vision_config; the released one for muse-glimmer-30b) and the\n"
                          "released DFlash drafter (muse-glimmer-30b) are planned as separate files beside it.");
  args.int_option({"-c", "--ctx"}, "N", "context length in tokens (default: the model's)", {1, squeeze::cli::kMaxTokens})
      .option({"--type"}, "TYPE", "weight type: Q4_K_M, Q4_K_S, Q5_K_M, Q6_K, Q8_0, F16, any ggml type, or bits per weight",
              "Q4_K_M")
      .option({"--kv"}, "TYPE", "KV cache element type: f32, f16, bf16, q8_0", "bf16")
      .option({"--device"}, "SIZE", "device memory, e.g. 24GB, 24GiB, 80GB", "24GB")
      .int_option({"--headroom"}, "N", "ring slots per local layer beyond the window (0: the engine's max(batch, 64))", {0, squeeze::cli::kMaxTokens}, "0")
      .int_option({"--batch"}, "N", "prefill batch (activation estimate, default headroom)", {1, squeeze::cli::kMaxBatch}, "512");
  if (!args.parse(argc, argv)) return 0;
  const std::string& what = args.positional_at(0, "CONFIG");
  if (args.positional().size() > 1) squeeze::fail("plan: one CONFIG expected, got ", args.positional().size());
  PlanParams p;
  try {  // before reading any file; the error names the option
    p.device_bytes = parse_byte_size(args.get("--device"));
  } catch (const squeeze::Error& e) {
    throw e.with_context("--device");
  }
  // A GGUF file: the config from its metadata and the exact bytes of its tensors.
  ModelConfig config;
  if (what.size() > 5 && what.substr(what.size() - 5) == ".gguf") {
    const squeeze::gguf::File file(what);
    config = config_from_gguf(file);
    int64_t bytes = 0;
    for (const auto& t : file.tensors()) bytes += static_cast<int64_t>(t.n_bytes);
    p.weight_bytes = bytes;
  } else if (what.ends_with(".json") || std::filesystem::is_directory(what)) {
    config = config_from_hf(what, p);
  } else {
    config = builtin_config(what);
    if (what == "muse-glimmer-30b") {  // the released model's projector and drafter
      p.vision = released_muse_glimmer_vision();
      p.drafter = released_muse_glimmer_drafter();
    }
  }
  p.n_ctx = args.has("--ctx") ? args.get_int("--ctx") : 0;
  p.weight_type = args.get("--type");
  p.kv_type = kv_type_from_name(args.get("--kv"), "--kv");
  p.local_headroom = args.get_int("--headroom");
  p.batch = args.get_int("--batch");
  const MemoryPlan plan = plan_memory(config, p);
  std::fputs(format_plan(plan).c_str(), stdout);
  return 0;
}

}  // namespace

SQZ_COMMAND("plan", "memory plan: weights, KV cache (hybrid/global/MHA), activations, fits?", run_plan);
