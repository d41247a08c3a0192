// core/aligned_buffer.h — an owning, 64-byte aligned byte buffer (cache line / AVX-512 width).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace squeeze {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  // Zero-initialised storage of `bytes` bytes. Throws squeeze::Error when allocation fails.
  explicit AlignedBuffer(size_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t size() const { return size_; }
  template <typename T>
  T* as() { return static_cast<T*>(data_); }
  template <typename T>
  const T* as() const { return static_cast<const T*>(data_); }
  template <typename T>
  std::span<T> span() { return {as<T>(), size_ / sizeof(T)}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace squeeze
