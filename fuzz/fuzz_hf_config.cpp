// fuzz/fuzz_hf_config.cpp — what `squeeze convert` / `squeeze plan` read from a Hugging
// Face checkpoint directory: config.json (read_hf_config) and tokenizer.json +
// tokenizer_config.json (read_hf_tokenizer). The input is the three files joined by NULs
// (config, tokenizer, tokenizer_config); the tokenizer files go to a per-process temp
// directory, as read_hf_tokenizer reads a directory. Refusals must be squeeze::Errors.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "convert/hf_arch.h"
#include "convert/hf_tokenizer.h"
#include "core/bounded_json.h"
#include "core/error.h"
#include "fuzz_input.h"

using namespace squeeze;

namespace {

// Vocabulary sizes past this are left to read_hf_config alone: the token table is
// allocated up front, and the fuzzer would only measure malloc.
constexpr int64_t kMaxVocab = 4096;

const std::string& temp_dir() {
  static const std::string dir = [] {
    std::string d = "/tmp/squeeze-fuzz-hf-" + std::to_string(getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

void write_file(const std::string& path, std::string_view text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (!text.empty() && std::fwrite(text.data(), 1, text.size(), f) != text.size())) __builtin_trap();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [config_text, rest] = fuzz::split_at_nul(fuzz::as_text(data, size));
  const auto [tokenizer_text, tokenizer_config_text] = fuzz::split_at_nul(rest);

  // As safetensors::Checkpoint reads config.json.
  BoundedJson<nlohmann::json> config =
      parse_json_bounded<nlohmann::json>(config_text, {.max_depth = 64, .max_object_keys = 4096});
  int64_t n_vocab = 64;
  try {
    const convert::HfModel hf = convert::read_hf_config(config.value, "config.json");
    n_vocab = hf.config.n_vocab;
  } catch (const Error&) {
  }
  if (n_vocab <= 0 || n_vocab > kMaxVocab || tokenizer_text.empty()) return 0;

  const std::string dir = temp_dir();
  write_file(dir + "/tokenizer.json", tokenizer_text);
  const std::string cfg_path = dir + "/tokenizer_config.json";
  if (tokenizer_config_text.empty()) {
    std::filesystem::remove(cfg_path);
  } else {
    write_file(cfg_path, tokenizer_config_text);
  }
  try {
    (void)convert::read_hf_tokenizer(dir, config.value, n_vocab);
  } catch (const Error&) {
  }
  return 0;
}
