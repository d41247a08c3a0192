// gguf/writer.cpp — GGUF v3 encoding and the atomic write.
#include "gguf/writer.h"

#include <cstring>
#include <unordered_set>

#include "core/error.h"
#include "gguf/atomic_file.h"
#include "gguf/file_identity.h"
#include "gguf/reader.h"

namespace squeeze::gguf {
namespace {

constexpr size_t kMaxTensorNameBytes = 64;

class Encoder {
 public:
  std::vector<uint8_t> bytes;

  template <typename T>
  void put(T x) {
    const auto* p = reinterpret_cast<const uint8_t*>(&x);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }

  // The value's payload (without its type id). Checks what the reader would reject, so
  // that we never write a file we cannot read back.
  void put_value(const Value& v, int depth) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            put_string(x);
          } else if constexpr (std::is_same_v<T, Array>) {
            SQZ_CHECK(depth < kMaxArrayDepth, "arrays nested deeper than ", kMaxArrayDepth, " levels");
            put<uint32_t>(static_cast<uint32_t>(x.element_type));
            put<uint64_t>(x.items.size());
            for (size_t i = 0; i < x.items.size(); ++i) {
              SQZ_CHECK(x.items[i].type() == x.element_type, "array item ", i, " has type ",
                        value_type_name(x.items[i].type()), " in an array of ", value_type_name(x.element_type));
              put_value(x.items[i], depth + 1);
            }
          } else if constexpr (std::is_same_v<T, bool>) {
            put<uint8_t>(x ? 1 : 0);
          } else {
            put<T>(x);
          }
        },
        v.storage());
  }
};

}  // namespace

Writer::Writer(std::string path, WriterOptions options) : path_(std::move(path)), options_(std::move(options)) {
  if (options_.alignment)
    SQZ_CHECK(is_valid_alignment(*options_.alignment) && *options_.alignment >= kMinAlignment, "writing ", path_,
              ": alignment ", *options_.alignment, " is not a power of two in [", kMinAlignment, ", 2^30]");
  check_not_an_input();
}

void Writer::check_not_an_input() const { check_output_path(path_, policy()); }

uint64_t Writer::alignment() const {
  if (options_.alignment) return *options_.alignment;
  if (const Value* v = metadata_.find("general.alignment")) {
    const auto a = v->as_u64();
    // The reader refuses less than kMinAlignment: never write a file it would refuse.
    SQZ_CHECK(a && is_valid_alignment(*a) && *a >= kMinAlignment, "writing ", path_, ": metadata general.alignment ",
              v->to_display(), " is not a power of two in [", kMinAlignment, ", 2^30]");
    return *a;
  }
  return kDefaultAlignment;
}

void Writer::add_tensor(const TensorSpec& spec, std::span<const uint8_t> bytes) { add(spec, bytes, nullptr); }

void Writer::add_tensor(const TensorSpec& spec, TensorProducer producer) {
  SQZ_CHECK(producer != nullptr, "writing ", path_, ": tensor '", spec.name, "' has no data producer");
  add(spec, {}, std::move(producer));
}

void Writer::add_tensor(const TensorInfo& t) { add_tensor(TensorSpec{t.name, t.type, t.dims()}, t.data); }

void Writer::add(const TensorSpec& spec, std::span<const uint8_t> bytes, TensorProducer producer) {
  SQZ_CHECK(!finished_, "writing ", path_, ": add_tensor after finish");
  try {
    SQZ_CHECK(!spec.name.empty(), "empty tensor name");
    // llama.cpp keeps names in a 64-byte buffer (GGML_MAX_NAME) and rejects longer ones.
    SQZ_CHECK(spec.name.size() < kMaxTensorNameBytes, "name of ", spec.name.size(), " bytes is longer than the ",
              kMaxTensorNameBytes - 1, " other GGUF readers accept");
    for (const TensorInfo& t : tensors_) SQZ_CHECK(t.name != spec.name, "duplicate tensor name");
    const TensorGeometry g = tensor_geometry(spec.type, spec.dims);
    SQZ_CHECK(producer != nullptr || bytes.size() == g.n_bytes, "has ", bytes.size(), " bytes of data, its ",
              ggml_type_info(spec.type).name, " shape needs ", g.n_bytes);
    TensorInfo t;
    t.name = spec.name;
    t.type = g.type;
    t.n_dims = g.n_dims;
    t.ne = g.ne;
    t.n_elements = g.n_elements;
    t.n_bytes = g.n_bytes;
    t.data = bytes;
    tensors_.push_back(std::move(t));
    producers_.push_back(std::move(producer));
  } catch (const Error& e) {
    throw e.with_context("writing " + path_ + ": tensor '" + spec.name + "'");
  }
}

