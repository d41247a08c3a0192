// core/aligned_buffer.cpp
#include "core/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace squeeze {

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  SQZ_CHECK(rounded >= bytes, "allocation of ", bytes, " bytes overflows");
  data_ = std::aligned_alloc(kAlignment, rounded);
  SQZ_CHECK(data_ != nullptr, "out of memory allocating ", bytes, " bytes");
  std::memset(data_, 0, rounded);
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace squeeze
