// fuzz/fuzz_safetensors.cpp — safetensors::File over arbitrary bytes: the 8-byte header
// length, the JSON header and the tensor table against the buffer. The reader maps a path,
// so each input is written to one temp file per process (rewritten in place each run).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "safetensors/reader.h"

using namespace squeeze;

namespace {

const std::string& temp_path() {
  static const std::string path = "/tmp/squeeze-fuzz-safetensors-" + std::to_string(getpid()) + ".safetensors";
  return path;
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size)) __builtin_trap();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_file(temp_path(), data, size);
  try {
    safetensors::File file(temp_path());
    uint32_t sum = 0;
    for (const safetensors::Tensor& t : file.tensors()) {
      if (file.find(t.name) != &t) __builtin_trap();
      (void)safetensors::dtype_name(t.dtype);
      // Checked at open: the span is the element count × dtype size, inside the file.
      if (t.data.size() != static_cast<size_t>(t.elements()) * safetensors::dtype_size(t.dtype)) __builtin_trap();
      if (!t.data.empty()) sum += t.data.front() + t.data.back();
    }
    for (const auto& [key, value] : file.metadata()) sum += static_cast<uint32_t>(key.size() + value.size());
    return static_cast<int>(sum & 0);
  } catch (const Error&) {
    return 0;
  }
}
