// tools/cmd_image.cpp — `squeeze image FILE`: decodes an image and runs Muse Glimmer's
// preprocessing on it, printing the sizes and the token count (what an image costs before
// it reaches the encoder); --dump-patches writes the normalised patches for checks.
#include <cstdio>
#include <string>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "gguf/file_identity.h"
#include "npy.h"
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
      .option({"--dump-patches"}, "OUT.npy", "write the normalised patches [patches, 3*14*14] as float32");
  if (!args.parse(argc, argv)) return 0;
  const std::string& path = args.positional_at(0, "the image FILE");
  if (args.positional().size() > 1) squeeze::fail("unexpected extra argument '", args.positional()[1], "'");
  squeeze::vision::PreprocessOptions opt;
  opt.max_image_tokens = int(args.get_int("--max-image-tokens"));
  opt.resample = squeeze::vision::parse_resample(args.get("--resample"));
  const squeeze::gguf::DeclaredInputs inputs({path});  // --dump-patches never replaces the image
  const squeeze::vision::Image img = squeeze::vision::read_image(path);
  const squeeze::vision::PixelPatches p = squeeze::vision::preprocess(img, opt);
  std::printf("%s: %d x %d -> %d x %d pixels (%s), %d x %d patches of %d, %lld image tokens\n", path.c_str(), img.width,
              img.height, p.grid_w * p.patch_size, p.grid_h * p.patch_size,
              squeeze::vision::resample_name(opt.resample), p.grid_w, p.grid_h, p.patch_size,
              static_cast<long long>(p.image_tokens(opt.merge_size)));
  if (args.has("--dump-patches"))
    squeeze::cli::write_npy(args.get("--dump-patches"), p.values.data(), p.patches(),
                            int64_t(3) * p.patch_size * p.patch_size);
  return 0;
}

}  // namespace

SQZ_COMMAND("image", "decode an image and preprocess it for the vision encoder", run_image);
