// vision/image.cpp — see image.h. libpng and libjpeg report errors by longjmp: each
// decoder keeps only plain C state between its setjmp and the calls that may jump, and
// turns a jump into one Error after it.
#include "vision/image.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <jpeglib.h>
#include <png.h>

#include "core/error.h"

namespace squeeze::vision {
namespace {

void check_size(int64_t w, int64_t h, const std::string& name, const ImageLimits& limits) {
  SQZ_CHECK(w > 0 && h > 0, name, ": image of ", w, " x ", h, " pixels");
  // Divided, not multiplied: a PNG header's raw 32-bit dimensions (2^32 - 1 each) overflow
  // an int64 product, which would wrap negative and pass.
  SQZ_CHECK(w <= limits.max_pixels / h, name, ": image of ", w, " x ", h, " pixels exceeds the limit of ",
            limits.max_pixels, " pixels");
}

// ---- PNG ----------------------------------------------------------------------------------

struct PngSource {
  const uint8_t* data;
  size_t size, pos;
  char message[200];
};

void png_read_from_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "truncated data");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

void png_on_error(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof src->message, "%s", msg);
  png_longjmp(png, 1);
}
void png_on_warning(png_structp, png_const_charp) {}

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

// Over a white background, as PIL's alpha_composite onto an opaque white image (what the
// reference's convert_to_rgb does with any image that has alpha): 8-bit fixed point with
// 7 fractional bits and its rounded division by 255.
uint8_t over_white(uint32_t v, uint32_t a) {
  if (a == 0) return 255;
  const uint32_t coef1 = a * 128, coef2 = 255 * 128 - coef1;
  const uint32_t t = v * coef1 + 255 * coef2 + (0x80 << 7);
  return uint8_t((((t >> 8) + t) >> 8) >> 7);
}

Image decode_png(const uint8_t* data, size_t size, const std::string& name, const ImageLimits& limits) {
  // The size, from the IHDR chunk that must come first, before libpng allocates anything.
  if (size >= 24 && std::memcmp(data + 12, "IHDR", 4) == 0) check_size(be32(data + 16), be32(data + 20), name, limits);
  PngSource src{data, size, 0, {}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
  SQZ_CHECK(png != nullptr, name, ": cannot start the PNG decoder");
  png_infop info = png_create_info_struct(png);
  Image img;
  png_uint_32 w = 0, h = 0;
  bool too_large = false;
  std::vector<png_bytep> rows;
  std::vector<uint8_t> rgba;
  if (setjmp(png_jmpbuf(png)) == 0) {
    png_set_read_fn(png, &src, png_read_from_memory);
    // Bombs: the header's size is checked before any pixel is inflated; libpng's own
    // limits bound what ancillary chunks may allocate.
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_set_chunk_malloc_max(png, 8u << 20);
    png_read_info(png, info);
    w = png_get_image_width(png, info);
    h = png_get_image_height(png, info);
    too_large = int64_t(w) * int64_t(h) > limits.max_pixels;
    if (!too_large) {
      // Everything to 8-bit RGBA (transparency chunks become alpha), composited below.
      const int color = png_get_color_type(png, info);
      if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
      if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
      if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
        png_set_expand_gray_1_2_4_to_8(png);
        png_set_gray_to_rgb(png);
      }
      if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
      if (!(color & PNG_COLOR_MASK_ALPHA) && !png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
      png_set_packing(png);
      png_set_interlace_handling(png);
      png_read_update_info(png, info);
      if (png_get_rowbytes(png, info) != size_t(w) * 4) png_error(png, "unexpected row layout after conversion");
      rgba.resize(size_t(w) * size_t(h) * 4);
      rows.resize(h);
      for (png_uint_32 y = 0; y < h; ++y) rows[y] = rgba.data() + size_t(y) * size_t(w) * 4;
      png_read_image(png, rows.data());
      png_read_end(png, nullptr);
    }
  } else {
    png_destroy_read_struct(&png, &info, nullptr);
    fail(name, ": corrupt PNG (", src.message, ")");
  }
  png_destroy_read_struct(&png, &info, nullptr);
  check_size(int64_t(w), int64_t(h), name, limits);
  img.width = int(w);
  img.height = int(h);
  img.rgb.resize(size_t(w) * size_t(h) * 3);
  for (size_t i = 0, n = size_t(w) * size_t(h); i < n; ++i)
    for (int c = 0; c < 3; ++c) {
      const uint8_t a = rgba[i * 4 + 3];
      img.rgb[i * 3 + size_t(c)] = a == 255 ? rgba[i * 4 + size_t(c)] : over_white(rgba[i * 4 + size_t(c)], a);
    }
  return img;
}

// ---- JPEG ---------------------------------------------------------------------------------

struct JpegErrors {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}
// Warnings (level −1) mean corrupt data that libjpeg patched over (a truncated file is
// completed with grey): kept, and turned into an error after decoding.
void jpeg_on_emit(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  if (e->mgr.num_warnings++ == 0) (*cinfo->err->format_message)(cinfo, e->message);
}

Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name, const ImageLimits& limits) {
  jpeg_decompress_struct cinfo;
  JpegErrors err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.emit_message = jpeg_on_emit;
  err.message[0] = 0;
  Image img;
  int64_t w = 0, h = 0;
  bool too_large = false, cmyk = false;
  if (setjmp(err.jump) == 0) {
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
    jpeg_read_header(&cinfo, TRUE);
    w = cinfo.image_width;
    h = cinfo.image_height;
    too_large = w * h > limits.max_pixels;
    cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    if (!too_large && !cmyk) {
      cinfo.out_color_space = JCS_RGB;
      jpeg_start_decompress(&cinfo);
      img.width = int(w);
      img.height = int(h);
      img.rgb.resize(size_t(w) * size_t(h) * 3);
      while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = img.rgb.data() + size_t(cinfo.output_scanline) * size_t(w) * 3;
        jpeg_read_scanlines(&cinfo, &row, 1);
      }
      jpeg_finish_decompress(&cinfo);
    }
  } else {
    jpeg_destroy_decompress(&cinfo);
    fail(name, ": corrupt JPEG (", err.message, ")");
  }
  const long warnings = err.mgr.num_warnings;
  jpeg_destroy_decompress(&cinfo);
  check_size(w, h, name, limits);
  SQZ_CHECK(!cmyk, name, ": CMYK JPEG images are not supported (convert it to RGB)");
  SQZ_CHECK(warnings == 0, name, ": corrupt JPEG (", err.message, ")");
  return img;
}

}  // namespace

