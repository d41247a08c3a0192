// tests/gguf/test_roundtrip.cpp — writer → reader: every metadata type (nested arrays
// included) and every ggml tensor type survive exactly; layout rules (alignment,
// padding, offsets) hold; streamed tensors equal spans; a re-write is byte-identical.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"

namespace squeeze::gguf {
namespace {

using testing::sample_metadata;
using testing::sample_tensors;
using testing::ScratchDir;

void write_sample(const std::string& path, const std::vector<testing::SampleTensor>& tensors, WriterOptions opt = {}) {
  Writer w(path, std::move(opt));
  w.metadata() = sample_metadata();
  for (const auto& t : tensors) w.add_tensor(t.spec, t.bytes);
  w.finish();
}

void expect_same_content(const File& f, const Metadata& md, const std::vector<testing::SampleTensor>& tensors) {
  ASSERT_EQ(f.metadata().size(), md.size());
  for (size_t i = 0; i < md.size(); ++i) {
    EXPECT_EQ(f.metadata().entries()[i].key, md.entries()[i].key);
    EXPECT_EQ(f.metadata().entries()[i].value, md.entries()[i].value) << md.entries()[i].key;
  }
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    const auto& want = tensors[i];
    EXPECT_EQ(t.name, want.spec.name);
    EXPECT_EQ(t.type, want.spec.type);
    EXPECT_EQ(t.dims(), want.spec.dims);
    EXPECT_EQ(t.n_bytes, want.bytes.size());
    ASSERT_EQ(t.data.size(), want.bytes.size());
    EXPECT_EQ(std::memcmp(t.data.data(), want.bytes.data(), want.bytes.size()), 0) << t.name;
    EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
    EXPECT_EQ(t.data.data(), f.bytes().data() + f.data_offset() + t.offset);  // zero-copy: points into the mapping
    EXPECT_EQ(f.find_tensor(want.spec.name), &t);
  }
}

TEST(GgufRoundTrip, EveryMetadataTypeAndEveryTensorType) {
  ScratchDir dir;
  const auto tensors = sample_tensors(1);
  ASSERT_GE(tensors.size(), 32u);  // all ggml_type.h types
  write_sample(dir.file("a.gguf"), tensors);
  const File f(dir.file("a.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_FALSE(f.metadata().has("general.alignment"));  // default alignment is not written
  EXPECT_EQ(f.data_offset() % 32, 0u);
  expect_same_content(f, sample_metadata(), tensors);
  // Every tensor is padded, the last one included (llama.cpp reads the padded size).
  const TensorInfo& last = f.tensors().back();
  EXPECT_EQ(f.file_size(), f.data_offset() + *align_up(last.offset + last.n_bytes, 32));
  // Tensors are laid out back to back in the order added, each at the next aligned offset.
  for (size_t i = 1; i < f.tensors().size(); ++i) {
    const TensorInfo& p = f.tensors()[i - 1];
    EXPECT_EQ(f.tensors()[i].offset, *align_up(p.offset + p.n_bytes, 32));
  }
  EXPECT_THROW(f.tensor("no.such.tensor"), Error);
  EXPECT_EQ(f.find_tensor("no.such.tensor"), nullptr);
}

TEST(GgufRoundTrip, CustomAlignmentIsWrittenAndUsed) {
  ScratchDir dir;
  const auto tensors = sample_tensors(2);
  write_sample(dir.file("a.gguf"), tensors, {.alignment = 256});
  const File f(dir.file("a.gguf"));
  EXPECT_EQ(f.alignment(), 256u);
  EXPECT_EQ(f.metadata().get_u32("general.alignment"), 256u);
  EXPECT_EQ(f.data_offset() % 256, 0u);
  for (const TensorInfo& t : f.tensors()) EXPECT_EQ(t.offset % 256, 0u);
  EXPECT_THROW(Writer(dir.file("b.gguf"), {.alignment = 48}), Error);
  EXPECT_THROW(Writer(dir.file("b.gguf"), {.alignment = 8}), Error);  // the reader would refuse it
}

TEST(GgufRoundTrip, TensorHelpersDescribeRows) {
  ScratchDir dir;
  std::vector<uint8_t> q(3 * 2 * 34);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<uint8_t>(i);
  Writer w(dir.file("a.gguf"));
  w.add_tensor({"q", GgmlType::Q8_0, {64, 3}}, q);
  w.finish();
  const File f(dir.file("a.gguf"));
  const TensorInfo& t = f.tensor("q");
  EXPECT_EQ(t.row_length(), 64);
  EXPECT_EQ(t.n_rows(), 3);
  EXPECT_EQ(t.row_bytes(), 68u);
  EXPECT_EQ(t.row(2)[0], q[136]);
  EXPECT_EQ(t.shape_string(), "[64, 3]");
  EXPECT_DOUBLE_EQ(t.bpw(), 8.5);
  EXPECT_THROW(t.row(3), Error);
}

TEST(GgufRoundTrip, StreamedTensorsEqualSpansAndRewriteIsByteIdentical) {
  ScratchDir dir;
  const auto tensors = sample_tensors(3);
  write_sample(dir.file("a.gguf"), tensors);
  {
    // Copy through the reader, streaming each tensor in 7-byte pieces.
    const File in(dir.file("a.gguf"));
    Writer w(dir.file("b.gguf"), {.inputs = {dir.file("a.gguf")}});
    w.metadata() = in.metadata();
    for (const TensorInfo& t : in.tensors())
      w.add_tensor(TensorSpec{t.name, t.type, t.dims()}, [&t](const ByteSink& out) {
        for (size_t i = 0; i < t.data.size(); i += 7) out(t.data.subspan(i, std::min<size_t>(7, t.data.size() - i)));
      });
    w.finish();
    Writer w2(dir.file("c.gguf"));
    w2.metadata() = in.metadata();
    for (const TensorInfo& t : in.tensors()) w2.add_tensor(t);
    w2.finish();
  }
  const auto a = testing::read_bytes(dir.file("a.gguf"));
  EXPECT_EQ(a, testing::read_bytes(dir.file("b.gguf")));
  EXPECT_EQ(a, testing::read_bytes(dir.file("c.gguf")));
}

TEST(GgufRoundTrip, WriterRejectsWhatTheReaderWould) {
  ScratchDir dir;
  Writer w(dir.file("a.gguf"));
  std::vector<uint8_t> b(256);
  EXPECT_THROW(w.add_tensor({"x", GgmlType::Q4_K, {128, 2}}, b), Error);  // row not a multiple of 256
  EXPECT_THROW(w.add_tensor({"x", GgmlType::F32, {0, 2}}, b), Error);
  EXPECT_THROW(w.add_tensor({"x", GgmlType::F32, {1, 1, 1, 1, 1}}, b), Error);
  EXPECT_THROW(w.add_tensor({"x", GgmlType::F32, {32, 3}}, b), Error);  // 384 bytes needed, 256 given
  EXPECT_THROW(w.add_tensor({"", GgmlType::F32, {32, 2}}, b), Error);
  EXPECT_THROW(w.add_tensor({std::string(64, 'n'), GgmlType::F32, {32, 2}}, b), Error);
  w.add_tensor({std::string(63, 'n'), GgmlType::F32, {32, 2}}, b);
  w.add_tensor({"x", GgmlType::F32, {32, 2}}, b);
  EXPECT_THROW(w.add_tensor({"x", GgmlType::F32, {32, 2}}, b), Error);
  // A hand-built array whose items disagree with its element type is refused at write time.
  Array bad{ValueType::U32, {Value::i32(1)}};
  w.metadata().set("bad", Value(bad));
  EXPECT_THROW(w.finish(), Error);
  EXPECT_TRUE(dir.list().empty());  // nothing left behind
}

TEST(GgufRoundTrip, TooDeeplyNestedArraysAreNotWritten) {
  ScratchDir dir;
  Value v = Value::u32_array({1});
  for (int i = 0; i < kMaxArrayDepth; ++i) v = Value::array(ValueType::Array, {v});
  Writer w(dir.file("a.gguf"));
  w.metadata().set("deep", v);
  EXPECT_THROW(w.finish(), Error);
  Value ok = Value::u32_array({1});
  for (int i = 0; i < kMaxArrayDepth - 1; ++i) ok = Value::array(ValueType::Array, {ok});
  Writer w2(dir.file("b.gguf"));
  w2.metadata().set("deep", ok);
  w2.finish();
  EXPECT_EQ(File(dir.file("b.gguf")).metadata().at("deep"), ok);
}

}  // namespace
}  // namespace squeeze::gguf
