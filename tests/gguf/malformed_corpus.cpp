// tests/gguf/malformed_corpus.cpp — the raw encoder and the malformed-file corpus.
#include "malformed_corpus.h"

#include <cstring>
#include <functional>

namespace squeeze::gguf::testing {
namespace {

void append(std::vector<uint8_t>& out, const std::vector<uint8_t>& x) { out.insert(out.end(), x.begin(), x.end()); }

constexpr uint32_t kTypeU32 = 4, kTypeBool = 7, kTypeString = 8, kTypeArray = 9;
constexpr uint32_t kGgmlF32 = 0, kGgmlQ8_0 = 8, kGgmlF64 = 28;

}  // namespace

std::vector<uint8_t> le_u32(uint32_t x) {
  std::vector<uint8_t> b(4);
  std::memcpy(b.data(), &x, 4);
  return b;
}

std::vector<uint8_t> le_u64(uint64_t x) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &x, 8);
  return b;
}

std::vector<uint8_t> raw_string(const std::string& s) {
  auto b = le_u64(s.size());
  b.insert(b.end(), s.begin(), s.end());
  return b;
}

RawKv kv_u32(const std::string& key, uint32_t v) { return {key, kTypeU32, le_u32(v), {}}; }
RawKv kv_string(const std::string& key, const std::string& v) { return {key, kTypeString, raw_string(v), {}}; }

std::vector<uint8_t> encode(const RawFile& f) {
  std::vector<uint8_t> out(f.magic.begin(), f.magic.end());
  append(out, le_u32(f.version));
  append(out, le_u64(f.n_tensors.value_or(f.tensors.size())));
  append(out, le_u64(f.n_kv.value_or(f.kvs.size())));
  for (const RawKv& kv : f.kvs) {
    append(out, le_u64(kv.key_length.value_or(kv.key.size())));
    out.insert(out.end(), kv.key.begin(), kv.key.end());
    append(out, le_u32(kv.type));
    append(out, kv.payload);
  }
  for (const RawTensor& t : f.tensors) {
    append(out, le_u64(t.name_length.value_or(t.name.size())));
    out.insert(out.end(), t.name.begin(), t.name.end());
    append(out, le_u32(static_cast<uint32_t>(t.dims.size())));
    for (uint64_t d : t.dims) append(out, le_u64(d));
    append(out, le_u32(t.type));
    append(out, le_u64(t.offset));
  }
  while (out.size() % f.alignment != 0) out.push_back(0);
  for (uint64_t i = 0; i < f.data_bytes; ++i) out.push_back(static_cast<uint8_t>(i * 7 + 3));
  if (f.truncate_to && *f.truncate_to < out.size()) out.resize(*f.truncate_to);
  return out;
}

RawFile valid_base() {
  RawFile f;
  f.kvs = {kv_string("general.architecture", "llama"), kv_u32("llama.block_count", 2),
           {"general.flag", kTypeBool, {1}, {}}};
  f.tensors = {{"a.weight", {32, 2}, kGgmlF32, 0, {}}, {"b.weight", {64, 2}, kGgmlQ8_0, 256, {}}};
  f.data_bytes = 256 + 4 * 34;  // F32 32x2 = 256 bytes; Q8_0 64x2 = 4 blocks of 34
  return f;
}