std::optional<ImageSize> declared_image_size(const uint8_t* data, size_t size) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 24 && std::memcmp(data, kPng, 8) == 0 && std::memcmp(data + 12, "IHDR", 4) == 0)
    return ImageSize{be32(data + 16), be32(data + 20)};
  if (size < 4 || data[0] != 0xff || data[1] != 0xd8) return std::nullopt;
  const auto be16 = [&](size_t at) { return int64_t(data[at]) << 8 | data[at + 1]; };
  // JPEG: walk the marker segments to the first start-of-frame (SOF0..SOF15 but DHT C4,
  // JPG C8 and DAC CC), whose payload is precision, height, width.
  size_t at = 2;
  while (at + 4 <= size) {
    if (data[at] != 0xff) return std::nullopt;
    const uint8_t marker = data[at + 1];
    if (marker == 0xff) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {  // no payload
      at += 2;
      continue;
    }
    const int64_t length = be16(at + 2);
    if (marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc) {
      if (at + 9 > size || length < 7) return std::nullopt;
      return ImageSize{be16(at + 7), be16(at + 5)};
    }
    if (marker == 0xda || marker == 0xd9 || length < 2) return std::nullopt;  // scan data before any frame
    at += 2 + static_cast<size_t>(length);
  }
  return std::nullopt;
}

Image decode_image(const uint8_t* data, size_t size, const std::string& name, const ImageLimits& limits) {
  SQZ_CHECK(int64_t(size) <= limits.max_file_bytes, name, ": ", size, " bytes exceeds the limit of ",
            limits.max_file_bytes, " bytes for an image file");
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return decode_png(data, size, name, limits);
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return decode_jpeg(data, size, name, limits);
  fail(name, ": not a PNG or JPEG image");
}

std::vector<uint8_t> read_image_bytes(const std::string& path, const ImageLimits& limits) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  SQZ_CHECK(in, path, ": cannot open the image");
  const std::streamoff n = in.tellg();
  SQZ_CHECK(n >= 0, path, ": cannot read the image");
  SQZ_CHECK(int64_t(n) <= limits.max_file_bytes, path, ": ", int64_t(n), " bytes exceeds the limit of ",
            limits.max_file_bytes, " bytes for an image file");
  std::vector<uint8_t> bytes(static_cast<size_t>(n));
  in.seekg(0);
  SQZ_CHECK(in.read(reinterpret_cast<char*>(bytes.data()), n), path, ": cannot read the image");
  return bytes;
}

Image read_image(const std::string& path, const ImageLimits& limits) {
  const std::vector<uint8_t> bytes = read_image_bytes(path, limits);
  return decode_image(bytes.data(), bytes.size(), path, limits);
}

}  // namespace squeeze::vision
