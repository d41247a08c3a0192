// safetensors/checkpoint.h — a Hugging Face checkpoint directory: config.json and the
// weights, one `model.safetensors` or shards listed by `model.safetensors.index.json`
// ({"weight_map": {tensor: shard file}}), every shard memory-mapped.
//
// Checked: the directory and config.json (a JSON object) exist; with an index, its
// weight_map is an object of plain file names inside the directory (no paths), every
// listed tensor is in the shard the index names, and no tensor is in two shards. Errors
// are one line naming the file.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "safetensors/reader.h"

namespace squeeze::safetensors {

class Checkpoint {
 public:
  explicit Checkpoint(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }
  // The shard files sorted by name (one for an unsharded checkpoint).
  const std::vector<std::unique_ptr<File>>& shards() const { return shards_; }
  const Tensor* find(std::string_view name) const;
  // Every tensor, sorted by name, with the shard it is in.
  struct Entry {
    const Tensor* tensor;
    const File* shard;
  };
  std::vector<Entry> tensors() const;

 private:
  std::string dir_;
  nlohmann::json config_;
  std::vector<std::unique_ptr<File>> shards_;
  std::map<std::string, Entry, std::less<>> by_name_;
};

}  // namespace squeeze::safetensors
