// tests/safetensors/test_checkpoint.cpp — Hugging Face checkpoint folders: one file or
// shards through the index, config.json read, every tensor found in its shard; broken
// folders (missing files, an index pointing outside the folder or at the wrong shard, a
// tensor in two shards) are refused with one line naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <unistd.h>

#include "common/thrown_message.h"
#include "core/error.h"
#include "safetensors/checkpoint.h"
#include "st_test_util.h"

namespace squeeze::safetensors {
namespace {

namespace fs = std::filesystem;

class CheckpointDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("squeeze_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write("config.json", R"({"model_type": "llama", "hidden_size": 4})");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& bytes) { write_bytes((dir_ / name).string(), bytes); }
  // A shard holding F32 tensors of 2 values each, named as given.
  void shard(const std::string& name, const std::vector<std::string>& tensors) {
    std::string header = "{", data;
    for (size_t i = 0; i < tensors.size(); ++i) {
      header += (i ? "," : "") + ("\"" + tensors[i] + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" +
                                  std::to_string(8 * i) + "," + std::to_string(8 * i + 8) + "]}");
      data += std::string(8, char('a' + i));
    }
    write(name, file_bytes(header + "}", data));
  }
  std::string error() { return thrown_message([&] { Checkpoint c(dir_.string()); }); }

  fs::path dir_;
};

TEST_F(CheckpointDir, OneFile) {
  shard("model.safetensors", {"b", "a"});
  Checkpoint c(dir_.string());
  EXPECT_EQ(c.config()["model_type"], "llama");
  ASSERT_EQ(c.shards().size(), 1u);
  const auto all = c.tensors();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].tensor->name, "a");  // sorted by name
  EXPECT_EQ(all[1].tensor->name, "b");
  EXPECT_EQ(c.find("b")->data[0], 'a');  // b is the first in its file
  EXPECT_EQ(c.find("nope"), nullptr);
}

TEST_F(CheckpointDir, ShardsThroughTheIndex) {
  shard("model-00001-of-00002.safetensors", {"x.weight", "y.weight"});
  shard("model-00002-of-00002.safetensors", {"z.weight"});
  write("model.safetensors.index.json",
        R"({"metadata":{"total_size":24},"weight_map":{"x.weight":"model-00001-of-00002.safetensors",)"
        R"("y.weight":"model-00001-of-00002.safetensors","z.weight":"model-00002-of-00002.safetensors"}})");
  Checkpoint c(dir_.string());
  ASSERT_EQ(c.shards().size(), 2u);
  EXPECT_EQ(c.tensors().size(), 3u);
  EXPECT_NE(c.find("z.weight"), nullptr);
  for (const auto& e : c.tensors()) EXPECT_EQ(e.shard->find(e.tensor->name), e.tensor);
}

TEST_F(CheckpointDir, BrokenFoldersFailWithOneLine) {
  const std::string s1 = "s1.safetensors", s2 = "s2.safetensors";
  struct Case {
    const char* what;
    std::function<void()> setup;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no weights", [] {}, "no model.safetensors or model.safetensors.index.json"},
      {"bad config", [&] { write("config.json", "{"); shard("model.safetensors", {"a"}); }, "config.json: not valid JSON"},
      {"config not object", [&] { write("config.json", "[]"); shard("model.safetensors", {"a"}); }, "not a JSON object"},
      {"no config", [&] { fs::remove(dir_ / "config.json"); shard("model.safetensors", {"a"}); }, "no config.json"},
      {"index without map", [&] { write("model.safetensors.index.json", "{}"); }, "weight_map missing"},
      {"empty map", [&] { write("model.safetensors.index.json", R"({"weight_map":{}})"); }, "lists no tensors"},
      {"path in map", [&] { write("model.safetensors.index.json", R"({"weight_map":{"a":"../x.safetensors"}})"); },
       "is not a file name in the checkpoint folder"},
      {"missing shard", [&] { write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors"}})"); },
       "s1.safetensors"},
      {"wrong shard", [&] {
         shard(s1, {"a"});
         shard(s2, {"b"});
         write("model.safetensors.index.json", R"({"weight_map":{"a":"s2.safetensors","b":"s2.safetensors"}})");
       }, "lists 'a' in s2.safetensors, which does not hold it"},
      {"in two shards", [&] {
         shard(s1, {"a", "b"});
         shard(s2, {"b"});
         write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
       }, "tensor 'b' is also in"},
      {"bad shard", [&] {
         write(s1, "garbage");
         write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors"}})");
       }, "s1.safetensors: 7 bytes"},
  };
  for (const Case& c : cases) {
    TearDown();
    SetUp();
    c.setup();
    const std::string m = error();
    EXPECT_NE(m.find(c.message), std::string::npos) << c.what << ": " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << c.what;
  }
  EXPECT_NE(thrown_message([&] { Checkpoint c((dir_ / "config.json").string()); }).find("not a directory"),
            std::string::npos);
}

}  // namespace
}  // namespace squeeze::safetensors
