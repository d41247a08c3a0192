// tools/cmd_plan.cpp — `squeeze plan`: memory for a model at a context length (weights,
// KV cache hybrid / all-global / MHA, activations) and whether it fits a device.
#include <cstdio>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "model/config.h"
#include "model/gguf_config.h"
#include "model/memory_plan.h"

namespace {

using namespace squeeze::model;

int run_plan(int argc, char** argv) {
  std::string names;
  for (const auto& n : builtin_config_names()) names += (names.empty() ? "" : ", ") + n;
  squeeze::cli::Args args("plan", "plan CONFIG [--ctx N] [--type Q4_K_M] [--kv bf16] [--device 24GB]",
                          "Print the memory a model needs: weights, KV cache (hybrid local/global, all-global and\n"
                          "MHA-style), activations, the total, and whether it fits a device.\n"
                          "CONFIG is a built-in config (" + names + ") or a GGUF model file.");
  args.int_option({"-c", "--ctx"}, "N", "context length in tokens (default: the model's)", {1, squeeze::cli::kMaxTokens})
      .option({"--type"}, "TYPE", "weight type: Q4_K_M, Q4_K_S, Q5_K_M, Q6_K, Q8_0, F16, any ggml type, or bits per weight",
              "Q4_K_M")
      .option({"--kv"}, "TYPE", "KV cache element type: f32, f16, bf16", "bf16")
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
  } else {
    config = builtin_config(what);
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
