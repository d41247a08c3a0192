// vision/image.h — an image file in: PNG or JPEG (told by its first bytes, not its name),
// decoded by libpng / libjpeg-turbo into 8-bit RGB.
//
// Colour as the reference's convert_to_rgb leaves it: grey replicated, palettes expanded,
// and an image with alpha (or a PNG transparency chunk) composited over white as PIL's
// alpha_composite does; 16-bit samples keep their high byte. EXIF orientation is not
// applied (the reference does not either, given a decoded image).
//
// Bad input is an Error naming the file: unknown format, truncated or corrupt data, and
// images past the limits — the pixel count is checked from the header, before anything
// is decoded, so a small file declaring a huge image (a decompression bomb) costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace squeeze::vision {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3]
  uint8_t at(int y, int x, int c) const { return rgb[(size_t(y) * size_t(width) + size_t(x)) * 3 + size_t(c)]; }
};

struct ImageLimits {
  int64_t max_pixels = int64_t(1) << 26;  // 67M: a 8192 × 8192 image, 192 MiB of RGB
  int64_t max_file_bytes = int64_t(256) << 20;
};

// The size a PNG (its IHDR) or JPEG (its first frame header) declares, read without
// decoding anything; nullopt when the bytes hold neither. What an image will cost (its
// pixels, its tokens) can be refused from this before decode_image spends on it.
struct ImageSize {
  int64_t width = 0, height = 0;
};
std::optional<ImageSize> declared_image_size(const uint8_t* data, size_t size);

// `name` only labels errors.
Image decode_image(const uint8_t* data, size_t size, const std::string& name, const ImageLimits& limits = {});
Image read_image(const std::string& path, const ImageLimits& limits = {});
// The file's bytes, refused past limits.max_file_bytes (what read_image decodes).
std::vector<uint8_t> read_image_bytes(const std::string& path, const ImageLimits& limits = {});

}  // namespace squeeze::vision
