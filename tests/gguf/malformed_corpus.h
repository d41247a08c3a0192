// tests/gguf/malformed_corpus.h — hand-encoded GGUF byte images for the reader's tests:
// a raw encoder independent of gguf::Writer (so it can write what the writer refuses
// to), a small valid base file, and one malformed variant per defect the reader must
// reject, each with the phrase its error message must contain.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace squeeze::gguf::testing {

struct RawKv {
  std::string key;
  uint32_t type = 0;
  std::vector<uint8_t> payload;         // the encoded value, after the type id
  std::optional<uint64_t> key_length;   // lie about the key length
};

struct RawTensor {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type = 0;
  uint64_t offset = 0;
  std::optional<uint64_t> name_length;  // lie about the name length
};

struct RawFile {
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors;  // default: tensors.size()
  std::optional<uint64_t> n_kv;       // default: kvs.size()
  std::vector<RawKv> kvs;
  std::vector<RawTensor> tensors;
  uint64_t alignment = 32;            // pads the header to the data section
  uint64_t data_bytes = 0;            // size of the data section (a byte pattern)
  std::optional<size_t> truncate_to;  // cut the encoded file here
};

std::vector<uint8_t> encode(const RawFile& f);

// Value payload helpers.
std::vector<uint8_t> le_u32(uint32_t x);
std::vector<uint8_t> le_u64(uint64_t x);
std::vector<uint8_t> raw_string(const std::string& s);
RawKv kv_u32(const std::string& key, uint32_t v);
RawKv kv_string(const std::string& key, const std::string& v);

// A valid file: a few metadata entries, an F32 [32, 2] tensor at 0 and a
// Q8_0 [64, 2] tensor at 256, data section sized exactly to the last tensor.
RawFile valid_base();

struct MalformedCase {
  std::string name;    // file-name friendly
  std::string expect;  // a phrase the error message must contain
  std::vector<uint8_t> bytes;
};

// One case per defect (bad magic, bad version, huge counts, bad strings, bad values,
// array nesting, alignment, tensor shape/type/offset/overlap problems, truncation).
std::vector<MalformedCase> malformed_corpus();

}  // namespace squeeze::gguf::testing
