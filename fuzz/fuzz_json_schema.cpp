// fuzz/fuzz_json_schema.cpp — a request's JSON schema (response_format, a tool's parameters)
// compiled to a grammar, then bytes fed through the matcher: the schema part (before the
// first NUL) must compile or throw SchemaError, and the matcher must take any bytes —
// accepting or refusing each, never crashing — with its invariants holding: a refused byte
// changes nothing, a closed value accepts no further byte, and an incomplete value always
// accepts some byte (no dead ends).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "generate/grammar_matcher.h"
#include "generate/json_grammar.h"

using namespace squeeze;
using generate::GrammarMatcher;
using generate::JsonGrammar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [schema_text, bytes] = fuzz::split_at_nul(fuzz::as_text(data, size));
  chat::Json schema;
  try {
    schema = chat::Json::parse(schema_text);
  } catch (const std::exception&) {
    return 0;
  }
  std::shared_ptr<const JsonGrammar> g;
  try {
    g = schema.is_string() && schema == "json_object" ? JsonGrammar::any_object() : JsonGrammar::from_schema(schema);
  } catch (const generate::SchemaError&) {
    return 0;
  }
  GrammarMatcher m(g);
  for (char c : bytes) {
    const bool closed = m.closed();
    const size_t before = m.parses().size();
    const bool ok = m.accept_bytes(std::string(1, c));
    if (closed && ok) __builtin_trap();                         // nothing may follow a closed value
    if (!ok && m.parses().size() != before) __builtin_trap();   // a refused byte changes nothing
    if (ok && !m.can_end()) {  // no dead ends: an incomplete value always takes some byte
      bool goes_on = false;
      GrammarMatcher::Parses next;
      for (int b = 0; b < 256 && !goes_on; ++b) {
        m.step(m.parses(), static_cast<uint8_t>(b), next);
        goes_on = !next.empty();
      }
      if (!goes_on) __builtin_trap();
    }
    (void)m.string_room();
  }
  return 0;
}
