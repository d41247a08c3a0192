// fuzz/fuzz_tokenizer.cpp — the shipped model's byte-level BPE tokenizer (models/
// muse-glimmer-kjv.f16.gguf, loaded once) over arbitrary text, checking what
// tests/text/test_tokenizer.cpp asserts on random input: text that is not UTF-8 encodes
// as its lenient repair (text/unicode.h) does, and decode(encode(s)) == s for the
// repaired text, with and without special-token parsing. Arbitrary ids decode or are a
// squeeze::Error.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/reader.h"
#include "model/gguf_config.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "fuzz_input.h"

using namespace squeeze;

namespace {

const text::Tokenizer& tokenizer() {
  static const std::unique_ptr<text::Tokenizer> t = [] {
    const gguf::File f(SQUEEZE_SOURCE_DIR "/models/muse-glimmer-kjv.f16.gguf");
    return std::make_unique<text::Tokenizer>(model::tokenizer_data_from_gguf(f.metadata()));
  }();
  return *t;
}

void round_trip(const text::Tokenizer& t, std::string_view input, bool parse_special) {
  const text::EncodeOptions opt{.add_special = false, .parse_special = parse_special};
  std::string s(input);
  std::string repaired;
  if (text::lenient_utf8(s, repaired)) {
    if (t.encode(s, opt) != t.encode(repaired, opt)) __builtin_trap();
    s = repaired;
  }
  const std::vector<int32_t> ids = t.encode(s, opt);
  if (t.decode(ids) != s) __builtin_trap();
  std::string pieces;
  for (int32_t id : ids) pieces += t.token_to_piece(id);
  if (pieces != s) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const text::Tokenizer& t = tokenizer();
  const std::string_view text = fuzz::as_text(data, size);
  round_trip(t, text, /*parse_special=*/true);
  round_trip(t, text, /*parse_special=*/false);
  (void)t.encode(text);  // BOS / EOS as the model adds them

  // The bytes as token ids (what a client's logit_bias or prompt ids could name).
  std::vector<int32_t> ids(size / 4);
  if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
  try {
    (void)t.decode(ids);
    (void)t.decode(ids, {.render_control = false});
  } catch (const Error&) {
  }
  return 0;
}
