// convert/hf_tokenizer.cpp — see hf_tokenizer.h.
#include "convert/hf_tokenizer.h"

#include <filesystem>
#include <map>

#include "core/bounded_json.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "text/normalizer.h"
#include "text/pretokenize.h"

namespace squeeze::convert {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// GGUF token types (llama.cpp's llama_token_type).
constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

json read_json(const fs::path& path) {
  // A std::map-backed json: a vocabulary's 150k keys insert in log time, so only depth is bounded.
  json j = parse_json_or_throw<json>(read_whole_file(path.string()), path.string(),
                                     {.max_depth = 64, .max_object_keys = INT64_MAX});
  if (!j.is_object()) fail(path.string(), ": not a JSON object");
  return j;
}

// The regexes the tokenizer splits with, in order: each Split step's pattern, then
// ByteLevel's own GPT-2 regex when it has use_regex.
std::vector<std::string> split_patterns(const json& pre, const std::string& where, bool& byte_level) {
  std::vector<std::string> out;
  if (pre.is_null()) return out;
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    for (const json& step : pre.value("pretokenizers", json::array())) {
      auto more = split_patterns(step, where, byte_level);
      out.insert(out.end(), more.begin(), more.end());
    }
  } else if (type == "Split") {
    const json& p = pre.value("pattern", json::object());
    if (p.contains("Regex") && p["Regex"].is_string()) {
      out.push_back(p["Regex"].get<std::string>());
    } else {
      fail(where, ": a Split pre-tokenizer without a regex pattern is not supported");
    }
  } else if (type == "ByteLevel") {
    byte_level = true;
    if (pre.value("use_regex", true))
      out.push_back(text::pre_tokenizer_patterns(text::PreTokenizer::gpt2).front());
  } else if (type == "Digits") {
    out.push_back(pre.value("individual_digits", false) ? R"re(\p{N})re" : R"re(\p{N}+)re");
  } else {
    fail(where, ": pre-tokenizer '", type, "' is not supported");
  }
  return out;
}

// The GGUF name whose regex list is exactly `patterns` (the first name listed wins, as
// llama.cpp's converter names most vocabularies by model: "gpt2", "llama-bpe", ...).
std::string pre_name(const std::vector<std::string>& patterns, const std::string& where) {
  static const std::vector<std::pair<const char*, text::PreTokenizer>> preferred = {
      {"gpt-2", text::PreTokenizer::gpt2},        {"llama-bpe", text::PreTokenizer::llama3},
      {"qwen2", text::PreTokenizer::qwen2},       {"smollm", text::PreTokenizer::starcoder},
      {"deepseek-llm", text::PreTokenizer::deepseek_llm}, {"deepseek-coder", text::PreTokenizer::deepseek_coder},
      {"deepseek-v3", text::PreTokenizer::deepseek_v3},   {"falcon", text::PreTokenizer::falcon},
      {"qwen35", text::PreTokenizer::qwen35},     {"bloom", text::PreTokenizer::bloom},
      {"viking", text::PreTokenizer::viking},     {"tekken", text::PreTokenizer::tekken},
      {"gpt-4o", text::PreTokenizer::gpt4o},
  };
  for (const auto& [name, kind] : preferred)
    if (text::pre_tokenizer_patterns(kind) == patterns) return name;
  fail(where, ": the pre-tokenizer's regexes match none squeeze knows (", patterns.size(),
       " patterns; a wrong split would silently change every token id)");
}

// A special token named in tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> token_text(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}

