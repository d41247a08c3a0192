// safetensors/reader.h — a strict reader of Hugging Face's safetensors files (the
// checkpoints `squeeze convert` starts from), memory-mapped, zero-copy.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON (an object; may end
// in spaces), then the data buffer. Each JSON entry but "__metadata__" (a string → string
// object) is a tensor: {"dtype": D, "shape": [d0, ...], "data_offsets": [begin, end]},
// offsets relative to the buffer. Checked as strictly as the GGUF reader checks its
// files: the header's size and nesting, exactly these keys with these types, known
// dtypes, no duplicate or empty names, end − begin = the shape's element count × the
// dtype's size (no overflow), and tensors that tile the buffer exactly (no gap, no
// overlap, nothing after). Every error is one line naming the file (and the tensor).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"

namespace squeeze::safetensors {

enum class Dtype : uint8_t { BOOL, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64, F8_E4M3, F8_E5M2 };

const char* dtype_name(Dtype d);
size_t dtype_size(Dtype d);
std::optional<Dtype> dtype_from_name(std::string_view name);

struct Tensor {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;   // byte offsets in the data buffer
  std::span<const uint8_t> data;  // the mapped bytes (end − begin of them)
  int64_t elements() const;
};

class File {
 public:
  // Largest header accepted (the format's reference implementation refuses more).
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  explicit File(const std::string& path);

  const std::string& path() const { return file_.path(); }
  // In the header's order.
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const Tensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t header_bytes() const { return header_bytes_; }

 private:
  MappedFile file_;
  uint64_t header_bytes_ = 0;
  std::vector<Tensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name → position in tensors_
  std::map<std::string, std::string> metadata_;
};

}  // namespace squeeze::safetensors
