// tests/gguf/test_malformed.cpp — the reader against malformed input: one hand-made
// file per defect (each must fail with its own message), every truncation of a valid
// file, and seeded random corruption. Run under ASan+UBSan, these also show that no
// defect reads out of bounds: each input is copied into an allocation of exactly its size.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"
#include "malformed_corpus.h"

namespace squeeze::gguf {
namespace {

// Parses a private exact-size copy; returns the error message or "" when accepted.
std::string parse_error(const std::vector<uint8_t>& bytes, size_t length) {
  const std::vector<uint8_t> copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
  try {
    File::parse(copy, "x.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufMalformed, BaseFileIsValid) {
  const auto bytes = testing::encode(testing::valid_base());
  const File f = File::parse(bytes, "base.gguf");
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensor("b.weight").offset, 256u);
  EXPECT_EQ(f.metadata().get_u32("llama.block_count"), 2u);
  EXPECT_TRUE(f.metadata().get_bool("general.flag"));
}

TEST(GgufMalformed, EachDefectIsRejectedWithItsOwnMessage) {
  const auto corpus = testing::malformed_corpus();
  ASSERT_GE(corpus.size(), 30u);
  std::set<std::string> messages;
  for (const auto& c : corpus) {
    const std::string msg = parse_error(c.bytes, c.bytes.size());
    ASSERT_FALSE(msg.empty()) << c.name << " was accepted";
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": got \"" << msg << "\"";
    EXPECT_EQ(msg.rfind("x.gguf: ", 0), 0u) << c.name << ": message does not start with the path: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.name;
    messages.insert(msg);
  }
  EXPECT_EQ(messages.size(), corpus.size()) << "two defects gave the same message";
}

TEST(GgufMalformed, EveryTruncationOfAHandMadeFileIsRejected) {
  const auto bytes = testing::encode(testing::valid_base());
  ASSERT_TRUE(parse_error(bytes, bytes.size()).empty());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string msg = parse_error(bytes, n);
    EXPECT_FALSE(msg.empty()) << "accepted a file truncated to " << n << " of " << bytes.size() << " bytes";
  }
}

TEST(GgufMalformed, EveryTruncationOfAWrittenFileIsRejected) {
  // Every metadata type, and a last tensor whose size is a multiple of the alignment so
  // that the file has no trailing padding (a cut inside padding would lose nothing).
  testing::ScratchDir dir;
  Writer w(dir.file("a.gguf"));
  w.metadata() = testing::sample_metadata();
  std::vector<uint8_t> q(34, 0x11), f32(128, 0x22);
  w.add_tensor({"q", GgmlType::Q8_0, {32, 1}}, q);
  w.add_tensor({"f", GgmlType::F32, {16, 2}}, f32);
  w.finish();
  const auto bytes = testing::read_bytes(dir.file("a.gguf"));
  ASSERT_TRUE(parse_error(bytes, bytes.size()).empty());
  size_t rejected = 0;
  for (size_t n = 0; n < bytes.size(); ++n) rejected += !parse_error(bytes, n).empty();
  EXPECT_EQ(rejected, bytes.size());
}

TEST(GgufMalformed, RandomCorruptionNeverCrashes) {
  // Seeded corruption of the header region: the reader must accept or reject cleanly
  // (the sanitizers turn any stray read into a failure). Some mutations are harmless
  // (a changed name byte), so the count of rejections is only checked to be non-trivial.
  const auto base = testing::encode(testing::valid_base());
  const size_t header = base.size() - testing::valid_base().data_bytes;
  std::mt19937 rng(1234);
  size_t rejected = 0;
  constexpr int kTrials = 4000;
  for (int trial = 0; trial < kTrials; ++trial) {
    auto bytes = base;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % header;
      switch (rng() % 3) {
        case 0: bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 1: bytes[at] = 0xff; break;
        default: bytes[at] = static_cast<uint8_t>(rng()); break;
      }
    }
    rejected += !parse_error(bytes, bytes.size()).empty();
  }
  EXPECT_GT(rejected, kTrials / 4);
}

TEST(GgufMalformed, OpeningAMissingOrNonRegularFileFails) {
  EXPECT_THROW(File("/nonexistent/x.gguf"), Error);
  EXPECT_THROW(File("/tmp"), Error);
}

}  // namespace
}  // namespace squeeze::gguf
