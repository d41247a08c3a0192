// fuzz/fuzz_input.h — taking one libFuzzer input apart: the bytes as text, a split into
// two parts at the first NUL (so a mutation inside one part never moves the boundary, as
// a length prefix would), and a reproducible stream of small numbers (chunk sizes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace squeeze::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// (before the first NUL, after it); no NUL: (everything, "").
inline std::pair<std::string_view, std::string_view> split_at_nul(std::string_view text) {
  const size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return {text, {}};
  return {text.substr(0, nul), text.substr(nul + 1)};
}

// Numbers in [1, max] from a seed (an LCG): the same input always splits the same way,
// so a crash reproduces from its file alone.
class Chunks {
 public:
  explicit Chunks(uint32_t seed) : state_(seed * 2654435761u + 1) {}
  size_t next(size_t max) {
    state_ = state_ * 1664525u + 1013904223u;
    return 1 + (state_ >> 8) % max;
  }

 private:
  uint32_t state_;
};

}  // namespace squeeze::fuzz