std::vector<MalformedCase> malformed_corpus() {
  std::vector<MalformedCase> cases;
  auto add = [&](std::string name, std::string expect, const std::function<void(RawFile&)>& edit) {
    RawFile f = valid_base();
    edit(f);
    cases.push_back({std::move(name), std::move(expect), encode(f)});
  };
  // An array nested `levels` deep around an empty u32 array.
  auto nested = [](int levels) {
    std::vector<uint8_t> p = le_u32(kTypeU32);
    append(p, le_u64(0));
    for (int i = 1; i < levels; ++i) {
      std::vector<uint8_t> outer = le_u32(kTypeArray);
      append(outer, le_u64(1));
      append(outer, p);
      p = std::move(outer);
    }
    return p;
  };

  // Header.
  add("bad_magic", "bad magic 'GGUX'", [](RawFile& f) { f.magic = "GGUX"; });
  add("version_2", "unsupported GGUF version 2", [](RawFile& f) { f.version = 2; });
  add("version_big_endian", "big-endian", [](RawFile& f) { f.version = 0x03000000; });
  add("truncated_header", "truncated: the tensor count", [](RawFile& f) { f.truncate_to = 12; });
  add("kv_count_huge", "metadata count 1152921504606846976 cannot fit", [](RawFile& f) { f.n_kv = uint64_t{1} << 60; });
  add("tensor_count_huge", "tensor count 1152921504606846976 cannot fit",
      [](RawFile& f) { f.n_tensors = uint64_t{1} << 60; });
  add("kv_count_too_high", "truncated: metadata key", [](RawFile& f) { f.n_kv = f.kvs.size() + 1; f.tensors.clear(); f.data_bytes = 0; });
  // Metadata.
  add("key_length_u64_max", "metadata key length 18446744073709551615",
      [](RawFile& f) { f.kvs[0].key_length = ~uint64_t{0}; });
  add("key_length_past_end", "metadata key length 100000", [](RawFile& f) { f.kvs[1].key_length = 100000; });
  add("empty_key", "empty metadata key", [](RawFile& f) { f.kvs[1].key = ""; });
  add("unknown_value_type", "value type 13 is not a GGUF value type", [](RawFile& f) { f.kvs[1].type = 13; });
  add("bool_not_0_or_1", "bool value byte is 2", [](RawFile& f) { f.kvs[2].payload = {2}; });
  add("string_value_past_end", "string value length 4096", [](RawFile& f) {
    f.kvs[0].payload = le_u64(4096);
    append(f.kvs[0].payload, {'x', 'y'});
  });
  add("array_count_huge", "array of 1099511627776 u32 items cannot fit", [](RawFile& f) {
    std::vector<uint8_t> p = le_u32(kTypeU32);
    append(p, le_u64(uint64_t{1} << 40));
    f.kvs.push_back({"x.arr", kTypeArray, p, {}});
  });
  add("array_of_strings_huge", "array of 576460752303423488 string items cannot fit", [](RawFile& f) {
    std::vector<uint8_t> p = le_u32(kTypeString);
    append(p, le_u64(uint64_t{1} << 59));
    f.kvs.push_back({"x.strs", kTypeArray, p, {}});
  });
  add("array_element_type_unknown", "array element type 99", [](RawFile& f) {
    std::vector<uint8_t> p = le_u32(99);
    append(p, le_u64(1));
    f.kvs.push_back({"x.arr", kTypeArray, p, {}});
  });
  add("array_nesting_too_deep", "arrays nested deeper than 8 levels",
      [&](RawFile& f) { f.kvs.push_back({"x.deep", kTypeArray, nested(9), {}}); });
  add("array_item_string_past_end", "array item 1: string value length 999", [](RawFile& f) {
    std::vector<uint8_t> p = le_u32(kTypeString);
    append(p, le_u64(2));
    append(p, raw_string("ok"));
    append(p, le_u64(999));
    f.kvs.push_back({"x.strs", kTypeArray, p, {}});
  });
  add("duplicate_key", "('llama.block_count'): duplicate metadata key",
      [](RawFile& f) { f.kvs.push_back(kv_u32("llama.block_count", 3)); });
  add("alignment_not_power_of_two", "general.alignment 48 is not a power of two",
      [](RawFile& f) { f.kvs.push_back(kv_u32("general.alignment", 48)); });
  add("alignment_zero", "general.alignment 0 is not a power of two",
      [](RawFile& f) { f.kvs.push_back(kv_u32("general.alignment", 0)); });
  add("alignment_too_small", "general.alignment 1 is below 32",  // misaligned in-place weights
      [](RawFile& f) { f.kvs.push_back(kv_u32("general.alignment", 1)); });
  add("alignment_wrong_type", "general.alignment has type string",
      [](RawFile& f) { f.kvs.push_back(kv_string("general.alignment", "32")); });
  // Tensor infos.
  add("tensor_name_length_huge", "tensor name length 9223372036854775807",
      [](RawFile& f) { f.tensors[1].name_length = ~uint64_t{0} >> 1; });
  add("tensor_name_empty", "empty tensor name", [](RawFile& f) { f.tensors[1].name = ""; });
  add("tensor_n_dims_5", "has 5 dimensions (at most 4 allowed)", [](RawFile& f) { f.tensors[0].dims = {32, 2, 1, 1, 1}; });
  add("tensor_dim_zero", "dimension 1 is 0", [](RawFile& f) { f.tensors[0].dims = {32, 0}; });
  add("tensor_dim_too_large", "dimension 1 (9223372036854775808) exceeds", [](RawFile& f) {
    f.tensors[0].dims = {32, uint64_t{1} << 63};
  });
  add("tensor_elements_overflow", "element count overflows", [](RawFile& f) {
    f.tensors[0].dims = {32, uint64_t{1} << 32, uint64_t{1} << 32};
  });
  add("tensor_bytes_overflow", "byte size overflows", [](RawFile& f) {
    f.tensors[0].type = kGgmlF64;
    f.tensors[0].dims = {uint64_t{1} << 31, uint64_t{1} << 31};
  });
  add("tensor_type_unknown", "unknown ggml type id 99", [](RawFile& f) { f.tensors[0].type = 99; });
  add("tensor_type_removed_id", "unknown ggml type id 4", [](RawFile& f) { f.tensors[0].type = 4; });
  add("tensor_row_not_block_multiple", "row length 48 is not a multiple of the Q8_0 block size 32",
      [](RawFile& f) { f.tensors[1].dims = {48, 2}; });
  add("tensor_duplicate_name", "duplicate tensor name 'a.weight'", [](RawFile& f) { f.tensors[1].name = "a.weight"; });
  add("tensor_info_truncated", "truncated: ggml type", [](RawFile& f) {
    f.tensors.resize(1);
    f.data_bytes = 0;
    // Cut 10 bytes before the end of the tensor info: inside the type id.
    RawFile probe = f;
    probe.alignment = 1;
    probe.truncate_to.reset();
    f.truncate_to = encode(probe).size() - 10;
  });
  // Data section.
  add("tensor_offset_misaligned", "data offset 272 is not a multiple of the alignment 32",
      [](RawFile& f) { f.tensors[1].offset = 272; });
  add("tensor_past_end", "136 bytes at data offset 288 run past the end of the data section (392 bytes)",
      [](RawFile& f) { f.tensors[1].offset = 288; });
  add("tensor_offset_wraps", "at data offset 18446744073709551584 run past",
      [](RawFile& f) { f.tensors[1].offset = ~uint64_t{0} - 31; });
  add("tensors_overlap", "tensor 'b.weight' (data offset 224) overlaps tensor 'a.weight'",
      [](RawFile& f) { f.tensors[1].offset = 224; });
  add("data_truncated", "136 bytes at data offset 256 run past the end of the data section (300 bytes)",
      [](RawFile& f) { f.data_bytes = 300; });
  add("data_section_missing", "the data section starts at offset", [](RawFile& f) {
    RawFile probe = f;
    probe.data_bytes = 0;
    probe.alignment = 1;
    f.truncate_to = encode(probe).size();  // ends right after the tensor infos, before the padding
  });
  return cases;
}

}  // namespace squeeze::gguf::testing
