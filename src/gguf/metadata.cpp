// gguf/metadata.cpp — ordered metadata store and its typed getters.
#include "gguf/metadata.h"

#include <limits>

#include "core/error.h"

namespace squeeze::gguf {
namespace {

// Integer `v` converted to T, or nullopt when v is not an integer or does not fit.
template <typename T>
std::optional<T> int_as(const Value& v) {
  if constexpr (std::is_signed_v<T>) {
    const auto x = v.as_i64();
    if (!x || *x < std::numeric_limits<T>::min() || *x > std::numeric_limits<T>::max()) return std::nullopt;
    return static_cast<T>(*x);
  } else {
    const auto x = v.as_u64();
    if (!x || *x > std::numeric_limits<T>::max()) return std::nullopt;
    return static_cast<T>(*x);
  }
}

template <typename T>
constexpr std::string_view wanted_int_name() {
  if constexpr (std::is_same_v<T, uint8_t>) return "an integer in u8 range";
  if constexpr (std::is_same_v<T, uint32_t>) return "an integer in u32 range";
  if constexpr (std::is_same_v<T, int32_t>) return "an integer in i32 range";
  if constexpr (std::is_same_v<T, uint64_t>) return "a non-negative integer";
  if constexpr (std::is_same_v<T, int64_t>) return "an integer in i64 range";
}

}  // namespace

const Value* Metadata::find(std::string_view key) const {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &entries_[it->second].value;
}

const Value& Metadata::at(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) fail_key(key, "is missing");
  return *v;
}

void Metadata::set(std::string_view key, Value value) {
  auto it = index_.find(std::string(key));
  if (it != index_.end()) {
    entries_[it->second].value = std::move(value);
    return;
  }
  index_.emplace(std::string(key), entries_.size());
  entries_.push_back({std::string(key), std::move(value)});
}

void Metadata::add(std::string_view key, Value value) {
  if (has(key)) fail_key(key, "appears twice (duplicate key)");
  set(key, std::move(value));
}

bool Metadata::erase(std::string_view key) {
  auto it = index_.find(std::string(key));
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].key, i);
  return true;
}

void Metadata::fail_key(std::string_view key, std::string_view problem) const {
  if (source_.empty()) fail("metadata key '", key, "' ", problem);
  fail(source_, ": metadata key '", key, "' ", problem);
}

// One template per kind of getter keeps every message in the same shape.
namespace {
template <typename T>
T int_or_fail(const Metadata& md, std::string_view key, const Value& v) {
  if (auto x = int_as<T>(v)) return *x;
  if (is_integer_type(v.type()))
    md.fail_key(key, std::string("has value ") + v.to_display() + ", expected " + std::string(wanted_int_name<T>()));
  md.fail_key(key, std::string("has type ") + std::string(value_type_name(v.type())) + ", expected " +
                       std::string(wanted_int_name<T>()));
}

double float_or_fail(const Metadata& md, std::string_view key, const Value& v) {
  if (auto x = v.as_f64()) return *x;
  md.fail_key(key, std::string("has type ") + std::string(value_type_name(v.type())) + ", expected f32 or f64");
}

const Array& array_or_fail(const Metadata& md, std::string_view key, const Value& v) {
  if (const Array* a = v.array_if()) return *a;
  md.fail_key(key, std::string("has type ") + std::string(value_type_name(v.type())) + ", expected an array");
}

// Converts each array item with `conv`, naming the first bad item.
template <typename T, typename Conv>
std::vector<T> convert_array(const Metadata& md, std::string_view key, std::string_view wanted, Conv conv) {
  const Array& a = array_or_fail(md, key, md.at(key));
  std::vector<T> out;
  out.reserve(a.items.size());
  for (size_t i = 0; i < a.items.size(); ++i) {
    auto x = conv(a.items[i]);
    if (!x)
      md.fail_key(key, "is an array of " + std::string(value_type_name(a.element_type)) + " whose item " +
                           std::to_string(i) + " (" + a.items[i].to_display() + ") is not " + std::string(wanted));
    out.push_back(static_cast<T>(*x));
  }
  return out;
}
}  // namespace

