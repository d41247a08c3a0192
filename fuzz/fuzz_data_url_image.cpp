// fuzz/fuzz_data_url_image.cpp — an image as a client sends it: a data: URL (base64),
// its declared size read from the header, and the PNG / JPEG decode. An input that is not
// a data URL is decoded as the image bytes themselves, so mutations reach libpng and
// libjpeg directly. Small ImageLimits: a bomb must be refused from its header, never
// allocated. Refusals must be squeeze::Errors.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "serve/data_url.h"
#include "vision/image.h"
#include "fuzz_input.h"

using namespace squeeze;

namespace {

void decode(const uint8_t* data, size_t size) {
  const vision::ImageLimits limits{.max_pixels = int64_t{1} << 16, .max_file_bytes = int64_t{1} << 20};
  (void)vision::declared_image_size(data, size);
  try {
    const vision::Image im = vision::decode_image(data, size, "fuzz", limits);
    const int64_t pixels = int64_t{im.width} * im.height;
    if (im.width <= 0 || im.height <= 0 || pixels > limits.max_pixels) __builtin_trap();
    if (im.rgb.size() != static_cast<size_t>(pixels) * 3) __builtin_trap();
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string why;
  const std::optional<serve::DataUrl> url = serve::parse_data_url(fuzz::as_text(data, size), &why);
  if (url) {
    decode(url->bytes.data(), url->bytes.size());
  } else {
    if (why.empty()) __builtin_trap();  // a refusal says why
    decode(data, size);
  }
  return 0;
}
