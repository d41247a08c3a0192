// gguf/byte_cursor.h — bounds-checked little-endian reads over a byte span (reader
// internals). Every read checks the bytes left first, so a truncated or lying file
// becomes an Error ("truncated: ...") and never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "core/error.h"

namespace squeeze::gguf::detail {

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t pos() const { return pos_; }
  size_t size() const { return bytes_.size(); }
  size_t remaining() const { return bytes_.size() - pos_; }

  // Little-endian scalar (GGUF files we accept are little-endian; so is every host we
  // build for — see the static_assert in reader.cpp).
  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T x;
    std::memcpy(&x, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return x;
  }

  // A GGUF string: u64 length + bytes. The length is checked against the bytes left
  // before anything is allocated; the view points into the underlying bytes.
  std::string_view read_string(std::string_view what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > remaining())
      fail(what, " length ", len, " at offset ", pos_ - 8, " exceeds the ", remaining(), " bytes left in the file");
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

  std::span<const uint8_t> take(size_t n, std::string_view what) {
    need(n, what);
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  void need(size_t n, std::string_view what) const {
    if (n > remaining())
      fail("truncated: ", what, " needs ", n, " bytes at offset ", pos_, " but the file has ", bytes_.size(), " bytes");
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace squeeze::gguf::detail
