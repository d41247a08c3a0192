// tests/gguf/test_output_path.cpp — the one output path: AtomicFile (and so every writer
// built on it) refuses a command's declared inputs under any name, including through
// symlinks, except the one documented in-place update (OutputPolicy::replaces).
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/thrown_message.h"
#include "core/error.h"
#include "gguf/atomic_file.h"
#include "gguf/file_identity.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"

namespace squeeze::gguf {
namespace {

using testing::ScratchDir;

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

TEST(OutputPath, RefusesADeclaredInputThroughASymlinkAndLeavesItWhole) {
  ScratchDir dir;
  const std::string in = dir.file("text.txt");
  testing::write_bytes(in, bytes_of("the input"));
  ASSERT_EQ(::symlink(in.c_str(), dir.file("link.txt").c_str()), 0);
  {
    const DeclaredInputs inputs({in, ""});  // empty paths (absent optional inputs) are skipped
    for (const std::string& out : {in, dir.file("link.txt"), dir.path() + "/./text.txt"}) {
      const std::string m = thrown_message([&] { write_file_atomically(out, "{\"json\": 1}\n"); });
      EXPECT_NE(m.find("refusing to overwrite"), std::string::npos) << out << ": " << m;
      EXPECT_NE(m.find("text.txt"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
    EXPECT_EQ(testing::read_bytes(in), bytes_of("the input"));
    EXPECT_EQ(dir.list(), (std::vector<std::string>{"link.txt", "text.txt"}));  // no temporary left
    write_file_atomically(dir.file("report.json"), "{}\n");  // any other path is fine
    EXPECT_EQ(testing::read_bytes(dir.file("report.json")), bytes_of("{}\n"));
  }
  write_file_atomically(in, "replaced");  // no longer declared: an ordinary target
  EXPECT_EQ(testing::read_bytes(in), bytes_of("replaced"));
}

TEST(OutputPath, TheDeclaredInPlaceUpdateIsAllowedAndNothingElse) {
  ScratchDir dir;
  const std::string ckpt = dir.file("ckpt.gguf"), data = dir.file("data.txt");
  testing::write_bytes(ckpt, bytes_of("old checkpoint"));
  testing::write_bytes(data, bytes_of("data"));
  const DeclaredInputs inputs({ckpt, data});
  write_file_atomically(ckpt, "new checkpoint", {.replaces = ckpt});
  EXPECT_EQ(testing::read_bytes(ckpt), bytes_of("new checkpoint"));
  // `replaces` names one file: it does not open the other inputs.
  EXPECT_THROW(write_file_atomically(data, "x", {.replaces = ckpt}), Error);
  EXPECT_EQ(testing::read_bytes(data), bytes_of("data"));
  // The GGUF writer takes the same policy.
  EXPECT_THROW(Writer(data, {.replaces = ckpt}), Error);
  Writer w(ckpt, {.replaces = ckpt});
  w.finish();
}

TEST(OutputPath, ExtraInputsOfOneOutputAreRefusedToo) {
  ScratchDir dir;
  const std::string in = dir.file("in.bin");
  testing::write_bytes(in, bytes_of("in"));
  EXPECT_THROW(AtomicFile(in, {.inputs = {in}}), Error);
  EXPECT_NO_THROW(check_output_path(dir.file("new.bin"), {.inputs = {in}}));
}

}  // namespace
}  // namespace squeeze::gguf
