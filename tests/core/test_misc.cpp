// tests/core/test_misc.cpp — mapped files, errors, progress, CPU features.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <filesystem>
#include <fstream>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/progress.h"

namespace squeeze {
namespace {

std::filesystem::path temp_path(const char* name) {
  return std::filesystem::temp_directory_path() / (std::string("squeeze_test_") + name + std::to_string(::getpid()));
}

TEST(MappedFile, MapsContentsReadOnly) {
  const auto path = temp_path("map");
  {
    std::ofstream f(path, std::ios::binary);
    f << "hello squeeze";
  }
  MappedFile m(path.string());
  ASSERT_EQ(m.size(), 13u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), m.size()), "hello squeeze");
  MappedFile moved(std::move(m));
  EXPECT_EQ(moved.size(), 13u);
  std::filesystem::remove(path);
}

TEST(MappedFile, ErrorsNameThePath) {
  try {
    MappedFile m("/nonexistent/dir/model.gguf");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.gguf"), std::string::npos);
  }
  EXPECT_THROW(MappedFile("/tmp"), Error);  // a directory
  const auto empty = temp_path("empty");
  { std::ofstream f(empty); }
  MappedFile e(empty.string());
  EXPECT_EQ(e.size(), 0u);
  std::filesystem::remove(empty);
}

// A FIFO is rejected before it is opened: open() on one would block until a writer came
// (`squeeze inspect a.fifo` hung). Run in a thread so a regression fails, not hangs.
TEST(MappedFile, RejectsAFifoWithoutBlocking) {
  const auto fifo = temp_path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto result = std::async(std::launch::async, [&] {
    try {
      MappedFile m(fifo.string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  });
  const bool finished = result.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!finished) {
    // Unblock the stuck open() so the test can end, then fail.
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  const std::string message = result.get();
  std::filesystem::remove(fifo);
  ASSERT_TRUE(finished) << "MappedFile blocked on a FIFO";
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
}

TEST(Error, ContextChains) {
  try {
    try {
      SQZ_CHECK(1 + 1 == 3, "bad sum ", 2);
    } catch (const Error& e) {
      throw e.with_context("model.gguf");
    }
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "model.gguf: bad sum 2");
  }
}

TEST(Progress, RendersBarAndEta) {
  Progress p("quantize", 10, nullptr);
  p.advance(5, "tensor blk.0");
  const std::string line = p.render(10);
  EXPECT_NE(line.find("[#####-----]"), std::string::npos) << line;
  EXPECT_NE(line.find("50%"), std::string::npos) << line;
  EXPECT_NE(line.find("5/10"), std::string::npos) << line;
  EXPECT_NE(line.find("tensor blk.0"), std::string::npos) << line;
  p.advance(100);
  EXPECT_EQ(p.done(), 10);
}

TEST(Progress, PlainLinesWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  {
    Progress p("work", 100, f);
    for (int i = 0; i < 100; ++i) p.advance();
  }
  std::rewind(f);
  int lines = 0;
  for (int c; (c = std::fgetc(f)) != EOF;) {
    if (c == '\n') ++lines;
    ASSERT_NE(c, '\r');
  }
  std::fclose(f);
  EXPECT_GE(lines, 10);
  EXPECT_LE(lines, 12);
}

TEST(CpuFeatures, ConsistentImplications) {
  const CpuFeatures& f = cpu_features();
  EXPECT_GE(f.logical_cores, 1);
  if (f.avx2) {
    EXPECT_TRUE(f.avx);
  }
  if (f.has_avx512()) {
    EXPECT_TRUE(f.avx512f);
  }
  EXPECT_FALSE(f.describe().empty());
#if defined(__x86_64__)
  EXPECT_TRUE((__builtin_cpu_supports("avx2") != 0) == f.avx2);
  EXPECT_TRUE((__builtin_cpu_supports("fma") != 0) == f.fma);
#endif
}

}  // namespace
}  // namespace squeeze