uint8_t Metadata::get_u8(std::string_view key) const { return int_or_fail<uint8_t>(*this, key, at(key)); }
uint32_t Metadata::get_u32(std::string_view key) const { return int_or_fail<uint32_t>(*this, key, at(key)); }
int32_t Metadata::get_i32(std::string_view key) const { return int_or_fail<int32_t>(*this, key, at(key)); }
uint64_t Metadata::get_u64(std::string_view key) const { return int_or_fail<uint64_t>(*this, key, at(key)); }
int64_t Metadata::get_i64(std::string_view key) const { return int_or_fail<int64_t>(*this, key, at(key)); }
float Metadata::get_f32(std::string_view key) const { return static_cast<float>(float_or_fail(*this, key, at(key))); }
double Metadata::get_f64(std::string_view key) const { return float_or_fail(*this, key, at(key)); }

bool Metadata::get_bool(std::string_view key) const {
  const Value& v = at(key);
  if (const bool* b = v.get_if<bool>()) return *b;
  fail_key(key, std::string("has type ") + std::string(value_type_name(v.type())) + ", expected bool");
}

const std::string& Metadata::get_string(std::string_view key) const {
  const Value& v = at(key);
  if (const std::string* s = v.string_if()) return *s;
  fail_key(key, std::string("has type ") + std::string(value_type_name(v.type())) + ", expected string");
}

const Array& Metadata::get_array(std::string_view key) const { return array_or_fail(*this, key, at(key)); }

std::vector<std::string> Metadata::get_string_array(std::string_view key) const {
  return convert_array<std::string>(*this, key, "a string", [](const Value& v) -> std::optional<std::string> {
    if (const auto* s = v.string_if()) return *s;
    return std::nullopt;
  });
}
std::vector<int64_t> Metadata::get_i64_array(std::string_view key) const {
  return convert_array<int64_t>(*this, key, "an integer in i64 range", [](const Value& v) { return v.as_i64(); });
}
std::vector<int32_t> Metadata::get_i32_array(std::string_view key) const {
  return convert_array<int32_t>(*this, key, "an integer in i32 range", [](const Value& v) { return int_as<int32_t>(v); });
}
std::vector<uint32_t> Metadata::get_u32_array(std::string_view key) const {
  return convert_array<uint32_t>(*this, key, "an integer in u32 range", [](const Value& v) { return int_as<uint32_t>(v); });
}
std::vector<float> Metadata::get_f32_array(std::string_view key) const {
  return convert_array<float>(*this, key, "f32 or f64", [](const Value& v) { return v.as_f64(); });
}
std::vector<bool> Metadata::get_bool_array(std::string_view key) const {
  return convert_array<bool>(*this, key, "a bool", [](const Value& v) -> std::optional<bool> {
    if (const bool* b = v.get_if<bool>()) return *b;
    return std::nullopt;
  });
}

#define SQZ_OPT(T, name)                                                      \
  std::optional<T> Metadata::name##_opt(std::string_view key) const {        \
    if (!has(key)) return std::nullopt;                                       \
    return name(key);                                                         \
  }
SQZ_OPT(uint32_t, get_u32)
SQZ_OPT(int32_t, get_i32)
SQZ_OPT(uint64_t, get_u64)
SQZ_OPT(int64_t, get_i64)
SQZ_OPT(float, get_f32)
SQZ_OPT(double, get_f64)
SQZ_OPT(bool, get_bool)
SQZ_OPT(std::string, get_string)
SQZ_OPT(std::vector<std::string>, get_string_array)
SQZ_OPT(std::vector<float>, get_f32_array)
SQZ_OPT(std::vector<int32_t>, get_i32_array)
#undef SQZ_OPT

}  // namespace squeeze::gguf
