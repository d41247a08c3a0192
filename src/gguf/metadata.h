// gguf/metadata.h — the ordered key→value store of a GGUF file, with typed getters.
//
// The reader fills one per file; the writer takes one. Getters throw a one-line
// squeeze::Error naming the source file and the key when it is missing or has the
// wrong type:  "m.gguf: metadata key 'llama.block_count' is missing".
// Integer getters accept any integer value type whose value fits the requested type
// (files in the wild store e.g. token ids as u32 or i32, alignment as u32 or u64);
// float getters accept f32 and f64.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/value.h"

namespace squeeze::gguf {

struct KeyValue {
  std::string key;
  Value value;
};

class Metadata {
 public:
  Metadata() = default;
  // `source` (usually the file path) prefixes every error message.
  explicit Metadata(std::string source) : source_(std::move(source)) {}

  // Insertion-ordered entries (the order they are written / were read).
  const std::vector<KeyValue>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }

  bool has(std::string_view key) const { return find(key) != nullptr; }
  const Value* find(std::string_view key) const;
  // The value, or an error naming the key.
  const Value& at(std::string_view key) const;

  // Sets (replacing an existing key in place, keeping its position) or appends.
  void set(std::string_view key, Value value);
  // Appends; throws if the key exists (the reader's duplicate check).
  void add(std::string_view key, Value value);
  bool erase(std::string_view key);

  // --- typed getters: throw when missing or of the wrong type / out of range -----
  uint8_t get_u8(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  int32_t get_i32(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  float get_f32(std::string_view key) const;
  double get_f64(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  const Array& get_array(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<int64_t> get_i64_array(std::string_view key) const;  // any integer elements
  std::vector<int32_t> get_i32_array(std::string_view key) const;  // any integer elements that fit
  std::vector<uint32_t> get_u32_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;    // f32 or f64 elements
  std::vector<bool> get_bool_array(std::string_view key) const;

  // --- optional variants: nullopt when missing, still an error on a wrong type -----
  std::optional<uint32_t> get_u32_opt(std::string_view key) const;
  std::optional<int32_t> get_i32_opt(std::string_view key) const;
  std::optional<uint64_t> get_u64_opt(std::string_view key) const;
  std::optional<int64_t> get_i64_opt(std::string_view key) const;
  std::optional<float> get_f32_opt(std::string_view key) const;
  std::optional<double> get_f64_opt(std::string_view key) const;
  std::optional<bool> get_bool_opt(std::string_view key) const;
  std::optional<std::string> get_string_opt(std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array_opt(std::string_view key) const;
  std::optional<std::vector<float>> get_f32_array_opt(std::string_view key) const;
  std::optional<std::vector<int32_t>> get_i32_array_opt(std::string_view key) const;

  // Defaults for absent keys: get_u32_or("llama.attention.head_count_kv", n_head).
  uint32_t get_u32_or(std::string_view key, uint32_t fallback) const { return get_u32_opt(key).value_or(fallback); }
  int64_t get_i64_or(std::string_view key, int64_t fallback) const { return get_i64_opt(key).value_or(fallback); }
  float get_f32_or(std::string_view key, float fallback) const { return get_f32_opt(key).value_or(fallback); }
  bool get_bool_or(std::string_view key, bool fallback) const { return get_bool_opt(key).value_or(fallback); }
  std::string get_string_or(std::string_view key, std::string fallback) const {
    return get_string_opt(key).value_or(std::move(fallback));
  }

  // "<source>: metadata key '<key>' <problem>" as an Error (for callers' own checks).
  [[noreturn]] void fail_key(std::string_view key, std::string_view problem) const;

 private:
  std::string source_;
  std::vector<KeyValue> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace squeeze::gguf
