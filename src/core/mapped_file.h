// core/mapped_file.h — a read-only memory-mapped file (zero-copy access to model weights).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace squeeze {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps the whole file read-only. Throws squeeze::Error naming the path on failure
  // (missing, a directory, unreadable). An empty file maps to an empty span.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Hands back the resident pages wholly inside [p, p + n) (a range of this mapping): the
  // process stops counting them, and a later read faults them in again from the file.
  // For bytes whose copy the caller keeps elsewhere (repacked weights).
  void release_pages(const void* p, size_t n) const;

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// The whole file as a string (text inputs: prompts, templates, configs), read through the
// mapping so it gets the same one-line errors: missing, a directory, a FIFO, unreadable.
std::string read_whole_file(const std::string& path);

}  // namespace squeeze
