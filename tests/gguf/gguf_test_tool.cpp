// tests/gguf/gguf_test_tool.cpp — test-only helper for the Python cross-checks.
//
//   gguf_test_tool from-json SPEC.json OUT.gguf   write a GGUF with gguf::Writer from
//       {"alignment": 32?, "metadata": {key: value-json, ...},
//        "tensors": [{"name", "type": "Q8_0", "shape": [ne0, ...], "data_hex": "..."}]}
//       (value-json as in gguf/json.h, the format `squeeze inspect --json` prints)
//   gguf_test_tool corpus DIR                     write the malformed corpus to DIR, plus
//       DIR/manifest.json: [{"name", "file", "expect"}]
#include <cstdio>
#include <fstream>
#include <iostream>

#include "core/error.h"
#include "gguf/json.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"
#include "malformed_corpus.h"

namespace {

using namespace squeeze::gguf;

std::vector<uint8_t> from_hex(const std::string& s) {
  SQZ_CHECK(s.size() % 2 == 0, "odd-length hex string");
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(std::stoul(s.substr(2 * i, 2), nullptr, 16));
  return out;
}

int from_json(const std::string& spec_path, const std::string& out_path) {
  std::ifstream in(spec_path);
  SQZ_CHECK(in.good(), "cannot read ", spec_path);
  const Json spec = Json::parse(in);
  WriterOptions opt;
  if (spec.contains("alignment")) opt.alignment = spec["alignment"].get<uint32_t>();
  Writer w(out_path, opt);
  for (const auto& [key, value] : spec.at("metadata").items()) w.metadata().set(key, value_from_json(value));
  std::vector<std::vector<uint8_t>> data;  // kept alive until finish()
  data.reserve(spec.value("tensors", Json::array()).size());
  for (const Json& t : spec.value("tensors", Json::array())) {
    const auto type = ggml_type_from_name(t.at("type").get<std::string>());
    SQZ_CHECK(type.has_value(), "unknown tensor type ", t.at("type").dump());
    data.push_back(from_hex(t.at("data_hex").get<std::string>()));
    w.add_tensor({t.at("name").get<std::string>(), *type, t.at("shape").get<std::vector<int64_t>>()}, data.back());
  }
  w.finish();
  return 0;
}

int corpus(const std::string& dir) {
  Json manifest = Json::array();
  for (const auto& c : squeeze::gguf::testing::malformed_corpus()) {
    const std::string file = dir + "/" + c.name + ".gguf";
    squeeze::gguf::testing::write_bytes(file, c.bytes);
    manifest.push_back({{"name", c.name}, {"file", file}, {"expect", c.expect}});
  }
  std::ofstream(dir + "/manifest.json") << manifest.dump(1) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "from-json" && argc == 4) return from_json(argv[2], argv[3]);
    if (cmd == "corpus" && argc == 3) return corpus(argv[2]);
    std::fprintf(stderr, "usage: gguf_test_tool from-json SPEC.json OUT.gguf | corpus DIR\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_test_tool: %s\n", e.what());
    return 1;
  }
}
