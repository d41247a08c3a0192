// tests/quantize/quantize_test_util.h — shared fixtures: a temp directory, a small
// random-weight model whose rows all fit the K-quant blocks, error expectations.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/error.h"
#include "model/config.h"
#include "model/random_model.h"

namespace squeeze::quantize_test {

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("sqz_quantize_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// glimmer-tiny widened so that every matrix row is a multiple of 256 (K-quants fit):
// 2 layers, n_embd 256, q_dim 256, kv_dim 128, n_ff 512, vocab 512 (~1.3M weights, so
// every preset quantizes in well under a second even under the sanitizers' slowdown).
inline model::ModelConfig small_config() {
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.n_layer = 2;
  c.is_local = model::period_pattern(2, 4);
  c.n_embd = 256, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 64, c.n_ff = 512, c.n_vocab = 512;
  return c;
}

inline std::string write_small_model(const TempDir& dir, const model::ModelConfig& c = small_config(),
                                     const std::string& name = "small.gguf") {
  const std::string path = dir.file(name);
  model::write_random_model({.config = c, .type = gguf::GgmlType::F32, .seed = 7, .path = path});
  return path;
}

inline void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; wanted one mentioning '" << needle << "'";
  } catch (const squeeze::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace squeeze::quantize_test
