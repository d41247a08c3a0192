// safetensors/checkpoint.cpp — see checkpoint.h.
#include "safetensors/checkpoint.h"

#include <algorithm>
#include <filesystem>

#include "core/bounded_json.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace squeeze::safetensors {

namespace {

namespace fs = std::filesystem;

nlohmann::json read_json_object(const fs::path& path) {
  nlohmann::json j = parse_json_or_throw<nlohmann::json>(read_whole_file(path.string()), path.string(),
                                                         {.max_depth = 64, .max_object_keys = INT64_MAX});
  if (!j.is_object()) fail(path.string(), ": not a JSON object");
  return j;
}

}  // namespace

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(dir, ": not a directory (a Hugging Face checkpoint folder is expected)");
  const fs::path root(dir);
  if (!fs::exists(root / "config.json", ec)) fail(dir, ": no config.json");
  config_ = read_json_object(root / "config.json");

  const fs::path index_path = root / "model.safetensors.index.json";
  std::map<std::string, std::vector<std::string>> listed;  // shard → tensors the index puts there
  std::vector<std::string> shard_names;
  if (fs::exists(index_path, ec)) {
    const nlohmann::json index = read_json_object(index_path);
    const std::string where = index_path.string();
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      fail(where, ": weight_map missing or not an object");
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) fail(where, ": weight_map['", tensor, "'] is not a file name");
      const std::string name = shard.get<std::string>();
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
          name.find('\\') != std::string::npos)
        fail(where, ": weight_map['", tensor, "'] = '", name, "' is not a file name in the checkpoint folder");
      auto& tensors = listed[name];
      if (tensors.empty()) shard_names.push_back(name);
      tensors.push_back(tensor);
    }
    if (shard_names.empty()) fail(where, ": weight_map lists no tensors");
    std::sort(shard_names.begin(), shard_names.end());  // model-00001-of-N, model-00002-of-N, ...
  } else if (fs::exists(root / "model.safetensors", ec)) {
    shard_names.push_back("model.safetensors");
  } else {
    fail(dir, ": no model.safetensors or model.safetensors.index.json");
  }

  for (const std::string& name : shard_names) {
    shards_.push_back(std::make_unique<File>((root / name).string()));
    const File& shard = *shards_.back();
    for (const Tensor& t : shard.tensors()) {
      const auto [it, fresh] = by_name_.emplace(t.name, Entry{&t, &shard});
      if (!fresh) fail(shard.path(), ": tensor '", t.name, "' is also in ", it->second.shard->path());
    }
    for (const std::string& tensor : listed[name])
      if (!shard.find(tensor))
        fail(index_path.string(), ": lists '", tensor, "' in ", name, ", which does not hold it");
  }
}

const Tensor* Checkpoint::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.tensor;
}

std::vector<Checkpoint::Entry> Checkpoint::tensors() const {
  std::vector<Entry> out;
  out.reserve(by_name_.size());
  for (const auto& [name, e] : by_name_) out.push_back(e);
  return out;
}

}  // namespace squeeze::safetensors
