// fuzz/fuzz_gguf.cpp — gguf::File::parse over arbitrary bytes, then every accessor a
// loader uses afterwards: metadata values (typed getters, display, JSON), the tensor
// table and each tensor's bytes. A malformed file must be a squeeze::Error.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "gguf/json.h"
#include "gguf/reader.h"

using namespace squeeze;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<gguf::File> file;
  try {
    file.emplace(gguf::File::parse(std::span<const uint8_t>(data, size), "fuzz.gguf"));
  } catch (const Error&) {
    return 0;
  }
  const gguf::Metadata& m = file->metadata();
  for (const gguf::KeyValue& kv : m.entries()) {
    (void)kv.value.to_display();
    (void)kv.value.as_i64();
    (void)kv.value.as_u64();
    (void)kv.value.as_f64();
    // The typed getters throw squeeze::Error on a type mismatch, never anything else.
    try {
      (void)m.get_string_array_opt(kv.key);
      (void)m.get_f32_array_opt(kv.key);
      (void)m.get_i32_array_opt(kv.key);
      (void)m.get_string_opt(kv.key);
      (void)m.get_u32_opt(kv.key);
      (void)m.get_f32_opt(kv.key);
    } catch (const Error&) {
    }
  }
  // The whole summary `squeeze inspect --json` prints (strings may hold invalid UTF-8).
  (void)gguf::file_to_json(*file).dump(-1, ' ', false, gguf::Json::error_handler_t::replace);
  uint32_t sum = 0;
  for (const gguf::TensorInfo& t : file->tensors()) {
    (void)t.shape_string();
    if (file->find_tensor(t.name) == nullptr) __builtin_trap();
    // Validated spans: touching their ends must stay inside the input (ASan checks).
    if (!t.data.empty()) sum += t.data.front() + t.data.back();
    if (t.n_rows() > 0) {
      const auto row = t.row(t.n_rows() - 1);
      if (!row.empty()) sum += row.back();
    }
  }
  return static_cast<int>(sum & 0);
}
