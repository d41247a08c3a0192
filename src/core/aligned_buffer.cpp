// core/aligned_buffer.cpp
#include "core/aligned_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace squeeze {

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  SQZ_CHECK(rounded >= bytes, "allocation of ", bytes, " bytes overflows");
  // Large buffers (weights, KV caches, scratch) on 2 MiB boundaries and advised to use
  // transparent huge pages where the system allows it on request (THP "madvise" mode):
  // streaming hundreds of MiB through 4 KiB pages costs a page walk per 4 KiB.
  constexpr size_t kHuge = size_t{2} << 20;
  const bool huge = rounded >= 2 * kHuge;
  const size_t total = huge ? (rounded + kHuge - 1) / kHuge * kHuge : rounded;
  data_ = std::aligned_alloc(huge ? kHuge : kAlignment, total);
  SQZ_CHECK(data_ != nullptr, "out of memory allocating ", bytes, " bytes");
  if (huge) ::madvise(data_, total, MADV_HUGEPAGE);  // advice only: ignored where unsupported
  std::memset(data_, 0, total);
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
