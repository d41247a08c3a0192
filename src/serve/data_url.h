// serve/data_url.h — the bytes of a `data:` URL (RFC 2397) with base64 content, as
// OpenAI clients send images inline (`data:image/png;base64,...`). Strict: the standard
// alphabet, padding only at the end, whitespace refused; the server fetches nothing, so
// any other URL is refused by the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace squeeze::serve {

// Base64 (RFC 4648 §4) to bytes; nullopt when `text` is not valid base64.
std::optional<std::vector<uint8_t>> decode_base64(std::string_view text);

struct DataUrl {
  std::string media_type;  // e.g. "image/png" ("" when the URL names none)
  std::vector<uint8_t> bytes;
};

// nullopt with `*why` set when `url` is not a base64 data URL.
std::optional<DataUrl> parse_data_url(std::string_view url, std::string* why);

}  // namespace squeeze::serve
