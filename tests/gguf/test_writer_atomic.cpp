// tests/gguf/test_writer_atomic.cpp — the writer's safety: a failed write leaves the
// previous file byte-for-byte intact and no temporary behind; the writer refuses to
// replace its own inputs (any path spelling, hard links) and files open for reading.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <stdexcept>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"

namespace squeeze::gguf {
namespace {

using testing::ScratchDir;

// A small valid GGUF at `path` whose content depends on `tag`.
void write_small(const std::string& path, uint32_t tag, WriterOptions opt = {}) {
  Writer w(path, std::move(opt));
  w.metadata().set("tag", Value::u32(tag));
  std::vector<uint8_t> b(128, static_cast<uint8_t>(tag));
  w.add_tensor({"t", GgmlType::F32, {32}}, b);
  w.finish();
}

TEST(GgufWriterAtomic, ProducerFailureLeavesTheOldFileUntouched) {
  ScratchDir dir;
  const std::string path = dir.file("m.gguf");
  write_small(path, 1);
  const auto before = testing::read_bytes(path);
  Writer w(path);
  w.metadata().set("tag", Value::u32(2));
  std::vector<uint8_t> big(1 << 20, 7);
  w.add_tensor({"a", GgmlType::F32, {1 << 18}}, big);
  w.add_tensor({"b", GgmlType::F32, {32}}, [](const ByteSink& out) {
    std::vector<uint8_t> half(64, 1);
    out(half);
    throw std::runtime_error("quantizer ran out of patience");
  });
  EXPECT_THROW(w.finish(), std::runtime_error);
  EXPECT_EQ(testing::read_bytes(path), before);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"m.gguf"});  // the temporary is gone
}

TEST(GgufWriterAtomic, ShortOrLongProducerIsAnErrorAndChangesNothing) {
  ScratchDir dir;
  const std::string path = dir.file("m.gguf");
  write_small(path, 1);
  const auto before = testing::read_bytes(path);
  for (size_t n : {size_t{64}, size_t{129}}) {
    Writer w(path);
    w.add_tensor({"t", GgmlType::F32, {32}}, [n](const ByteSink& out) {
      std::vector<uint8_t> bytes(n, 3);
      out(bytes);
    });
    try {
      w.finish();
      ADD_FAILURE() << "a producer of " << n << " bytes for a 128-byte tensor was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("producer delivered"), std::string::npos) << e.what();
    }
    EXPECT_EQ(testing::read_bytes(path), before);
    EXPECT_EQ(dir.list().size(), 1u);
  }
}

// Runs in the death-test child: exits 3 when the write failed with an Error.
[[noreturn]] void write_big_under_file_size_limit(const std::string& path) {
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit lim{1 << 16, 1 << 16};
  setrlimit(RLIMIT_FSIZE, &lim);
  Writer w(path);
  std::vector<uint8_t> big(1 << 20, 9);
  w.add_tensor({"big", GgmlType::F32, {1 << 18}}, big);
  try {
    w.finish();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::_Exit(3);
  }
  std::_Exit(0);
}

TEST(GgufWriterAtomic, DiskFullLeavesTheOldFileUntouched) {
  // A file-size limit makes write() fail with EFBIG part-way, like a full disk. The
  // limit is process-wide, so it is set in a forked child (a death test).
  ScratchDir dir;
  const std::string path = dir.file("m.gguf");
  write_small(path, 1);
  const auto before = testing::read_bytes(path);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(write_big_under_file_size_limit(path),
      ::testing::ExitedWithCode(3), "write to .* failed");
  EXPECT_EQ(testing::read_bytes(path), before);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"m.gguf"});
}

TEST(GgufWriterAtomic, RefusesToOverwriteADeclaredInputUnderAnyName) {
  ScratchDir dir;
  const std::string in = dir.file("in.gguf");
  write_small(in, 1);
  const auto before = testing::read_bytes(in);
  ASSERT_EQ(::link(in.c_str(), dir.file("hard.gguf").c_str()), 0);
  const std::string spellings[] = {in, dir.path() + "/./in.gguf", dir.path() + "/../" +
                                       dir.path().substr(dir.path().find_last_of('/') + 1) + "/in.gguf",
                                   dir.file("hard.gguf")};
  for (const std::string& out : spellings) {
    try {
      write_small(out, 2, {.inputs = {in}});
      ADD_FAILURE() << "overwrote the input through " << out;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("refusing to overwrite"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(testing::read_bytes(in), before);
  write_small(dir.file("other.gguf"), 3, {.inputs = {in}});  // a different target is fine
  EXPECT_EQ(File(dir.file("other.gguf")).metadata().get_u32("tag"), 3u);
}

TEST(GgufWriterAtomic, RefusesToOverwriteAFileOpenForReading) {
  ScratchDir dir;
  const std::string path = dir.file("m.gguf");
  write_small(path, 1);
  {
    const File open(path);
    try {
      write_small(path, 2);
      ADD_FAILURE() << "overwrote a mapped input";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("currently open for reading"), std::string::npos) << e.what();
    }
    // Also when the File was opened after the Writer was created: finish() re-checks.
    Writer w(dir.file("late.gguf"));
    write_small(dir.file("late.gguf"), 5);
    const File late(dir.file("late.gguf"));
    EXPECT_THROW(w.finish(), Error);
    EXPECT_EQ(late.metadata().get_u32("tag"), 5u);
  }
  write_small(path, 2);  // closed now: replacing it is allowed
  EXPECT_EQ(File(path).metadata().get_u32("tag"), 2u);
}

TEST(GgufWriterAtomic, ReplacingAnUnrelatedFileWorksAndBadTargetsFail) {
  ScratchDir dir;
  const std::string path = dir.file("m.gguf");
  write_small(path, 1);
  write_small(path, 2);
  EXPECT_EQ(File(path).metadata().get_u32("tag"), 2u);
  EXPECT_THROW(write_small(dir.file("missing-dir/x.gguf"), 1), Error);
  EXPECT_THROW(write_small(dir.path(), 1), Error);  // a directory
  Writer w(dir.file("once.gguf"));
  w.finish();
  EXPECT_THROW(w.finish(), Error);
  EXPECT_EQ(File(dir.file("once.gguf")).tensors().size(), 0u);
}

}  // namespace
}  // namespace squeeze::gguf
