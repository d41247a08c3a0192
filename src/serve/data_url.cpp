// serve/data_url.cpp — see data_url.h.
#include "serve/data_url.h"

namespace squeeze::serve {

namespace {
int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
}  // namespace

std::optional<std::vector<uint8_t>> decode_base64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    for (size_t j = 0; j < 4; ++j) {
      const size_t at = i + j;
      const bool padding = at >= text.size() - pad;
      const int s = padding ? 0 : sextet(text[at]);
      if (s < 0) return std::nullopt;
      v = v << 6 | static_cast<uint32_t>(s);
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    out.push_back(static_cast<uint8_t>(v >> 8));
    out.push_back(static_cast<uint8_t>(v));
  }
  out.resize(out.size() - pad);
  return out;
}

std::optional<DataUrl> parse_data_url(std::string_view url, std::string* why) {
  constexpr std::string_view kScheme = "data:";
  if (url.substr(0, kScheme.size()) != kScheme) {
    *why = "only data: URLs are accepted (base64 images inline); this server fetches nothing";
    return std::nullopt;
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) {
    *why = "a data: URL without a ',' before its data";
    return std::nullopt;
  }
  std::string_view header = url.substr(kScheme.size(), comma - kScheme.size());
  constexpr std::string_view kBase64 = ";base64";
  if (header.size() < kBase64.size() || header.substr(header.size() - kBase64.size()) != kBase64) {
    *why = "a data: URL that is not base64 (expected data:image/...;base64,...)";
    return std::nullopt;
  }
  header.remove_suffix(kBase64.size());
  auto bytes = decode_base64(url.substr(comma + 1));
  if (!bytes) {
    *why = "a data: URL whose data is not valid base64";
    return std::nullopt;
  }
  return DataUrl{std::string(header.substr(0, header.find(';'))), std::move(*bytes)};
}

}  // namespace squeeze::serve
