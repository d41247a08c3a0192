// vision/preprocess.h — Muse Glimmer's image preprocessing (the reference: transformers'
// MuseGlimmerImageProcessor): the grid in 28-pixel cells (patch 14 × merge 2) closest to the
// image's aspect ratio under the image-token cap (smart_resize), a stretch to it, rescale by
// 1/255, normalisation with mean 0.5 and std 0.5, and 14 × 14 patches in row-major grid order.
//
// The reference's (torchvision) backend resizes with antialiased Lanczos when torchvision
// >= 0.27 runs it on the CPU, and falls back to antialiased bicubic otherwise (older
// torchvision, CUDA): Lanczos is the default, bicubic an option.
//
// smart_resize breaks ties between equally good grids as the reference does: it takes the
// first of its candidates in the iteration order of the Python set holding them (CPython
// 3.8+'s tuple hash and set probing; ties are common, e.g. (35, 35) against (36, 36) for a
// square image under a cap of 4096 cells), so the grid, and the token count, match.
#pragma once

#include <cstdint>
#include <vector>

#include "vision/image.h"
#include "vision/resample.h"

namespace squeeze::vision {

struct PreprocessOptions {
  int patch_size = 14;
  int merge_size = 2;
  int max_image_tokens = 4096;  // merged tokens (cells of patch × merge pixels)
  Resample resample = Resample::Lanczos;
  float mean = 0.5f, std = 0.5f;
};

// Target (height, width) in pixels: multiples of `cell`, at most `max_cells` cells.
struct GridSize {
  int height = 0, width = 0;
};
GridSize smart_resize(int height, int width, int cell, int max_cells);

struct PixelPatches {
  int grid_h = 0, grid_w = 0;  // in patches
  int patch_size = 0;
  // [grid_h · grid_w, 3 · patch · patch]: per patch, channel-major then row, column. The
  // reference repeats each patch for its two temporal slabs; for a still image they are
  // equal, so one is kept (the encoder sums the two slabs of its patch embedding).
  std::vector<float> values;
  int64_t patches() const { return int64_t(grid_h) * grid_w; }
  int64_t image_tokens(int merge) const { return patches() / (int64_t(merge) * merge); }
};

PixelPatches preprocess(const Image& img, const PreprocessOptions& opt = {});

}  // namespace squeeze::vision
