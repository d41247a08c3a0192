// tests/convert/test_hf_tokenizer.cpp — read_hf_tokenizer on malformed tokenizer files:
// fields of the wrong JSON type are one-line squeeze::Errors naming the files, not
// nlohmann exceptions (found by fuzz/fuzz_hf_config.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "convert/hf_tokenizer.h"
#include "core/error.h"

using namespace squeeze;

namespace {

// A directory holding only tokenizer.json with `text`.
std::string tokenizer_dir(const std::string& name, const std::string& text) {
  const std::string dir = ::testing::TempDir() + "hf_tokenizer_" + name + "_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json") << text;
  return dir;
}

std::string error_of(const std::string& dir) {
  try {
    convert::read_hf_tokenizer(dir, nlohmann::json::object(), 8);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(HfTokenizer, FieldsOfTheWrongJsonTypeAreErrorsNamingTheFiles) {
  for (const auto& [name, text] : std::initializer_list<std::pair<std::string, std::string>>{
           {"model_number", R"({"model": 5})"},
           {"type_number", R"({"model": {"type": 1}})"},
           {"pre_number", R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer": 7})"},
           {"use_regex_string", R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                                    "pre_tokenizer": {"type": "ByteLevel", "use_regex": "yes"}})"}}) {
    const std::string dir = tokenizer_dir(name, text);
    const std::string msg = error_of(dir);
    EXPECT_EQ(msg.rfind(dir + ": ", 0), 0u) << name << ": " << msg;
    EXPECT_NE(msg.find("wrong JSON type"), std::string::npos) << name << ": " << msg;
  }
}
