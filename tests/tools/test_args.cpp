// tests/tools/test_args.cpp — the one checked routine behind every numeric option:
// whole-string parses only, ranges enforced, no silent narrowing, ranges in --help.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "args.h"
#include "common/thrown_message.h"

namespace squeeze::cli {
namespace {

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos; }

TEST(ParseInt, AcceptsWholeDecimalIntegersInRange) {
  EXPECT_EQ(parse_int("--n", "0", {0, 10}), 0);
  EXPECT_EQ(parse_int("--n", "10", {0, 10}), 10);
  EXPECT_EQ(parse_int("--n", "-5", {-10, 10}), -5);
  EXPECT_EQ(parse_int("--n", "9223372036854775807", {}), INT64_MAX);
}

TEST(ParseInt, RejectsJunkOverflowAndOutOfRangeWithAOneLineErrorNamingTheOption) {
  for (const char* bad : {"", " 5", "5 ", "+5", "5x", "0x10", "1e3", "1.0", "--5", "nan", "inf",
                          "99999999999999999999", "4294967336", "-1", "11"}) {
    const std::string m = thrown_message([&] { parse_int("--top-k", bad, {0, 10}); });
    EXPECT_NE(m.find("--top-k"), std::string::npos) << bad << ": " << m;
    EXPECT_NE(m, "(no error)") << bad;
    EXPECT_TRUE(one_line(m)) << m;
  }
  // The range is in the message.
  EXPECT_NE(thrown_message([] { parse_int("--top-k", "-7", {0, 10}); }).find("0 <= value <= 10"), std::string::npos);
}

TEST(ParseReal, AcceptsDecimalAndExponentForms) {
  EXPECT_DOUBLE_EQ(parse_real("--x", "0.5", {}), 0.5);
  EXPECT_DOUBLE_EQ(parse_real("--x", "1e-3", {}), 1e-3);
  EXPECT_DOUBLE_EQ(parse_real("--x", "-2", {}), -2.0);
  EXPECT_DOUBLE_EQ(parse_real("--x", ".25", {}), 0.25);
  EXPECT_DOUBLE_EQ(parse_real("--top-p", "1", {.min = 0, .max = 1, .min_open = true}), 1.0);
}

TEST(ParseReal, RejectsHexFloatsInfNanSpacesJunkAndOpenEnds) {
  for (const char* bad : {"", " 0.5", "0.5 ", "+0.5", "0x1p-1", "inf", "-inf", "nan", "infinity", "1e999", "0.5x",
                          "1,5"}) {
    const std::string m = thrown_message([&] { parse_real("--temp", bad, {.min = 0}); });
    EXPECT_NE(m.find("--temp"), std::string::npos) << bad << ": " << m;
    EXPECT_TRUE(one_line(m)) << m;
  }
  const RealRange top_p{.min = 0, .max = 1, .min_open = true};
  EXPECT_NE(thrown_message([&] { parse_real("--top-p", "0", top_p); }), "(no error)");
  EXPECT_NE(thrown_message([&] { parse_real("--top-p", "5", top_p); }), "(no error)");
  EXPECT_NE(thrown_message([] { parse_real("--temp", "-1", {.min = 0}); }), "(no error)");
  EXPECT_EQ(describe(top_p, "P"), "0 < P <= 1");
}

// Args::parse checks every numeric option, given or default, before the command runs.
struct Argv {
  std::vector<std::string> items;
  std::vector<char*> ptrs;
  explicit Argv(std::vector<std::string> a) : items(std::move(a)) {
    for (auto& s : items) ptrs.push_back(s.data());
  }
  int argc() const { return static_cast<int>(ptrs.size()); }
  char** argv() { return ptrs.data(); }
};

Args sample_args() {
  Args a("demo", "demo [options]", "test");
  a.int_option({"-k", "--top-k"}, "K", "top-k", {0, 2147483647}, "40")
      .real_option({"--temp"}, "T", "temperature", {.min = 0}, "0.8")
      .threads_option()
      .option({"--name"}, "TEXT", "text");
  return a;
}

TEST(Args, ParseRejectsBadNumbersUpFrontAndNarrowsOnlyWithinRange) {
  {
    Args a = sample_args();
    Argv v({"--top-k", "4294967336"});  // was 40 after an int32 cast
    EXPECT_NE(thrown_message([&] { a.parse(v.argc(), v.argv()); }).find("-k/--top-k"), std::string::npos);
  }
  {
    Args a = sample_args();
    Argv v({"--temp=inf"});
    EXPECT_NE(thrown_message([&] { a.parse(v.argc(), v.argv()); }).find("--temp"), std::string::npos);
  }
  {
    Args a = sample_args();
    Argv v({"-t", std::to_string(max_threads() + 1)});
    EXPECT_NE(thrown_message([&] { a.parse(v.argc(), v.argv()); }).find("--threads"), std::string::npos);
  }
  {
    Args a = sample_args();
    Argv v({"-k", "7", "--temp", "0", "-t", std::to_string(max_threads())});
    ASSERT_TRUE(a.parse(v.argc(), v.argv()));
    EXPECT_EQ(a.get_int32("--top-k"), 7);
    EXPECT_EQ(a.get_double("--temp"), 0.0);
    EXPECT_EQ(a.get_int32("-t"), max_threads());
    // Reading a text option as a number is a programming error, not a silent parse.
    EXPECT_NE(thrown_message([&] { a.get_int("--name"); }).find("internal"), std::string::npos);
  }
}

TEST(Args, UsageStatesRangesAndTheThreadCap) {
  const std::string u = sample_args().usage();
  EXPECT_NE(u.find("0 <= K <= 2147483647; default 40"), std::string::npos) << u;
  EXPECT_NE(u.find("T >= 0; default 0.8"), std::string::npos) << u;
  EXPECT_NE(u.find("0 <= N <= " + std::to_string(max_threads())), std::string::npos) << u;
}

TEST(Args, UsageGroupsOptionsUnderTheirHeadings) {
  Args a("x", "x [options]", "Test.");
  a.option({"--model"}, "FILE", "the model").group("sampling").real_option({"--temp"}, "T", "temperature", {.min = 0})
      .group("output").flag({"--quiet"}, "say less");
  const std::string u = a.usage();
  const size_t options = u.find("\noptions:\n"), sampling = u.find("\nsampling:\n"), output = u.find("\noutput:\n");
  ASSERT_NE(options, std::string::npos) << u;
  ASSERT_NE(sampling, std::string::npos) << u;
  ASSERT_NE(output, std::string::npos) << u;
  EXPECT_LT(options, u.find("--model"));
  EXPECT_LT(u.find("--model"), sampling);
  EXPECT_LT(sampling, u.find("--temp"));
  EXPECT_LT(u.find("--temp"), output);
  EXPECT_LT(output, u.find("--quiet"));
}

}  // namespace
}  // namespace squeeze::cli

