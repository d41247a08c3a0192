// core/bounded_json.h — the one way squeeze parses JSON it did not write: request bodies,
// tool-call arguments inside them, messages files, config.json / tokenizer.json, checkpoint
// and safetensors headers. Limits are checked while parsing, so nothing refused is built:
//   - nesting depth: every later walk over the value (dump, conversion to template values,
//     destruction in some types) recurses once per level, and a deep enough value
//     overflows the stack;
//   - keys per object: nlohmann::ordered_json inserts a key in time linear in the keys
//     already there, so one object of n keys costs n^2 / 2 string compares (100k keys, a
//     1.2 MB body: ~10 s of CPU).
// Parsing itself is linear in the input (nlohmann's parser keeps its own stack).
//
//   auto r = parse_json_bounded<nlohmann::ordered_json>(text, {.max_depth = 64});
//   if (!r.error.empty()) ... r.error is a phrase, e.g. "nested deeper than 64 levels"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace squeeze {

struct JsonLimits {
  int max_depth = 64;              // containers inside containers
  int64_t max_object_keys = 4096;  // keys in any one object
};

template <class JsonT>
struct BoundedJson {
  JsonT value;
  std::string error;  // empty: parsed within the limits
};

template <class JsonT>
BoundedJson<JsonT> parse_json_bounded(std::string_view text, const JsonLimits& limits) {
  BoundedJson<JsonT> out;
  std::string refused;
  std::vector<int64_t> keys_at_depth;  // keys seen so far in the open object at each depth
  const typename JsonT::parser_callback_t check = [&](int depth, typename JsonT::parse_event_t event, JsonT&) {
    if (!refused.empty()) return false;
    using Event = typename JsonT::parse_event_t;
    // A container starts at the depth of the containers around it: 0 for the outermost.
    if ((event == Event::object_start || event == Event::array_start) && depth >= limits.max_depth) {
      refused = "nested deeper than " + std::to_string(limits.max_depth) + " levels";
      return false;
    }
    if (event == Event::object_start) {
      // The object's keys are reported one level deeper than its start.
      if (keys_at_depth.size() < static_cast<size_t>(depth) + 2) keys_at_depth.resize(static_cast<size_t>(depth) + 2);
      keys_at_depth[static_cast<size_t>(depth) + 1] = 0;
    } else if (event == Event::key && static_cast<size_t>(depth) < keys_at_depth.size() &&
               ++keys_at_depth[static_cast<size_t>(depth)] > limits.max_object_keys) {
      refused = "an object with more than " + std::to_string(limits.max_object_keys) + " keys";
      return false;
    }
    return true;
  };
  out.value = JsonT::parse(text.begin(), text.end(), check, /*allow_exceptions=*/false);
  if (!refused.empty()) {
    out.error = refused;
    out.value = JsonT();
  } else if (out.value.is_discarded()) {
    out.error = "not valid JSON";
    out.value = JsonT();
  }
  return out;
}

// As parse_json_bounded, throwing squeeze::Error "WHAT: <why>" ("x.json: not valid JSON") when refused.
template <class JsonT>
JsonT parse_json_or_throw(std::string_view text, std::string_view what, const JsonLimits& limits = {}) {
  BoundedJson<JsonT> r = parse_json_bounded<JsonT>(text, limits);
  if (!r.error.empty()) fail(what, ": ", r.error);
  return std::move(r.value);
}

}  // namespace squeeze
