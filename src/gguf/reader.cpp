// gguf/reader.cpp — parsing and validating a GGUF v3 file.
//
// The order of checks follows the file: header, metadata (bounding every count and
// length by the bytes left before allocating), alignment, tensor infos (type, shape,
// size), then the data section (alignment, bounds, overlaps). Each failure names the
// record it concerns; File() prefixes the path.
#include "gguf/reader.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "core/error.h"
#include "gguf/byte_cursor.h"

namespace squeeze::gguf {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace {

using detail::ByteCursor;

// The fewest bytes a record can occupy: used to reject counts the file cannot hold
// before reserving memory for them.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;          // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims 0, type, offset
constexpr uint64_t kMinArrayBytes = 4 + 8;           // element type + count

uint64_t min_item_bytes(ValueType t) {
  if (t == ValueType::String) return 8;
  if (t == ValueType::Array) return kMinArrayBytes;
  return value_type_size(t);
}

template <typename T>
Value read_scalar(ByteCursor& c) {
  return Value(c.read<T>("value"));
}

// A parsed item costs ~40 bytes however small it is on disk, so a file made of huge
// u8 arrays could make us allocate 40x its size. Real files hold well under a million
// array items (vocabularies, merges, scores); cap the total far above that.
constexpr uint64_t kMaxMetadataItems = uint64_t{1} << 26;

struct ParseState {
  uint64_t items = 0;  // array items parsed so far, all arrays together
};

Value read_value(ByteCursor& c, ValueType type, int depth, ParseState& st);

Value read_array(ByteCursor& c, int depth, ParseState& st) {
  if (depth >= kMaxArrayDepth) fail("arrays nested deeper than ", kMaxArrayDepth, " levels");
  const uint32_t elem_id = c.read<uint32_t>("array element type");
  const auto elem = value_type_from_id(elem_id);
  if (!elem) fail("array element type ", elem_id, " is not a GGUF value type");
  const uint64_t count = c.read<uint64_t>("array count");
  const uint64_t per_item = min_item_bytes(*elem);
  if (count > c.remaining() / per_item)
    fail("array of ", count, " ", value_type_name(*elem), " items cannot fit in the ", c.remaining(),
         " bytes left in the file");
  if (count > kMaxMetadataItems - st.items)
    fail("metadata arrays hold more than ", kMaxMetadataItems, " items in total");
  st.items += count;
  Array a{*elem, {}};
  a.items.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    try {
      a.items.push_back(read_value(c, *elem, depth + 1, st));
    } catch (const Error& e) {
      // Nested arrays report only the innermost problem (no chain of 'array item 0: ...').
      if (*elem == ValueType::String || *elem == ValueType::Bool)
        throw e.with_context("array item " + std::to_string(i));
      throw;
    }
  }
  return Value(std::move(a));
}

Value read_value(ByteCursor& c, ValueType type, int depth, ParseState& st) {
  switch (type) {
    case ValueType::U8: return read_scalar<uint8_t>(c);
    case ValueType::I8: return read_scalar<int8_t>(c);
    case ValueType::U16: return read_scalar<uint16_t>(c);
    case ValueType::I16: return read_scalar<int16_t>(c);
    case ValueType::U32: return read_scalar<uint32_t>(c);
    case ValueType::I32: return read_scalar<int32_t>(c);
    case ValueType::F32: return read_scalar<float>(c);
    case ValueType::U64: return read_scalar<uint64_t>(c);
    case ValueType::I64: return read_scalar<int64_t>(c);
    case ValueType::F64: return read_scalar<double>(c);
    case ValueType::Bool: {
      const uint8_t b = c.read<uint8_t>("bool value");
      if (b > 1) fail("bool value byte is ", +b, " (only 0 and 1 are valid)");
      return Value(b == 1);
    }
    case ValueType::String: return Value(std::string(c.read_string("string value")));
    case ValueType::Array: return read_array(c, depth, st);
  }
  fail("unreachable value type");
}

void read_header(ByteCursor& c, uint32_t* version, uint64_t* n_tensors, uint64_t* n_kv) {
  const auto magic = c.take(4, "the GGUF magic");
  if (!std::equal(magic.begin(), magic.end(), "GGUF")) {
    std::string shown;
    for (uint8_t b : magic) shown += (b >= 0x20 && b < 0x7f) ? static_cast<char>(b) : '?';
    fail("bad magic '", shown, "' (not a GGUF file)");
  }
  *version = c.read<uint32_t>("the version");
  if (*version != kGgufVersion) {
    if (__builtin_bswap32(*version) == kGgufVersion) fail("big-endian GGUF files are not supported (version field reads 3 byte-swapped)");
    fail("unsupported GGUF version ", *version, " (only version ", kGgufVersion, " is supported)");
  }
  *n_tensors = c.read<uint64_t>("the tensor count");
  *n_kv = c.read<uint64_t>("the metadata count");
  if (*n_kv > c.remaining() / kMinKvBytes)
    fail("metadata count ", *n_kv, " cannot fit in the ", c.remaining(), " bytes left in the file");
  if (*n_tensors > c.remaining() / kMinTensorInfoBytes)
    fail("tensor count ", *n_tensors, " cannot fit in the ", c.remaining(), " bytes left in the file");
}

void read_metadata(ByteCursor& c, uint64_t n_kv, Metadata& md) {
  ParseState st;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    try {
      key = std::string(c.read_string("metadata key"));
      if (key.empty()) fail("empty metadata key");
      const uint32_t type_id = c.read<uint32_t>("value type");
      const auto type = value_type_from_id(type_id);
      if (!type) fail("value type ", type_id, " is not a GGUF value type");
      Value v = read_value(c, *type, 0, st);
      if (md.has(key)) fail("duplicate metadata key");
      md.set(key, std::move(v));
    } catch (const Error& e) {
      std::string where = "metadata entry " + std::to_string(i);
      if (!key.empty()) where += " ('" + key + "')";
      throw e.with_context(where);
    }
  }
}