std::vector<uint8_t> Writer::encode_header() const {
  Encoder enc;
  enc.bytes.insert(enc.bytes.end(), {'G', 'G', 'U', 'F'});
  enc.put<uint32_t>(kGgufVersion);
  enc.put<uint64_t>(tensors_.size());
  enc.put<uint64_t>(metadata_.size());
  for (const KeyValue& kv : metadata_.entries()) {
    try {
      SQZ_CHECK(!kv.key.empty(), "empty metadata key");
      enc.put_string(kv.key);
      enc.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
      enc.put_value(kv.value, 0);
    } catch (const Error& e) {
      throw e.with_context("metadata key '" + kv.key + "'");
    }
  }
  for (const TensorInfo& t : tensors_) {
    enc.put_string(t.name);
    enc.put<uint32_t>(static_cast<uint32_t>(t.n_dims));
    for (int d = 0; d < t.n_dims; ++d) enc.put<uint64_t>(static_cast<uint64_t>(t.ne[d]));
    enc.put<uint32_t>(static_cast<uint32_t>(t.type));
    enc.put<uint64_t>(t.offset);
  }
  return std::move(enc.bytes);
}

uint64_t Writer::finish() {
  SQZ_CHECK(!finished_, "writing ", path_, ": finish called twice");
  finished_ = true;
  try {
    if (options_.alignment && (*options_.alignment != kDefaultAlignment || metadata_.has("general.alignment")))
      metadata_.set("general.alignment", Value::u32(*options_.alignment));
    const uint64_t align = alignment();

    // Offsets within the data section: each tensor starts aligned, in the order added.
    uint64_t offset = 0;
    for (TensorInfo& t : tensors_) {
      t.offset = offset;
      const auto next = align_up(offset + t.n_bytes, align);  // n_bytes < 2^63: no overflow in the sum
      SQZ_CHECK(next.has_value(), "total tensor data size overflows");
      offset = *next;
    }
    const std::vector<uint8_t> header = encode_header();
    const uint64_t data_start = *align_up(header.size(), align);

    check_not_an_input();
    AtomicFile out(path_, policy());
    out.write(header);
    out.write_zeros(data_start - header.size());
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const TensorInfo& t = tensors_[i];
      out.write_zeros(data_start + t.offset - out.size());
      if (!producers_[i]) {
        out.write(t.data);
      } else {
        uint64_t delivered = 0;
        const ByteSink sink = [&](std::span<const uint8_t> chunk) {
          SQZ_CHECK(chunk.size() <= t.n_bytes - delivered, "tensor '", t.name, "': producer delivered more than its ",
                    t.n_bytes, " bytes");
          delivered += chunk.size();
          out.write(chunk);
        };
        producers_[i](sink);
        SQZ_CHECK(delivered == t.n_bytes, "tensor '", t.name, "': producer delivered ", delivered, " of its ",
                  t.n_bytes, " bytes");
      }
      // Pad every tensor, the last included: llama.cpp reads the padded data size.
      out.write_zeros(*align_up(out.size(), align) - out.size());
    }
    check_not_an_input();  // the target may have appeared (or been opened) meanwhile
    const uint64_t size = out.size();
    out.commit();
    return size;
  } catch (const Error& e) {
    throw e.with_context("writing " + path_);
  }
}

}  // namespace squeeze::gguf