// tokenizer.json's normalizer as squeeze's steps (text/normalizer.h); what squeeze cannot
// run is refused, never dropped: the ids would differ from Hugging Face's.
void add_normalizer_steps(const json& n, const std::string& where, std::vector<std::string>& out, int depth) {
  if (n.is_null()) return;
  if (!n.is_object() || !n.contains("type") || !n["type"].is_string() || depth > 8)
    fail(where, ": a normalizer must be an object with a \"type\"");
  const std::string type = n["type"].get<std::string>();
  if (type == "Sequence") {
    if (!n.contains("normalizers") || !n["normalizers"].is_array()) fail(where, ": a Sequence normalizer needs \"normalizers\"");
    for (const json& s : n["normalizers"]) add_normalizer_steps(s, where, out, depth + 1);
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD" || type == "Lowercase") {
    out.push_back(type);
  } else if (type == "Strip") {
    out.push_back(std::string("Strip ") + (n.value("strip_left", true) ? "1" : "0") + " " + (n.value("strip_right", true) ? "1" : "0"));
  } else if (type == "Replace") {
    const json& p = n.value("pattern", json());
    if (!p.is_object() || !p.contains("String") || !p["String"].is_string() || !n.value("content", json()).is_string())
      fail(where, ": a Replace normalizer with a regex pattern is not supported (only a plain string)");
    out.push_back(text::Normalizer::replace_step(p["String"].get<std::string>(), n["content"].get<std::string>()));
  } else if (type == "Prepend") {
    if (!n.value("prepend", json()).is_string()) fail(where, ": a Prepend normalizer needs a string \"prepend\"");
    out.push_back(text::Normalizer::prepend_step(n["prepend"].get<std::string>()));
  } else {
    fail(where, ": the tokenizer's normalizer '", type,
         "' is not supported (squeeze runs NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend and Sequence)");
  }
}

std::vector<std::string> normalizer_steps(const json& n, const std::string& where) {
  std::vector<std::string> out;
  add_normalizer_steps(n, where, out, 0);
  return out;
}

