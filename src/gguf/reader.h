// gguf/reader.h — gguf::File: a GGUF v3 file, memory-mapped and fully validated on open.
//
//   gguf::File f("model.gguf");
//   uint32_t n_layer = f.metadata().get_u32("llama.block_count");
//   const gguf::TensorInfo& w = f.tensor("blk.0.attn_q.weight");  // w.data: mapped bytes
//
// Opening checks everything a later access relies on (header, every metadata value,
// every tensor's type/shape/size/offset/alignment, no overlaps, all data inside the
// file), so tensor spans can be used without further checks. Any defect is a one-line
// squeeze::Error "<path>: <what>"; malformed input never reads out of bounds or aborts.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "gguf/file_identity.h"
#include "gguf/metadata.h"
#include "gguf/tensor_info.h"

namespace squeeze::gguf {

inline constexpr uint32_t kGgufVersion = 3;
inline constexpr int kMaxArrayDepth = 8;  // arrays of arrays nest at most this deep

class File {
 public:
  // Maps and validates the file at `path`.
  explicit File(const std::string& path);
  // Validates bytes the caller keeps alive (tests, fuzzing); `name` prefixes errors.
  static File parse(std::span<const uint8_t> bytes, std::string name);

  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }

  const Metadata& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // The tensor, or an error "<path>: no tensor named '<name>'".
  const TensorInfo& tensor(std::string_view name) const;
  // Releases the resident pages of a range of a mapped file's bytes (MappedFile::
  // release_pages); nothing for File::parse's borrowed bytes, which may not be a mapping.
  void release_pages(const void* p, size_t n) const {
    if (mapping_) mapping_->release_pages(p, n);
  }

 private:
  File() = default;
  void parse_all();

  std::unique_ptr<MappedFile> mapping_;  // null for File::parse (borrowed bytes)
  OpenFileRegistration registration_;
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  Metadata metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace squeeze::gguf
