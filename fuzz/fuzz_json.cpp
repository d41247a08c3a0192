// fuzz/fuzz_json.cpp — parse_json_bounded, the parser of every JSON squeeze did not
// write, as ordered_json (request bodies) and json (config files), with small and
// default limits. Checks that what it accepts is within the limits it was given and
// dumps to JSON that parses back to the same text.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/bounded_json.h"
#include "fuzz_input.h"

using namespace squeeze;

namespace {

// Deepest container nesting (0 for a scalar, 1 for [] or {}) and most keys in one object.
template <class JsonT>
void measure(const JsonT& j, int depth, int& max_depth, int64_t& max_keys) {
  if (!j.is_structured()) return;
  max_depth = std::max(max_depth, depth + 1);
  if (j.is_object()) max_keys = std::max<int64_t>(max_keys, static_cast<int64_t>(j.size()));
  for (const auto& child : j) measure(child, depth + 1, max_depth, max_keys);
}

template <class JsonT>
void check(std::string_view text, const JsonLimits& limits) {
  BoundedJson<JsonT> r = parse_json_bounded<JsonT>(text, limits);
  if (!r.error.empty()) {
    if (!r.value.is_null()) __builtin_trap();  // a refusal builds nothing
    return;
  }
  int depth = 0;
  int64_t keys = 0;
  measure(r.value, 0, depth, keys);
  if (depth > limits.max_depth || keys > limits.max_object_keys) __builtin_trap();
  // nlohmann's parser checks UTF-8, so whatever it accepted dumps without throwing.
  const std::string dumped = r.value.dump();
  BoundedJson<JsonT> again = parse_json_bounded<JsonT>(dumped, limits);
  if (!again.error.empty() || again.value.dump() != dumped) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  check<nlohmann::ordered_json>(text, {.max_depth = 8, .max_object_keys = 16});
  check<nlohmann::ordered_json>(text, {});
  check<nlohmann::json>(text, {.max_depth = 8, .max_object_keys = 16});
  check<nlohmann::json>(text, {.max_depth = 64, .max_object_keys = INT64_MAX});
  return 0;
}