// read_hf_tokenizer's reading, once tokenizer.json is known to exist.
HfTokenizer read_tokenizer_files(const std::string& dir, const json& config, int64_t n_vocab) {
  const fs::path tok_path = fs::path(dir) / "tokenizer.json";
  const std::string where = tok_path.string();
  const json tj = read_json(tok_path);
  const fs::path cfg_path = fs::path(dir) / "tokenizer_config.json";
  const json tc = fs::exists(cfg_path) ? read_json(cfg_path) : json::object();

  const json& m = tj.value("model", json::object());
  if (m.value("type", "") != "BPE") fail(where, ": model type '", m.value("type", ""), "' is not supported (BPE only)");
  if (m.value("byte_fallback", false))
    fail(where, ": SentencePiece-style BPE (byte_fallback) is not converted yet; only byte-level BPE");
  bool byte_level = false;
  const std::vector<std::string> patterns = split_patterns(tj.value("pre_tokenizer", json()), where, byte_level);
  if (!byte_level) fail(where, ": not a byte-level BPE (no ByteLevel pre-tokenizer)");

  HfTokenizer out;
  text::TokenizerData& t = out.data;
  t.normalizer = normalizer_steps(tj.value("normalizer", json()), where);
  t.model = "gpt2";
  t.pre = pre_name(patterns, where);
  t.tokens.assign(static_cast<size_t>(n_vocab), std::string());
  t.token_types.assign(static_cast<size_t>(n_vocab), kUnused);
  std::vector<bool> have(static_cast<size_t>(n_vocab), false);
  auto place = [&](const std::string& text, const json& id_json, int32_t type) {
    if (!id_json.is_number_integer()) fail(where, ": token '", text, "' has no integer id");
    const int64_t id = id_json.get<int64_t>();
    if (id < 0 || id >= n_vocab)
      fail(where, ": token '", text, "' has id ", id, ", outside the model's vocabulary of ", n_vocab);
    t.tokens[static_cast<size_t>(id)] = text;
    t.token_types[static_cast<size_t>(id)] = type;
    have[static_cast<size_t>(id)] = true;
  };
  const json& vocab = m.value("vocab", json::object());
  if (!vocab.is_object() || vocab.empty()) fail(where, ": model.vocab must be a non-empty object");
  for (const auto& [text, id] : vocab.items()) place(text, id, kNormal);
  out.n_listed = static_cast<int64_t>(vocab.size() + tj.value("added_tokens", json::array()).size());
  for (const json& a : tj.value("added_tokens", json::array())) {
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string())
      fail(where, ": added_tokens entries need a string content");
    place(a["content"].get<std::string>(), a.value("id", json()), a.value("special", false) ? kControl : kUserDefined);
  }
  for (int64_t i = 0; i < n_vocab; ++i) {
    if (!have[static_cast<size_t>(i)]) t.tokens[static_cast<size_t>(i)] = "[PAD" + std::to_string(i) + "]";
  }
  for (const json& mg : m.value("merges", json::array())) {
    if (mg.is_string()) {
      t.merges.push_back(mg.get<std::string>());
    } else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string()) {
      t.merges.push_back(mg[0].get<std::string>() + " " + mg[1].get<std::string>());
    } else {
      fail(where, ": model.merges entries must be \"a b\" strings or [a, b] pairs");
    }
  }

  std::map<std::string, int32_t> id_of;
  for (size_t i = 0; i < t.tokens.size(); ++i)
    if (have[i]) id_of.emplace(t.tokens[i], static_cast<int32_t>(i));
  auto special = [&](const char* cfg_key, const char* model_key) -> int32_t {
    if (auto text = token_text(tc, cfg_key)) {
      auto it = id_of.find(*text);
      if (it == id_of.end()) fail(cfg_path.string(), ": ", cfg_key, " '", *text, "' is not in the vocabulary");
      return it->second;
    }
    auto it = config.find(model_key);
    if (it != config.end() && it->is_number_integer()) {
      const int64_t id = it->get<int64_t>();
      if (id >= 0 && id < n_vocab) return static_cast<int32_t>(id);
    }
    return -1;
  };
  t.bos_id = special("bos_token", "bos_token_id");
  t.eos_id = special("eos_token", "eos_token_id");
  t.pad_id = special("pad_token", "pad_token_id");
  t.unk_id = special("unk_token", "unk_token_id");
  // add_bos: stated in tokenizer_config.json, else whether the post-processor's single-
  // sequence template starts with the BOS token.
  if (auto it = tc.find("add_bos_token"); it != tc.end() && it->is_boolean()) {
    t.add_bos = it->get<bool>();
  } else if (const json& pp = tj.value("post_processor", json()); pp.is_object() && pp.value("type", "") == "TemplateProcessing") {
    const json& single = pp.value("single", json::array());
    t.add_bos = !single.empty() && single[0].contains("SpecialToken") && t.bos_id >= 0 &&
                single[0]["SpecialToken"].value("id", "") == t.tokens[static_cast<size_t>(t.bos_id)];
  }
  if (auto it = tc.find("add_eos_token"); it != tc.end() && it->is_boolean()) t.add_eos = it->get<bool>();

  if (auto it = tc.find("chat_template"); it != tc.end() && it->is_string()) out.chat_template = it->get<std::string>();
  const fs::path jinja = fs::path(dir) / "chat_template.jinja";
  if (out.chat_template.empty() && fs::exists(jinja)) out.chat_template = read_whole_file(jinja.string());
  if (auto it = id_of.find("<|eot|>"); it != id_of.end()) out.eot_id = it->second;
  return out;
}

}  // namespace

std::optional<HfTokenizer> read_hf_tokenizer(const std::string& dir, const json& config, int64_t n_vocab) {
  const fs::path tok_path = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(tok_path)) return std::nullopt;
  try {
    return read_tokenizer_files(dir, config, n_vocab);
  } catch (const json::exception& e) {
    // A field of another JSON type than the format's (e.g. "model": 5) is caught by
    // nlohmann's accessors: the files' defect, so a one-line Error naming them.
    fail(dir, ": tokenizer.json or tokenizer_config.json has a field of the wrong JSON type (", e.what(), ")");
  }
}

}  // namespace squeeze::convert