uint64_t read_alignment(const Metadata& md) {
  const Value* v = md.find("general.alignment");
  if (v == nullptr) return kDefaultAlignment;
  const auto a = v->as_u64();
  if (!a) fail("general.alignment has type ", value_type_name(v->type()), " (expected an unsigned integer)");
  if (!is_valid_alignment(*a)) fail("general.alignment ", *a, " is not a power of two in [1, 2^30]");
  if (*a < kMinAlignment)
    fail("general.alignment ", *a, " is below ", kMinAlignment, ", the alignment tensors used in place need");
  return *a;
}

TensorInfo read_tensor_info(ByteCursor& c) {
  TensorInfo t;
  t.name = std::string(c.read_string("tensor name"));
  if (t.name.empty()) fail("empty tensor name");
  try {
    const uint32_t n_dims = c.read<uint32_t>("n_dims");
    if (n_dims > kMaxDims) fail("has ", n_dims, " dimensions (at most ", kMaxDims, " allowed)");
    uint64_t dims[kMaxDims] = {};
    for (uint32_t d = 0; d < n_dims; ++d) dims[d] = c.read<uint64_t>("dimension");
    const uint32_t type_id = c.read<uint32_t>("ggml type");
    t.offset = c.read<uint64_t>("data offset");
    const TensorGeometry g = tensor_geometry(type_id, std::span<const uint64_t>(dims, n_dims));
    t.type = g.type;
    t.n_dims = g.n_dims;
    t.ne = g.ne;
    t.n_elements = g.n_elements;
    t.n_bytes = g.n_bytes;
  } catch (const Error& e) {
    throw e.with_context("tensor '" + t.name + "'");
  }
  return t;
}

}  // namespace

File::File(const std::string& path) : path_(path) {
  mapping_ = std::make_unique<MappedFile>(path);
  bytes_ = mapping_->bytes();
  if (auto id = file_identity(path)) registration_ = OpenFileRegistration(*id);
  parse_all();
}

File File::parse(std::span<const uint8_t> bytes, std::string name) {
  File f;
  f.path_ = std::move(name);
  f.bytes_ = bytes;
  f.parse_all();
  return f;
}

void File::parse_all() {
  metadata_ = Metadata(path_);
  try {
    ByteCursor c(bytes_);
    uint64_t n_tensors = 0, n_kv = 0;
    read_header(c, &version_, &n_tensors, &n_kv);
    Metadata md(path_);
    read_metadata(c, n_kv, md);
    alignment_ = read_alignment(md);

    tensors_.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
      try {
        tensors_.push_back(read_tensor_info(c));
      } catch (const Error& e) {
        throw e.with_context("tensor info " + std::to_string(i));
      }
      const std::string& name = tensors_.back().name;
      if (!tensor_index_.emplace(name, tensors_.size() - 1).second)
        fail("tensor info ", i, ": duplicate tensor name '", name, "'");
    }

    const auto data_start = align_up(c.pos(), alignment_);
    if (!data_start) fail("data section offset overflows");
    data_offset_ = *data_start;
    if (!tensors_.empty() && data_offset_ > bytes_.size())
      fail("truncated: the data section starts at offset ", data_offset_, " but the file has ", bytes_.size(),
           " bytes");
    const uint64_t data_size = tensors_.empty() ? 0 : bytes_.size() - data_offset_;

    for (TensorInfo& t : tensors_) {
      if (t.offset % alignment_ != 0)
        fail("tensor '", t.name, "': data offset ", t.offset, " is not a multiple of the alignment ", alignment_);
      if (t.offset > data_size || t.n_bytes > data_size - t.offset)
        fail("tensor '", t.name, "': ", t.n_bytes, " bytes at data offset ", t.offset,
             " run past the end of the data section (", data_size, " bytes)");
      t.data = bytes_.subspan(static_cast<size_t>(data_offset_ + t.offset), static_cast<size_t>(t.n_bytes));
    }

    std::vector<size_t> order(tensors_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& prev = tensors_[order[k - 1]];
      const TensorInfo& cur = tensors_[order[k]];
      if (cur.offset < prev.offset + prev.n_bytes)  // both bounded by data_size: no overflow
        fail("tensor '", cur.name, "' (data offset ", cur.offset, ") overlaps tensor '", prev.name, "' (data offset ",
             prev.offset, ", ", prev.n_bytes, " bytes)");
    }
    metadata_ = std::move(md);
  } catch (const Error& e) {
    throw e.with_context(path_);
  }
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (t == nullptr) fail(path_, ": no tensor named '", name, "'");
  return *t;
}

}  // namespace squeeze::gguf
