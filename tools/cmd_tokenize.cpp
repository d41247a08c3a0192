// tools/cmd_tokenize.cpp — `squeeze tokenize`: encode text to token ids or decode ids,
// with the vocabulary of a GGUF model (-m: only its tokenizer.ggml.* metadata is read,
// so any architecture works) or of a JSON file (tests, experiments).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "core/bounded_json.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/reader.h"
#include "model/gguf_config.h"
#include "text/tokenizer.h"

namespace {

using squeeze::fail;
using squeeze::text::Tokenizer;
using squeeze::text::TokenizerData;

// {"tokens": [...], "merges": [...], "token_types": [...], "pre": "...", "bos_id": n,
//  "eos_id": n, "pad_id": n, "unk_id": n, "add_bos": b, "add_eos": b, "ignore_merges": b}
TokenizerData load_vocab_json(const std::string& path) {
  TokenizerData d;
  const std::string text = squeeze::read_whole_file(path);  // its errors name the path already
  try {
    const auto j = squeeze::parse_json_or_throw<nlohmann::json>(text, "vocabulary", {.max_depth = 16, .max_object_keys = INT64_MAX});
    if (!j.is_object()) fail("not a JSON object");
    if (!j.contains("tokens")) fail("missing key 'tokens'");
    d.tokens = j.at("tokens").get<std::vector<std::string>>();
    d.merges = j.value("merges", std::vector<std::string>{});
    d.token_types = j.value("token_types", std::vector<int32_t>{});
    d.model = j.value("model", std::string("gpt2"));
    d.pre = j.value("pre", std::string("default"));
    d.bos_id = j.value("bos_id", -1);
    d.eos_id = j.value("eos_id", -1);
    d.pad_id = j.value("pad_id", -1);
    d.unk_id = j.value("unk_id", -1);
    d.add_bos = j.value("add_bos", false);
    d.add_eos = j.value("add_eos", false);
    d.ignore_merges = j.value("ignore_merges", false);
    d.scores = j.value("scores", std::vector<float>{});
    d.add_space_prefix = j.value("add_space_prefix", true);
  } catch (const nlohmann::json::exception& e) {
    fail(path, ": ", e.what());
  } catch (const squeeze::Error& e) {
    throw e.with_context(path);
  }
  return d;
}

Tokenizer load_vocab_gguf(const std::string& path) {
  const squeeze::gguf::File file(path);
  try {
    return Tokenizer(squeeze::model::tokenizer_data_from_gguf(file.metadata()));
  } catch (const squeeze::Error& e) {
    throw e.with_context(path + ": tokenizer");
  }
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) out += digits[b >> 4], out += digits[b & 15];
  return out;
}

std::string from_hex(const std::string& hex, size_t line) {
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    fail("line ", line, ": not a hex digit: '", c, "'");
  };
  if (hex.size() % 2 != 0) fail("line ", line, ": odd number of hex digits");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) out += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
  return out;
}

std::vector<int32_t> parse_ids(const std::string& s) {
  std::istringstream in(s);
  std::vector<int32_t> ids;
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used != word.size() || v < INT32_MIN || v > INT32_MAX) fail("not a token id: '", word, "'");
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

std::string join(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out;
}

int run_tokenize(int argc, char** argv) {
  squeeze::cli::Args args("tokenize", "tokenize (-m MODEL.gguf | --vocab VOCAB.json) (-p TEXT | -f FILE | --batch) [options]",
                          "Encode text to token ids (one line, space separated), or with --decode turn ids back\n"
                          "into bytes. --batch reads stdin: one item per line, text as hex bytes in and out.\n"
                          "Byte-level BPE (GGUF tokenizer.ggml.model gpt2) and SentencePiece (llama).");
  args.option({"-m", "--model"}, "FILE", "read the vocabulary from a GGUF model's tokenizer.ggml.* metadata")
      .option({"--vocab"}, "FILE", "vocabulary as JSON (tokens, merges, token_types, scores, model, pre, bos_id, ...)")
      .option({"-p", "--prompt"}, "TEXT", "the text to encode (or ids to decode)")
      .option({"-f", "--file"}, "FILE", "read the text (or ids) from a file, bytes as they are")
      .flag({"--decode"}, "decode token ids instead of encoding")
      .flag({"--batch"}, "stdin lines: hex text → ids (or ids → hex text with --decode)")
      .flag({"--no-add-special", "--no-bos"}, "do not add BOS/EOS even if the vocabulary asks for them")
      .flag({"--no-parse-special"}, "treat control-token texts (<bos>, <|im_start|>) in the input as plain text")
      .flag({"--special"}, "match control-token texts in the input as tokens (the default)")
      .flag({"--ids"}, "print only the ids, one line (the default unless --pieces)")
      .flag({"--no-render-control"}, "decode control tokens (BOS, EOS, ...) to nothing")
      .flag({"--pieces"}, "print one line per token: id, then its stored text");
  if (!args.parse(argc, argv)) return 0;
  if (args.has("--vocab") == args.has("-m")) fail("tokenize: give exactly one of -m MODEL.gguf or --vocab FILE");
  if (args.has("--special") && args.has("--no-parse-special")) fail("tokenize: --special and --no-parse-special contradict");
  const Tokenizer tok = args.has("-m") ? load_vocab_gguf(args.get("-m")) : Tokenizer(load_vocab_json(args.get("--vocab")));
  const squeeze::text::EncodeOptions eopt{.add_special = !args.has("--no-add-special"),
                                          .parse_special = !args.has("--no-parse-special")};
  const squeeze::text::DecodeOptions dopt{.render_control = !args.has("--no-render-control")};
  const bool decode = args.has("--decode");

  if (args.has("--batch")) {
    std::string line;
    size_t n = 0;
    while (std::getline(std::cin, line)) {
      ++n;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const std::string out = decode ? to_hex(tok.decode(parse_ids(line), dopt)) : join(tok.encode(from_hex(line, n), eopt));
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fputc('\n', stdout);
    }
    return 0;
  }
  if (args.has("-p") == args.has("-f")) fail("tokenize: give exactly one of -p TEXT, -f FILE or --batch");
  const std::string input = args.has("-p") ? args.get("-p") : squeeze::read_whole_file(args.get("-f"));
  if (decode) {
    const std::string out = tok.decode(parse_ids(input), dopt);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  const std::vector<int32_t> ids = tok.encode(input, eopt);
  if (args.has("--pieces") && args.has("--ids")) fail("tokenize: --pieces and --ids contradict");
  if (args.has("--pieces")) {
    for (int32_t id : ids) std::printf("%d\t%s\n", id, tok.token_text(id).c_str());
  } else {
    std::printf("%s\n", join(ids).c_str());
  }
  return 0;
}

}  // namespace

SQZ_COMMAND("tokenize", "encode text to token ids or decode ids (vocabulary from GGUF or JSON)", run_tokenize);
