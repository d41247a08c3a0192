// tools/cmd_image.cpp — `squeeze image FILE`: decodes an image and runs Muse Glimmer's
// preprocessing on it, printing the sizes and the token count (what an image costs before
// it reaches the encoder); --dump-patches writes the normalised patches for checks; with
// --mmproj the encoder runs too (time, image tokens/s, --dump-features).
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/file_identity.h"
#include "npy.h"
#include "vision/encoder.h"
#include "vision/image.h"
#include "vision/preprocess.h"

namespace {

int run_image(int argc, char** argv) {
  squeeze::cli::Args args("image", "squeeze image FILE [options]",
                          "Decode a PNG or JPEG image and preprocess it as Muse Glimmer's image processor does: "
                          "the grid of 28-pixel cells under the image-token cap, an antialiased stretch, "
                          "rescale and normalisation, 14-pixel patches.");
  args.int_option({"--max-image-tokens"}, "N", "image tokens (merged 2 x 2 patches) at most", {1, 16384}, "4096")
      .option({"--resample"}, "FILTER",
              "lanczos (what the reference computes with torchvision >= 0.27 on a CPU) or bicubic (its fallback)",
              "lanczos")
      .option({"--dump-patches"}, "OUT.npy", "write the normalised patches [patches, 3*14*14] as float32")
      .option({"--mmproj"}, "FILE", "a Muse Glimmer projector GGUF: run the vision encoder on the image")
      .option({"--dump-features"}, "OUT.npy", "with --mmproj: write the image-token embeddings [tokens, text width]")
      .threads_option();
  if (!args.parse(argc, argv)) return 0;
  const std::string& path = args.positional_at(0, "the image FILE");
  if (args.positional().size() > 1) squeeze::fail("unexpected extra argument '", args.positional()[1], "'");
  squeeze::vision::PreprocessOptions opt;
  opt.max_image_tokens = int(args.get_int("--max-image-tokens"));
  opt.resample = squeeze::vision::parse_resample(args.get("--resample"));
  if (args.has("--dump-features") && !args.has("--mmproj")) squeeze::fail("--dump-features needs --mmproj");
  std::vector<std::string> input_files{path};
  if (args.has("--mmproj")) input_files.push_back(args.get("--mmproj"));
  const squeeze::gguf::DeclaredInputs inputs(input_files);  // no dump replaces an input
  std::optional<squeeze::vision::VisionEncoder> encoder;  // loaded first: a bad projector fails before any work
  if (args.has("--mmproj")) encoder.emplace(squeeze::vision::VisionEncoder::load(args.get("--mmproj")));
  const squeeze::vision::Image img = squeeze::vision::read_image(path);
  const squeeze::vision::PixelPatches p = squeeze::vision::preprocess(img, opt);
  std::printf("%s: %d x %d -> %d x %d pixels (%s), %d x %d patches of %d, %lld image tokens\n", path.c_str(), img.width,
              img.height, p.grid_w * p.patch_size, p.grid_h * p.patch_size,
              squeeze::vision::resample_name(opt.resample), p.grid_w, p.grid_h, p.patch_size,
              static_cast<long long>(p.image_tokens(opt.merge_size)));
  if (args.has("--dump-patches"))
    squeeze::cli::write_npy(args.get("--dump-patches"), p.values.data(), p.patches(),
                            int64_t(3) * p.patch_size * p.patch_size);
  if (encoder) {
    squeeze::ThreadPool pool(int(args.get_int("--threads")));
    const auto t0 = std::chrono::steady_clock::now();
    const squeeze::vision::EncoderOutput out = encoder->encode(p, &pool);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("encoder: %lld image tokens x %lld in %.3f s (%.1f image tokens/s, %d threads)\n",
                static_cast<long long>(out.tokens), static_cast<long long>(encoder->config().text_width), s,
                double(out.tokens) / s, pool.size());
    if (args.has("--dump-features"))
      squeeze::cli::write_npy(args.get("--dump-features"), out.features.data(), out.tokens,
                              encoder->config().text_width);
  }
  return 0;
}

}  // namespace

SQZ_COMMAND("image", "decode an image and preprocess it for the vision encoder", run_image);
