// gguf/writer.h — gguf::Writer: writes a GGUF v3 file atomically.
//
//   gguf::Writer w("out.gguf", {.inputs = {"in.gguf"}});
//   w.metadata() = in.metadata();                       // copy, then edit
//   w.metadata().set("general.file_type", gguf::Value::u32(15));
//   w.add_tensor({"tok_embd.weight", GgmlType::Q8_0, {4096, 32000}}, bytes);   // a span
//   w.add_tensor(spec, [&](const gguf::ByteSink& out) { ...out(chunk)... });    // streamed
//   w.finish();
//
// finish() writes a temporary file in the target's directory, fsyncs it and renames it
// over the target, so a failure at any point leaves the previous file untouched (and no
// temporary behind). It refuses to replace a declared input or any GGUF file currently
// open for reading through gguf::File (same device + inode, whatever the path spelling;
// gguf::check_output_path).
// Tensor data is aligned and padded to the alignment, as llama.cpp and gguf-py expect.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gguf/file_identity.h"
#include "gguf/metadata.h"
#include "gguf/tensor_info.h"

namespace squeeze::gguf {

struct WriterOptions {
  // Tensor data alignment (a power of two). Unset: the metadata's general.alignment if
  // present, else 32. When set to a non-default value it is written as general.alignment.
  std::optional<uint32_t> alignment = std::nullopt;
  // Files this output is derived from; the writer refuses to replace any of them (and
  // any gguf::DeclaredInputs, see file_identity.h).
  std::vector<std::string> inputs = {};
  // A documented in-place update: the one input this file may replace (OutputPolicy).
  std::string replaces = {};
};

struct TensorSpec {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> dims;  // ne order: dims[0] is the row length
};

// Receives a tensor's bytes in order, in pieces of any size.
using ByteSink = std::function<void(std::span<const uint8_t>)>;
// Produces one tensor's bytes while the file is written (so tensors can be quantized
// one at a time); must deliver exactly the tensor's byte size. It may throw: the write
// is then abandoned and the target left as it was.
using TensorProducer = std::function<void(const ByteSink&)>;

class Writer {
 public:
  // Checks up front that `path` is not one of the inputs (finish() checks again).
  explicit Writer(std::string path, WriterOptions options = {});

  Metadata& metadata() { return metadata_; }
  const Metadata& metadata() const { return metadata_; }

  // Adds a tensor whose bytes stay valid until finish(). Throws on a bad shape, a
  // wrong byte count or a duplicate name. Tensors are written in the order added.
  void add_tensor(const TensorSpec& spec, std::span<const uint8_t> bytes);
  void add_tensor(const TensorSpec& spec, TensorProducer producer);
  // Copies a tensor of a file being read (name, type, dims and bytes).
  void add_tensor(const TensorInfo& tensor);

  // Tensors added so far; their data offsets are assigned by finish().
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // The alignment finish() will use (see WriterOptions::alignment).
  uint64_t alignment() const;

  // Writes the file (atomically, see above) and returns its size in bytes. Once only.
  uint64_t finish();

 private:
  void add(const TensorSpec& spec, std::span<const uint8_t> bytes, TensorProducer producer);
  void check_not_an_input() const;
  OutputPolicy policy() const { return {.inputs = options_.inputs, .replaces = options_.replaces}; }
  std::vector<uint8_t> encode_header() const;

  std::string path_;
  WriterOptions options_;
  Metadata metadata_;
  std::vector<TensorInfo> tensors_;
  std::vector<TensorProducer> producers_;  // parallel to tensors_; empty function ⇒ use tensors_[i].data
  bool finished_ = false;
};

}  // namespace squeeze::gguf
