// tools/cmd_inspect.cpp — `squeeze inspect FILE.gguf`: header, metadata and tensor
// table of a GGUF file (like gguf-dump), or the same as JSON with --json; a
// .safetensors file (a Hugging Face checkpoint shard) or a whole checkpoint folder gets
// the same treatment.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "gguf/json.h"
#include "gguf/reader.h"
#include "safetensors/checkpoint.h"
#include "safetensors/reader.h"

namespace {

using squeeze::gguf::File;
using squeeze::gguf::TensorInfo;
using squeeze::gguf::Value;
using squeeze::gguf::ValueType;

std::string type_label(const Value& v) {
  if (const auto* a = v.array_if()) return "[" + std::string(value_type_name(a->element_type)) + "]";
  return std::string(value_type_name(v.type()));
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = static_cast<double>(n);
  int u = 0;
  while (x >= 1024.0 && u < 4) {
    x /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", x, units[u]);
  return buf;
}

void print_text(const File& f, size_t max_items) {
  std::printf("file: %s\n", f.path().c_str());
  std::printf("GGUF v%u, %zu metadata entries, %zu tensors, alignment %" PRIu64 ", data at offset %" PRIu64
              ", %" PRIu64 " bytes\n\n",
              f.version(), f.metadata().size(), f.tensors().size(), f.alignment(), f.data_offset(), f.file_size());

  std::printf("metadata:\n");
  size_t i = 0;
  for (const auto& kv : f.metadata().entries())
    std::printf("  %4zu: %-9s %s = %s\n", ++i, type_label(kv.value).c_str(), kv.key.c_str(),
                kv.value.to_display(max_items).c_str());

  size_t name_w = 4;
  for (const TensorInfo& t : f.tensors()) name_w = std::max(name_w, t.name.size());
  std::printf("\ntensors:\n  %5s  %-*s  %-7s  %-26s %14s %14s\n", "idx", static_cast<int>(name_w), "name", "type",
              "shape", "bytes", "offset");
  uint64_t params = 0, bytes = 0;
  i = 0;
  for (const TensorInfo& t : f.tensors()) {
    std::printf("  %5zu  %-*s  %-7s  %-26s %14" PRIu64 " %14" PRIu64 "\n", i++, static_cast<int>(name_w),
                t.name.c_str(), std::string(t.type_info().name).c_str(), t.shape_string().c_str(), t.n_bytes,
                t.offset);
    params += static_cast<uint64_t>(t.n_elements);
    bytes += t.n_bytes;
  }
  const double bpw = params ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0.0;
  std::printf("\ntotals: %zu tensors, %" PRIu64 " parameters, %" PRIu64 " bytes (%s) of tensor data, %.4f bits per weight\n",
              f.tensors().size(), params, bytes, human_bytes(bytes).c_str(), bpw);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

void print_safetensors(const std::string& path, bool json) {
  namespace st = squeeze::safetensors;
  const st::File f(path);
  if (json) {
    nlohmann::ordered_json j;
    j["format"] = "safetensors";
    j["header_bytes"] = f.header_bytes();
    j["metadata"] = f.metadata();
    j["tensors"] = nlohmann::ordered_json::array();
    for (const auto& t : f.tensors())
      j["tensors"].push_back({{"name", t.name}, {"dtype", st::dtype_name(t.dtype)}, {"shape", t.shape},
                              {"data_offsets", {t.begin, t.end}}});
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  std::printf("file: %s\nsafetensors, %zu tensors, header %" PRIu64 " bytes\n", path.c_str(), f.tensors().size(),
              f.header_bytes());
  for (const auto& [k, v] : f.metadata()) std::printf("  metadata: %s = %s\n", k.c_str(), v.c_str());
  size_t name_w = 4;
  for (const auto& t : f.tensors()) name_w = std::max(name_w, t.name.size());
  std::printf("\ntensors:\n  %5s  %-*s  %-7s  %-26s %14s %14s\n", "idx", static_cast<int>(name_w), "name", "dtype",
              "shape", "bytes", "offset");
  uint64_t params = 0, bytes = 0;
  size_t i = 0;
  for (const auto& t : f.tensors()) {
    std::printf("  %5zu  %-*s  %-7s  %-26s %14" PRIu64 " %14" PRIu64 "\n", i++, static_cast<int>(name_w), t.name.c_str(),
                st::dtype_name(t.dtype), shape_text(t.shape).c_str(), t.end - t.begin, t.begin);
    params += static_cast<uint64_t>(t.elements());
    bytes += t.end - t.begin;
  }
  std::printf("\ntotals: %zu tensors, %" PRIu64 " parameters, %" PRIu64 " bytes (%s) of tensor data\n",
              f.tensors().size(), params, bytes, human_bytes(bytes).c_str());
}

void print_checkpoint(const std::string& dir, bool json) {
  namespace st = squeeze::safetensors;
  const st::Checkpoint c(dir);
  const auto all = c.tensors();
  if (json) {
    nlohmann::ordered_json j;
    j["format"] = "huggingface-checkpoint";
    j["config"] = c.config();
    j["shards"] = nlohmann::ordered_json::array();
    for (const auto& s : c.shards()) j["shards"].push_back(std::filesystem::path(s->path()).filename().string());
    j["tensors"] = nlohmann::ordered_json::array();
    for (const auto& e : all)
      j["tensors"].push_back({{"name", e.tensor->name}, {"dtype", st::dtype_name(e.tensor->dtype)},
                              {"shape", e.tensor->shape},
                              {"shard", std::filesystem::path(e.shard->path()).filename().string()}});
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  const auto& cfg = c.config();
  std::printf("checkpoint: %s\nmodel_type %s, %zu shards, %zu tensors\n", dir.c_str(),
              cfg.contains("model_type") ? cfg["model_type"].dump().c_str() : "(none)", c.shards().size(), all.size());
  size_t name_w = 4;
  for (const auto& e : all) name_w = std::max(name_w, e.tensor->name.size());
  std::printf("\ntensors:\n  %-*s  %-7s  %-26s %s\n", static_cast<int>(name_w), "name", "dtype", "shape", "shard");
  uint64_t params = 0, bytes = 0;
  for (const auto& e : all) {
    std::printf("  %-*s  %-7s  %-26s %s\n", static_cast<int>(name_w), e.tensor->name.c_str(),
                st::dtype_name(e.tensor->dtype), shape_text(e.tensor->shape).c_str(),
                std::filesystem::path(e.shard->path()).filename().c_str());
    params += static_cast<uint64_t>(e.tensor->elements());
    bytes += e.tensor->data.size();
  }
  std::printf("\ntotals: %zu tensors, %" PRIu64 " parameters, %" PRIu64 " bytes (%s) of tensor data\n", all.size(),
              params, bytes, human_bytes(bytes).c_str());
}

int run_inspect(int argc, char** argv) {
  squeeze::cli::Args args("inspect", "inspect FILE.gguf|FILE.safetensors|HF_DIR [--json] [--items N]",
                          "Validate a GGUF file and print its header, metadata and tensor table. A file named\n"
                          "*.safetensors is read as a safetensors checkpoint shard (dtypes, shapes, offsets), a\n"
                          "folder as a Hugging Face checkpoint (config.json, shards through the index).");
  args.flag({"--json"}, "machine-readable output (full arrays)");
  args.int_option({"--items"}, "N", "array items shown per metadata value in text output", {0, int64_t{1} << 32}, "8");
  if (!args.parse(argc, argv)) return 0;
  const std::string& path = args.positional_at(0, "FILE.gguf");
  if (args.positional().size() > 1) squeeze::fail("unexpected extra argument '", args.positional()[1], "'");
  const int64_t items = args.get_int("--items");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    print_checkpoint(path, args.has("--json"));
    return 0;
  }
  if (path.size() > 12 && path.ends_with(".safetensors")) {
    print_safetensors(path, args.has("--json"));
    return 0;
  }

  const File f(path);
  if (args.has("--json")) {
    // Non-UTF-8 bytes in strings are replaced rather than failing the whole dump.
    std::cout << squeeze::gguf::file_to_json(f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    print_text(f, static_cast<size_t>(items));
  }
  return 0;
}

}  // namespace

SQZ_COMMAND("inspect", "header, metadata and tensor table of a GGUF or safetensors file (--json for machines)", run_inspect);
