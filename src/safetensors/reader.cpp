// safetensors/reader.cpp — see reader.h.
#include "safetensors/reader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.h"

namespace squeeze::safetensors {

namespace {

struct DtypeInfo {
  Dtype dtype;
  const char* name;
  size_t size;
};

constexpr DtypeInfo kDtypes[] = {
    {Dtype::BOOL, "BOOL", 1}, {Dtype::U8, "U8", 1},   {Dtype::I8, "I8", 1},     {Dtype::U16, "U16", 2},
    {Dtype::I16, "I16", 2},   {Dtype::F16, "F16", 2}, {Dtype::BF16, "BF16", 2}, {Dtype::U32, "U32", 4},
    {Dtype::I32, "I32", 4},   {Dtype::F32, "F32", 4}, {Dtype::U64, "U64", 8},   {Dtype::I64, "I64", 8},
    {Dtype::F64, "F64", 8},   {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::F8_E5M2, "F8_E5M2", 1},
};

// The deepest nesting a well-formed header has: {"t": {"shape": [..]}} is 3. Checked on
// the raw bytes before parsing, so no input can drive the JSON parser deep.
constexpr int kMaxDepth = 3;

void check_nesting(std::string_view json, const std::string& path) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) fail(path, ": header JSON nested deeper than ", kMaxDepth, " levels");
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t json_offset(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number_unsigned()) fail(where, ": data_offsets must be non-negative integers");
  return v.get<uint64_t>();
}

}  // namespace

const char* dtype_name(Dtype d) { return kDtypes[static_cast<size_t>(d)].name; }
size_t dtype_size(Dtype d) { return kDtypes[static_cast<size_t>(d)].size; }

std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.dtype;
  return std::nullopt;
}

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

File::File(const std::string& path) : file_(path) {
  const auto bytes = file_.bytes();
  if (bytes.size() < 8) fail(path, ": ", bytes.size(), " bytes: too short for a safetensors header");
  header_bytes_ = read_u64_le(bytes.data());
  if (header_bytes_ < 2 || header_bytes_ > kMaxHeaderBytes)
    fail(path, ": header length ", header_bytes_, " out of range [2, ", kMaxHeaderBytes, "] (not a safetensors file?)");
  if (header_bytes_ > bytes.size() - 8)
    fail(path, ": header length ", header_bytes_, " runs past the end of the ", bytes.size(), "-byte file");
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), header_bytes_);
  if (header.front() != '{') fail(path, ": the header is not a JSON object");
  check_nesting(header, path);

  // Duplicate names would silently shadow each other in a JSON object: count them. The
  // names' order is kept here, so the object itself can be a std::map (an ordered_json
  // inserts in linear time: a header of 100k names would cost minutes).
  std::set<std::string> seen;
  std::vector<std::string> names;
  std::string duplicate;
  const auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& value) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key) {
      if (!seen.insert(value.get<std::string>()).second) {
        if (duplicate.empty()) duplicate = value.get<std::string>();
      } else {
        names.push_back(value.get<std::string>());
      }
    }
    return true;
  };
  const nlohmann::json j = nlohmann::json::parse(header, on_event, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(path, ": the header is not valid JSON");
  if (!j.is_object()) fail(path, ": the header is not a JSON object");
  if (!duplicate.empty()) fail(path, ": tensor '", duplicate, "' appears twice in the header");

  const uint64_t buffer = bytes.size() - 8 - header_bytes_;
  const uint8_t* data = bytes.data() + 8 + header_bytes_;
  for (const std::string& name : names) {
    const nlohmann::json& entry = j[name];
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, ": __metadata__ must be an object of strings");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) fail(path, ": __metadata__ value '", k, "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    if (name.empty()) fail(path, ": a tensor has an empty name");
    if (!entry.is_object()) fail(where, ": not an object");
    for (const auto& [k, v] : entry.items())
      if (k != "dtype" && k != "shape" && k != "data_offsets") fail(where, ": unknown key '", k, "'");
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) fail(where, ": dtype missing or not a string");
    if (!entry.contains("shape") || !entry["shape"].is_array()) fail(where, ": shape missing or not an array");
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      fail(where, ": data_offsets must be [begin, end]");
    Tensor t;
    t.name = name;
    const std::string dtype = entry["dtype"].get<std::string>();
    const auto d = dtype_from_name(dtype);
    if (!d) fail(where, ": unknown dtype '", dtype, "'");
    t.dtype = *d;
    // The byte size in 128 bits, capped just past 2^64: no shape can overflow the check.
    constexpr unsigned __int128 kTooBig = static_cast<unsigned __int128>(UINT64_MAX) + 1;
    unsigned __int128 size = dtype_size(t.dtype);
    for (const auto& dim : entry["shape"]) {
      if (!dim.is_number_unsigned()) fail(where, ": shape entries must be non-negative integers");
      const uint64_t v = dim.get<uint64_t>();
      if (v > (uint64_t{1} << 62)) fail(where, ": dimension ", v, " too large");
      t.shape.push_back(static_cast<int64_t>(v));
      size *= v;
      size = std::min(size, kTooBig);
    }
    t.begin = json_offset(entry["data_offsets"][0], where);
    t.end = json_offset(entry["data_offsets"][1], where);
    if (t.begin > t.end) fail(where, ": data_offsets [", t.begin, ", ", t.end, "] run backwards");
    if (t.end > buffer) fail(where, ": data ends at ", t.end, ", past the ", buffer, "-byte data buffer");
    if (size != t.end - t.begin)
      fail(where, ": ", dtype, " shape needs ", size == kTooBig ? std::string("2^64 or more") : std::to_string(uint64_t(size)),
           " bytes, data_offsets span ", t.end - t.begin);
    t.data = std::span<const uint8_t>(data + t.begin, t.end - t.begin);
    index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  // The tensors tile the buffer: sorted by offset, each begins where the last ended.
  std::vector<const Tensor*> order;
  for (const auto& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const Tensor* a, const Tensor* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = 0;
  for (const Tensor* t : order) {
    if (t->begin < at) fail(path, ": tensor '", t->name, "' overlaps the tensor before it (begins at ", t->begin, ", ", at, " is taken)");
    if (t->begin > at) fail(path, ": ", t->begin - at, " unused bytes before tensor '", t->name, "' (at ", at, ")");
    at = t->end;
  }
  if (at != buffer) fail(path, ": ", buffer - at, " bytes after the last tensor (the data buffer is ", buffer, " bytes)");
}

const Tensor* File::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace squeeze::safetensors