TEST(ArgsIntList, ParsesCommaSeparatedIntegersInRange) {
  using squeeze::cli::parse_int_list;
  EXPECT_EQ(parse_int_list("--x", "3", {0, 10}), std::vector<int64_t>({3}));
  EXPECT_EQ(parse_int_list("--x", "0,10,7", {0, 10}), std::vector<int64_t>({0, 10, 7}));
  for (const char* bad : {"", "1,", ",1", "1,,2", "1, 2", "11", "-1", "1.5", "a"})
    EXPECT_THROW(parse_int_list("--x", bad, {0, 10}), std::exception) << bad;
}

namespace squeeze::cli {
namespace {

// Files the command reads and writes: refused up front, whatever the spelling.
TEST(ArgsFiles, AnOutputMayNotBeAnInputOrAnotherOutput) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("sqz_args_files_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "hf");
  for (const char* f : {"data.txt", "hf/config.json", "ckpt.gguf"}) std::ofstream(dir / f) << "x";
  const auto args = [] {
    Args a("t", "t", "t");
    a.option({"--data"}, "FILE", "in").reads().option({"--resume"}, "C", "in").reads()
        .option({"-o", "--out"}, "FILE", "out").writes().option({"--plot"}, "FILE", "out").writes()
        .option({"--checkpoint"}, "FILE", "out").writes("--resume").reads_positional(0);
    return a;
  };
  const auto parse = [&](std::vector<std::string> argv) {
    return thrown_message([&] {
      Args a = args();
      Argv v(argv);
      a.parse(v.argc(), v.argv());
    });
  };
  const std::string d = dir.string();
  EXPECT_NE(parse({"--data", d + "/data.txt", "-o", d + "/./data.txt"}).find("input file"), std::string::npos);
  EXPECT_NE(parse({"-o", d + "/x.gguf", "--plot", d + "/x.gguf"}).find("both name"), std::string::npos);
  EXPECT_NE(parse({"-o", d + "/new.gguf", "--plot", d + "/sub/../new.gguf"}).find("both name"), std::string::npos);
  EXPECT_NE(parse({d + "/hf", "-o", d + "/hf/config.json"}).find("input folder"), std::string::npos);
  EXPECT_EQ(parse({d + "/hf", "-o", d + "/hf/model.gguf"}), "(no error)");  // a new file in the folder is fine
  EXPECT_NE(parse({"--resume", d + "/ckpt.gguf", "-o", d + "/ckpt.gguf"}).find("input file"), std::string::npos);
  // The documented in-place update: a resumed checkpoint rewritten by --checkpoint.
  EXPECT_EQ(parse({"--resume", d + "/ckpt.gguf", "--checkpoint", d + "/ckpt.gguf"}), "(no error)");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace squeeze::cli
