// tests/gguf/gguf_test_util.h — helpers shared by the GGUF tests: scratch directories,
// whole-file reads, and a sample file that uses every metadata type and tensor type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace squeeze::gguf::testing {

// A fresh directory under the test temp dir, removed (with its files) on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> list() const;  // file names inside, sorted

 private:
  std::string path_;
};

std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

// Metadata with every value type: each scalar type (with extreme values), strings
// (empty, UTF-8, embedded NUL), arrays of each type (empty ones too), nested arrays.
Metadata sample_metadata();

struct SampleTensor {
  TensorSpec spec;
  std::vector<uint8_t> bytes;  // deterministic pseudo-random content
};
// One tensor per type in ggml_type.h (2–4 dims, rows a multiple of the block size),
// seeded so that the content is reproducible.
std::vector<SampleTensor> sample_tensors(uint32_t seed);

}  // namespace squeeze::gguf::testing
