// tests/safetensors/st_test_util.h — safetensors bytes built by hand for the tests: an
// 8-byte little-endian header length (the real one unless `declared` says otherwise),
// the header text, the data.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace squeeze::safetensors {

inline std::string file_bytes(const std::string& header, const std::string& data, uint64_t declared = UINT64_MAX) {
  const uint64_t n = declared == UINT64_MAX ? header.size() : declared;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace squeeze::safetensors
