// generate/json_grammar.h — a JSON schema compiled for grammar-constrained generation.
//
// The grammar is a graph of nodes, one per schema construct, that the GrammarMatcher
// (generate/grammar_matcher.h) walks byte by byte. It accepts a subset of the JSON texts
// the schema allows, chosen so that every prefix it accepts can still be completed and a
// model cannot run on forever:
//   - object properties in the schema's order, required ones always, optional ones
//     skippable; no properties beyond the declared ones (additionalProperties is used
//     only for objects that declare none: maps of that value schema);
//   - whitespace only where JSON pretty-printing puts it (after { [ , and :, before } ]
//     and :): one space, or one newline and at most kMaxWhitespace spaces or tabs
//     (llama.cpp's rule), so a model fond of newlines cannot spend its tokens on them;
//   - numbers with at most 16 digits before and after the point and 2 in the exponent;
//     a number schema with minimum/maximum generates integers in that range;
//   - strings as UTF-8 (validated) with the standard escapes; \u escapes of surrogates
//     are not generated; `pattern` through a position automaton (generate/string_pattern.h:
//     the subset of regular expressions it takes, and why its classes are ASCII); `format`
//     date, time, date-time, uuid and ipv4 as patterns;
//   - `enum` / `const` as their values (filtered by `type`), one parse for all of them;
//   - nesting at most kMaxDepth levels: the matcher never opens a value it could not close
//     there (need()), and a schema whose every instance nests deeper is refused.
// Keywords it cannot enforce (other formats, multipleOf, allOf of several schemas,
// not, if/then/else, dependencies, min/maxProperties, uniqueItems, contains, prefixItems,
// pattern with minLength, enum beside constraints other than type …) are refused when
// compiling: a SchemaError naming the keyword and where it is. oneOf is generated as anyOf
// (a value matching one alternative only, for the usual schemas whose alternatives differ
// by type or by a const). Alternatives ($ref cycles included) are flattened once, at most
// kMaxStarts per value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/value.h"
#include "core/error.h"
#include "generate/string_pattern.h"

namespace squeeze::generate {

class SchemaError : public Error {
 public:
  using Error::Error;
};

class JsonGrammar {
 public:
  static constexpr int kMaxWhitespace = 20;
  static constexpr int kMaxDepth = 24;   // frames on the matcher's stack, the root included
  static constexpr int kMaxNodes = 4096;  // a schema that compiles to more is refused
  static constexpr size_t kMaxStarts = 256;  // alternatives a value may start as

  // Any JSON object (OpenAI's response_format {"type": "json_object"}).
  static std::shared_ptr<const JsonGrammar> any_object();
  // A JSON schema (draft 2020-12 / 7 keywords). Throws SchemaError.
  static std::shared_ptr<const JsonGrammar> from_schema(const chat::Json& schema);
  // One call of one of `tools` (name and parameters schema, null: any object), written as
  // prefix + {"name": NAME, args_key: ARGUMENTS} + suffix (a model's tool-call framing).
  struct Tool {
    std::string name;
    const chat::Json* parameters = nullptr;
  };
  static std::shared_ptr<const JsonGrammar> tool_call(const std::vector<Tool>& tools, const std::string& prefix,
                                                      const std::string& suffix, const std::string& args_key);

  enum class Kind : uint8_t {
    alternatives,  // one of `alts` (anyOf, oneOf, a list of types, $ref, any value)
    literals,      // one of `literals`, exact JSON texts (const, enum, true/false/null), sorted
    object,        // `props` in order
    map,           // an object of any keys whose values are `item`
    array,         // `item` repeated min..max times
    string,        // min..max characters
    number,        // any JSON number
    integer,       // an integer, within [lo, hi] when bounded
    sequence,      // `alts` one after the other (a call's framing around its JSON)
  };
  struct Property {
    std::string key;  // the key as JSON text, quotes included
    int32_t value = -1;
    bool required = false;
  };
  struct Node {
    Kind kind = Kind::alternatives;
    std::vector<int32_t> alts;
    std::vector<std::string> literals;
    std::vector<Property> props;
    int32_t item = -1;
    int64_t min = 0, max = -1;  // array items or string characters; max -1: unbounded
    bool has_lo = false, has_hi = false;
    int64_t lo = 0, hi = 0;     // integer bounds
    int32_t pattern = -1;       // string: index into patterns(), -1: none
  };

  const Node& node(int32_t i) const { return nodes_[static_cast<size_t>(i)]; }
  // The nodes other than alternatives a value of node i may start as (alternatives followed
  // through, duplicates and pure-alternatives cycles removed); {i} for the others.
  const std::vector<int32_t>& starts(int32_t i) const { return starts_[static_cast<size_t>(i)]; }
  // The fewest matcher frames a value of node i needs (its own included) to be complete:
  // the matcher never opens a value it could not close within kMaxDepth.
  int need(int32_t i) const { return need_[static_cast<size_t>(i)]; }
  const StringPattern& pattern(int32_t i) const { return patterns_[static_cast<size_t>(i)]; }
  int32_t root() const { return root_; }
  int32_t key_string() const { return key_string_; }  // a map's keys
  // Whitespace may come before the value (an answer after `</think>`); not before a call's framing.
  bool root_whitespace() const { return root_whitespace_; }
  size_t size() const { return nodes_.size(); }

 private:
  friend class SchemaCompiler;
  // After compiling: starts_ and need_, literals sorted; refuses a schema whose every
  // instance nests deeper than kMaxDepth (or that has none).
  void finish();

  std::vector<Node> nodes_;
  std::vector<StringPattern> patterns_;
  std::vector<std::vector<int32_t>> starts_;
  std::vector<int> need_;
  int32_t root_ = -1, key_string_ = -1;
  bool root_whitespace_ = true;
};

}  // namespace squeeze::generate
