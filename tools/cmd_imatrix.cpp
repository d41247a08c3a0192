// tools/cmd_imatrix.cpp — `squeeze imatrix`: collect an importance matrix over
// calibration text (GGUF, llama.cpp's layout), or merge existing ones.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/file_identity.h"
#include "model/model.h"
#include "quant/imatrix.h"
#include "quantize/imatrix_collect.h"

namespace {

int run_imatrix(int argc, char** argv) {
  squeeze::cli::Args args("imatrix", "imatrix -m MODEL.gguf -f TEXT.txt -o IMATRIX.gguf [options]",
                          "Run a model over calibration text and save, for every weight matrix, the per-column sums of\n"
                          "squared inputs and their counts (llama.cpp's GGUF imatrix layout). `squeeze quantize --imatrix`\n"
                          "uses their means as importance. --merge adds existing imatrix files in (or only merges them\n"
                          "when no -m is given).");
  args.option({"-m", "--model"}, "FILE", "GGUF model")
      .option({"-f", "--file"}, "TEXT", "calibration text file")
      .option({"-o", "--output"}, "FILE", "output imatrix GGUF")
      .int_option({"--chunk"}, "N", "tokens per chunk (each a fresh context)", {2, squeeze::cli::kMaxTokens}, "512")
      .int_option({"--chunks"}, "N", "most chunks to process (0: all)", {0, squeeze::cli::kMaxTokens}, "0")
      .int_option({"--batch"}, "N", "prefill batch size", {1, squeeze::cli::kMaxBatch}, "64")
      .option({"--merge"}, "FILE", "an imatrix file to add in (repeatable)")
      .threads_option();
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty()) squeeze::fail("unexpected argument '", args.positional()[0], "'");
  squeeze::set_default_thread_count(args.get_int32("--threads"));
  const std::string out = args.get("--output");
  SQZ_CHECK(!out.empty(), "missing -o IMATRIX.gguf");
  std::vector<std::string> declared = args.get_all("--merge");
  declared.insert(declared.end(), {args.get("--model"), args.get("--file")});
  const squeeze::gguf::DeclaredInputs declared_inputs(declared);
  squeeze::gguf::check_output_path(out);  // before the collection, not after

  squeeze::quant::ImportanceMatrix im;
  std::vector<std::string> inputs;
  if (args.has("--model")) {
    SQZ_CHECK(args.has("--file"), "missing -f TEXT.txt (calibration text)");
    const std::string text_path = args.get("--file");
    std::ifstream f(text_path, std::ios::binary);
    SQZ_CHECK(f.good(), text_path, ": cannot open the calibration text");
    std::stringstream text;
    text << f.rdbuf();
    const auto model = squeeze::model::Model::load(args.get("--model"));
    const auto tokens = model->tokenizer().encode(text.str());
    squeeze::quantize::CollectStats stats;
    im = squeeze::quantize::collect_imatrix(*model, tokens,
                                            {.chunk = args.get_int("--chunk"), .max_chunks = args.get_int("--chunks"),
                                             .batch = args.get_int("--batch")},
                                            &stats);
    im.datasets = {text_path};
    inputs = {args.get("--model"), text_path};
    std::printf("collected %zu matrices over %lld chunks (%lld tokens of %zu in the text); perplexity %.4f\n", im.size(),
                static_cast<long long>(stats.chunks), static_cast<long long>(stats.tokens), tokens.size(), stats.perplexity);
  } else {
    SQZ_CHECK(args.has("--merge"), "missing -m MODEL.gguf (or --merge FILE to merge imatrix files)");
  }
  for (const auto& path : args.get_all("--merge")) {
    im.merge(squeeze::quant::ImportanceMatrix::load(path));
    inputs.push_back(path);
  }
  im.save(out, inputs);
  std::printf("wrote %s: %zu entries, %lld chunks\n", out.c_str(), im.size(), static_cast<long long>(im.chunk_count));
  return 0;
}

}  // namespace

SQZ_COMMAND("imatrix", "collect an importance matrix over calibration text (or merge imatrix files)", run_imatrix);
