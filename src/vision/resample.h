// vision/resample.h — antialiased resizing of 8-bit RGB images, the way Pillow's
// ImagingResample does it (and torchvision's uint8 antialias path, which follows Pillow):
// separable, horizontal pass then vertical, each output sample a normalised filter window
// widened by the downscale factor, weights in fixed point with 22 fractional bits,
// rounded and clamped to 8 bits after each pass.
#pragma once

#include "vision/image.h"

namespace squeeze::vision {

enum class Resample { Bicubic, Lanczos };

const char* resample_name(Resample r);
Resample parse_resample(const std::string& name);  // "bicubic" | "lanczos"

// `img` stretched to width × height (no padding, no crop).
Image resize(const Image& img, int width, int height, Resample filter);

}  // namespace squeeze::vision
