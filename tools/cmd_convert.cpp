// tools/cmd_convert.cpp — `squeeze convert HF_DIR OUT.gguf [--type T]`: a Hugging Face
// checkpoint folder → GGUF, as llama.cpp's converter writes it (convert/convert.h).
#include <cstdio>
#include <string>

#include "args.h"
#include "command.h"
#include "convert/convert.h"
#include "core/error.h"
#include "gguf/file_identity.h"

namespace {

int run_convert(int argc, char** argv) {
  squeeze::cli::Args args(
      "convert", "convert HF_DIR OUT.gguf [--type T]",
      "Convert a Hugging Face checkpoint (config.json, model.safetensors or shards with their\n"
      "index, tokenizer.json, tokenizer_config.json) to GGUF with the keys, tensor names and\n"
      "layouts llama.cpp's converter writes. Architectures: " + squeeze::convert::supported_hf_archs() + ".\n"
      "Streams tensor by tensor; the output is written atomically and never replaces an input.");
  args.option({"--type"}, "T",
              "auto (BF16 for a BF16 checkpoint, else F16), F32, F16, BF16, Q8_0, ... or a quantize preset\n"
              "(Q4_K_M, ...); norms stay F32; rows a type's block does not divide fall back (reported)",
              "auto")
      .flag({"--quiet"}, "no progress bar")
      .reads_positional(0)    // the folder: none of its files may be replaced
      .writes_positional(1);
  if (!args.parse(argc, argv)) return 0;
  const std::string& dir = args.positional_at(0, "HF_DIR");
  const std::string& out = args.positional_at(1, "OUT.gguf");
  if (args.positional().size() > 2) squeeze::fail("unexpected extra argument '", args.positional()[2], "'");
  const auto r = squeeze::convert::convert_checkpoint(
      {.hf_dir = dir, .out_path = out, .type = args.get("--type"), .progress = !args.has("--quiet")});
  for (const auto& f : r.fallbacks) std::fprintf(stderr, "convert: %s\n", f.c_str());
  std::printf("%s: %s (%s), %zu tensors, %.1f MiB written to %s\n", r.plan.hf_arch.c_str(), std::string(squeeze::model::arch_name(r.plan.config.arch)).c_str(),
              r.type_name.c_str(), r.plan.tensors.size(), static_cast<double>(r.file_bytes) / (1 << 20), out.c_str());
  if (!r.plan.skipped.empty())
    std::printf("left out %zu checkpoint tensors (e.g. %s)\n", r.plan.skipped.size(), r.plan.skipped.front().c_str());
  return 0;
}

}  // namespace

SQZ_COMMAND("convert", "Hugging Face checkpoint (safetensors) → GGUF, as llama.cpp's converter writes it", run_convert);
