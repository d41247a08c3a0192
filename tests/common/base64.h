// tests/common/base64.h — the textbook base64 encoder (RFC 4648 §4, with padding), written
// independently of serve/data_url.cpp's decoder: what test clients send as data: URLs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace squeeze::testing {

inline std::string base64_encode(const std::vector<uint8_t>& b) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < b.size(); i += 3) {
    uint32_t v = uint32_t(b[i]) << 16;
    if (i + 1 < b.size()) v |= uint32_t(b[i + 1]) << 8;
    if (i + 2 < b.size()) v |= b[i + 2];
    out += k[v >> 18 & 63];
    out += k[v >> 12 & 63];
    out += i + 1 < b.size() ? k[v >> 6 & 63] : '=';
    out += i + 2 < b.size() ? k[v & 63] : '=';
  }
  return out;
}

}  // namespace squeeze::testing
