// tests/generate/test_json_grammar.cpp — JSON schemas compiled to grammars: texts the
// matcher accepts and refuses, refused keywords named, random walks through the grammar
// that always end in JSON the schema allows, and the trie's token mask equal to trying
// every token's bytes one by one (the scalar reference) on random prefixes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "common/muse_tokenizer.h"
#include "generate/grammar_matcher.h"
#include "generate/json_grammar.h"
#include "generate/sequence.h"
#include "generate/token_mask.h"

using namespace squeeze;
using generate::GrammarMatcher;
using generate::JsonGrammar;
using generate::SchemaError;
using Json = chat::Json;

namespace {

GrammarMatcher matcher(const char* schema) { return GrammarMatcher(JsonGrammar::from_schema(Json::parse(schema))); }

// Whether the whole text is a complete value of the schema's grammar.
bool complete(const char* schema, const std::string& text) {
  GrammarMatcher m = matcher(schema);
  return m.accept_bytes(text) && m.can_end();
}

// Whether the text is a prefix the grammar accepts.
bool prefix(const char* schema, const std::string& text) { return matcher(schema).accept_bytes(text); }

const char* kPerson = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 5},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "tags": {"type": "array", "items": {"enum": ["a", "bb", 3]}, "maxItems": 2}},
  "required": ["name", "age"]})";

}  // namespace

TEST(JsonGrammar, ObjectsKeepTheSchemaOrderAndTheRequiredKeys) {
  EXPECT_TRUE(complete(kPerson, R"({"name": "Ann", "age": 30})"));
  EXPECT_TRUE(complete(kPerson, "{\n  \"name\":\"Ann\",\n  \"age\": 7,\n  \"tags\": [\"bb\", 3]\n}"));
  EXPECT_FALSE(prefix(kPerson, R"({"age")"));                       // name is required first
  EXPECT_FALSE(complete(kPerson, R"({"name": "Ann"})"));             // age missing
  EXPECT_FALSE(prefix(kPerson, R"({"name": "Ann", "age": 3, "x")"));  // no undeclared keys
  EXPECT_FALSE(prefix(kPerson, R"({"name": "Annabel")"));            // maxLength 5
  EXPECT_FALSE(prefix(kPerson, R"({"name": "A", "age": 121)"));      // maximum 120
  EXPECT_FALSE(prefix(kPerson, R"({"name": "A", "age": -)"));        // minimum 0
  EXPECT_FALSE(prefix(kPerson, R"({"name": "A", "age": 1, "tags": ["a", "a", )"));  // maxItems 2
  EXPECT_FALSE(prefix(kPerson, R"({"name": "A", "age": 1, "tags": ["c")"));         // enum
  EXPECT_FALSE(prefix(kPerson, R"( {"name": "A", "age": 01)"));      // leading zero
}

TEST(JsonGrammar, NumbersStringsAndLiterals) {
  const char* num = R"({"type": "number"})";
  for (const char* ok : {"0", "-0.5", "12e3", "1.25E-7", "-9"}) EXPECT_TRUE(complete(num, ok)) << ok;
  for (const char* bad : {"01", "1.", ".5", "1e", "+1", "--1", "9e999"}) EXPECT_FALSE(complete(num, bad)) << bad;
  EXPECT_FALSE(prefix(num, "12345678901234567"));  // 17 integer digits
  const char* range = R"({"type": "integer", "minimum": -5, "exclusiveMaximum": 250})";
  for (const char* ok : {"-5", "0", "249", "17"}) EXPECT_TRUE(complete(range, ok)) << ok;
  for (const char* bad : {"-6", "250", "2490", "-50"}) EXPECT_FALSE(complete(range, bad)) << bad;
  EXPECT_TRUE(prefix(range, "25"));
  EXPECT_FALSE(prefix(range, "250"));  // no integer in range starts with 250
  EXPECT_TRUE(complete(R"({"type": "number", "minimum": 1.5, "maximum": 3})", "2"));
  EXPECT_FALSE(complete(R"({"type": "number", "minimum": 1.5, "maximum": 3})", "1"));
  const char* str = R"({"type": "string", "minLength": 2, "maxLength": 3})";
  EXPECT_TRUE(complete(str, R"("a\n")"));
  EXPECT_TRUE(complete(str, "\"\xc3\xa9t\xc3\xa9\""));  // été: 3 characters, 5 bytes
  EXPECT_FALSE(complete(str, R"("a")"));
  EXPECT_FALSE(prefix(str, "\"\xc3\x28"));     // a broken UTF-8 sequence
  EXPECT_FALSE(prefix(str, R"("\ud800)"));     // a surrogate escape
  EXPECT_TRUE(complete(str, R"("\ued00x")"));    // U+ED00 is no surrogate (a fuzzing find: once a dead end)
  EXPECT_FALSE(prefix(str, "\"a\x01"));        // a raw control character
  EXPECT_TRUE(complete(R"({"type": ["boolean", "null"]})", "null"));
  EXPECT_TRUE(complete(R"({"const": {"k": [1, "x"]}})", R"({"k":[1,"x"]})"));
  EXPECT_TRUE(complete(R"({"anyOf": [{"type": "integer"}, {"type": "string"}]})", R"("7")"));
}

TEST(JsonGrammar, ReferencesAndRecursion) {
  const char* tree = R"({"$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
    "$ref": "#/$defs/node"})";
  EXPECT_TRUE(complete(tree, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"));
  EXPECT_FALSE(prefix(tree, R"({"v": 1, "kids": [{"kids")"));
}

TEST(JsonGrammar, ClosedAfterTheValueAndAnyObjectMode) {
  GrammarMatcher m(JsonGrammar::any_object());
  EXPECT_FALSE(m.accept_bytes("[1]"));  // json_object: an object at the top
  ASSERT_TRUE(m.accept_bytes(R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.closed());
  EXPECT_FALSE(m.accept_bytes(" "));
  GrammarMatcher n = matcher(R"({"type": "integer"})");
  ASSERT_TRUE(n.accept_bytes("12"));
  EXPECT_TRUE(n.can_end());
  EXPECT_FALSE(n.closed());  // more digits may follow
}

TEST(JsonGrammar, ToolCallsInTheirFraming) {
  const Json add = Json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  const auto g = JsonGrammar::tool_call({{"add", &add}, {"now", nullptr}}, "<tool_call>\n", "\n</tool_call>", "arguments");
  const auto call = [&](const std::string& text) {
    GrammarMatcher m(g);
    return m.accept_bytes(text) && m.closed();
  };
  EXPECT_TRUE(call("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2}}\n</tool_call>"));
  EXPECT_TRUE(call("<tool_call>\n{\"name\":\"now\",\"arguments\":{}}\n</tool_call>"));
  EXPECT_FALSE(call(" <tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));  // nothing before the framing
  EXPECT_FALSE(call("<tool_call>\n{\"name\": \"sub\", \"arguments\": {}}\n</tool_call>"));   // not a tool
  EXPECT_FALSE(call("<tool_call>\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call>"));   // a required
  EXPECT_FALSE(call("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2}}"));          // the suffix
  const auto llama = JsonGrammar::tool_call({{"add", &add}}, "", "", "parameters");
  GrammarMatcher m(llama);
  EXPECT_TRUE(m.accept_bytes(R"({"name": "add", "parameters": {"a": -4}})") && m.closed());
}

TEST(JsonGrammar, UnsupportedKeywordsAreRefusedByName) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"type": "string", "pattern": "(a)\\1"})", "\\1"},
      {R"({"type": "string", "pattern": "(?=a)b"})", "lookarounds"},
      {R"({"type": "string", "pattern": "a{3,1}"})", "n < m"},
      {R"({"type": "string", "pattern": "[z-a]"})", "out of order"},
      {R"({"type": "string", "pattern": "a{64}"})", "63 character positions"},
      {R"({"type": "string", "pattern": "a^b"})", "'^'"},
      {R"({"type": "string", "format": "email"})", "'format' 'email'"},
      {R"({"type": "string", "pattern": "[^\\x00-\\x7F]"})", "matches no string"},
      {R"({"type": "string", "pattern": "a**"})", "quantifier on a quantifier"},
      {R"({"type": "string", "pattern": "(){9999}{9999}"})", "quantifier on a quantifier"},
      {R"j({"type": "string", "pattern": "((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))"})j", "nested deeper"},
      {R"({"type": "string", "pattern": "\\ud800"})", "surrogate"},
      {R"({"type": "string", "pattern": "^abc$", "maxLength": 2})", "at least 3"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})", "nests deeper"},
      {R"({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]})", "allows nothing"},
      {R"({"type": "string", "enum": ["a"], "maxLength": 3})", "beside keywords"},
      {R"({"type": "integer", "enum": ["a", true]})", "has the schema's 'type'"},
      {R"({"type": "number", "multipleOf": 3})", "'multipleOf'"},
      {R"({"type": "object", "properties": {"a": {"not": {}}}})", "'not'"},
      {R"({"$ref": "https://example.com/s.json"})", "'$ref'"},
      {R"({"$ref": "#/$defs/missing"})", "names nothing"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "'minItems'"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer"},
      {R"({"enum": []})", "'enum'"},
      {R"({"type": "strin"})", "unknown type"},
      {R"(false)", "'false'"},
  };
  for (const auto& [schema, words] : cases) {
    try {
      JsonGrammar::from_schema(Json::parse(schema));
      ADD_FAILURE() << "accepted " << schema;
    } catch (const SchemaError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  }
}

TEST(JsonGrammar, HostileSchemasStayCheapAndNeverDeadEnd) {
  // Alternatives referring to themselves: flattened once, not followed byte by byte.
  EXPECT_TRUE(complete(R"({"anyOf": [{"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"},
                                     {"$ref": "#"}, {"$ref": "#"}, {"type": "integer"}]})", "7"));
  // A recursive object with an optional child: at the depth limit the child can no longer be
  // opened (its value could not close), so every prefix still completes.
  const char* tree = R"({"type": "object", "properties": {"k": {"$ref": "#"}}})";
  std::string deep;
  for (int i = 0; i < JsonGrammar::kMaxDepth - 2; ++i) deep += R"({"k": )";
  EXPECT_TRUE(prefix(tree, deep + "{"));
  EXPECT_FALSE(prefix(tree, deep + R"({"k")"));
  std::string closing(JsonGrammar::kMaxDepth - 1, '}');
  EXPECT_TRUE(complete(tree, deep + "{" + closing.substr(0, JsonGrammar::kMaxDepth - 1)));
  // Many literals are one parse: an enum of 300 values keeps all of them.
  Json big = {{"enum", Json::array()}};
  for (int i = 0; i < 300; ++i) big["enum"].push_back("v" + std::to_string(i));
  GrammarMatcher m(JsonGrammar::from_schema(big));
  ASSERT_TRUE(m.accept_bytes(R"("v29)"));
  EXPECT_TRUE(m.accept_bytes("9\""));
  EXPECT_TRUE(m.closed());
  // An integer at the top of its range: complete, and nothing may follow (no EOS needed).
  GrammarMatcher one = matcher(R"({"type": "integer", "minimum": 0, "maximum": 5})");
  ASSERT_TRUE(one.accept_bytes("3"));
  EXPECT_TRUE(one.closed());
}

TEST(JsonGrammar, PatternsAndFormats) {
  const char* code = R"({"type": "string", "pattern": "^[A-Z]{3}-\\d{2,4}$"})";
  EXPECT_TRUE(complete(code, R"("ABC-12")"));
  EXPECT_TRUE(complete(code, R"("XYZ-1234")"));
  EXPECT_FALSE(complete(code, R"("AB-12")"));
  EXPECT_FALSE(prefix(code, R"("abc)"));
  EXPECT_FALSE(prefix(code, R"("ABC-12345)"));
  const char* words = R"({"type": "string", "pattern": "a|bc"})";  // unanchored: generated as a whole match
  EXPECT_TRUE(complete(words, R"("a")"));
  EXPECT_TRUE(complete(words, R"("bc")"));
  EXPECT_FALSE(prefix(words, R"("ab)"));
  const char* accents = R"({"type": "string", "pattern": "^é+\\n?$"})";
  EXPECT_TRUE(complete(accents, "\"\xc3\xa9\xc3\xa9\\n\""));  // "éé\n", the newline escaped
  EXPECT_TRUE(prefix(accents, "\"\xc3"));                   // é starts with C3
  EXPECT_FALSE(prefix(accents, "\"\xc3\xa8"));               // è does not match
  EXPECT_FALSE(prefix(accents, "\"\xc4"));                   // nothing starting with C4 does
  EXPECT_TRUE(complete(accents, R"("\u00e9")"));              // é as a \u escape
  EXPECT_FALSE(prefix(accents, R"("\u00e8)"));
  const char* date = R"({"type": "string", "format": "date"})";
  EXPECT_TRUE(complete(date, R"("2024-02-28")"));
  EXPECT_FALSE(prefix(date, R"("2024-13)"));
  EXPECT_FALSE(prefix(date, R"("2024-02-30)"));  // days past 28 are not generated: every date exists
  EXPECT_TRUE(complete(R"({"type": "string", "format": "date-time"})", R"("2024-01-05T23:59:07.25+02:00")"));
  EXPECT_TRUE(complete(R"({"type": "string", "format": "uuid"})", R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(complete(R"({"type": "string", "format": "ipv4"})", R"("256.1.1.1")"));
  EXPECT_TRUE(complete(R"({"type": "string", "format": "ipv4"})", R"("255.10.0.1")"));
  EXPECT_FALSE(complete(R"({"type": "string", "pattern": "^\\S+$"})", R"("a b")"));
}

// Random walks through patterned strings end in strings std::regex (ECMAScript) matches whole.
TEST(JsonGrammar, RandomWalksThroughPatternsMatchTheRegex) {
  const std::vector<std::string> patterns = {"^[A-Z]{2,3}-\\d{2}(x|yz)?$", "^(ab|c)*d$", "^[^a-y]{1,4}\\.\\w$",
                                             "^\\s?[0-9a-f]{2}:[0-9a-f]{2}$"};
  std::mt19937 rng(5);
  for (const std::string& pat : patterns) {
    const Json schema = {{"type", "string"}, {"pattern", pat}, {"maxLength", 12}};
    const std::regex re(pat);
    for (int walk = 0; walk < 100; ++walk) {
      GrammarMatcher m(JsonGrammar::from_schema(schema));
      std::string text;
      for (int step = 0; step < 200 && !m.closed(); ++step) {
        std::vector<uint8_t> ok;
        for (int b = 1; b < 128; ++b) {  // ASCII: std::regex reads bytes
          GrammarMatcher::Parses next;
          m.step(m.parses(), static_cast<uint8_t>(b), next);
          if (!next.empty() && b != '\\') ok.push_back(static_cast<uint8_t>(b));
        }
        ASSERT_FALSE(ok.empty()) << pat << " dead end after " << text;
        const uint8_t b = std::find(ok.begin(), ok.end(), '"') != ok.end() && rng() % 3 == 0 ? '"' : ok[rng() % ok.size()];
        ASSERT_TRUE(m.accept_bytes(std::string(1, static_cast<char>(b))));
        text += static_cast<char>(b);
      }
      ASSERT_TRUE(m.closed()) << pat << ": " << text;
      EXPECT_TRUE(std::regex_match(Json::parse(text).get<std::string>(), re)) << pat << ": " << text;
    }
  }
}

// A random walk through the grammar (a random accepted byte at each step, ending as soon
// as the value can end after a few bytes) gives a JSON text nlohmann parses, with the
// schema's constraints checked by hand.
TEST(JsonGrammar, RandomWalksEndInValidJson) {
  std::mt19937 rng(1234);
  for (int walk = 0; walk < 300; ++walk) {
    GrammarMatcher m = matcher(kPerson);
    std::string text;
    for (int step = 0; step < 400 && !m.closed(); ++step) {
      std::vector<uint8_t> ok;
      for (int b = 1; b < 256; ++b) {
        GrammarMatcher::Parses next;
        m.step(m.parses(), static_cast<uint8_t>(b), next);
        if (!next.empty()) ok.push_back(static_cast<uint8_t>(b));
      }
      ASSERT_FALSE(ok.empty()) << "dead end after " << text;
      // Prefer closing bytes as the walk grows, so that walks end.
      uint8_t b = ok[rng() % ok.size()];
      if (step > 40) {
        for (uint8_t c : ok)
          if (c == '"' || c == '}' || c == ']') b = c;
      }
      ASSERT_TRUE(m.accept_bytes(std::string(1, static_cast<char>(b))));
      text += static_cast<char>(b);
    }
    ASSERT_TRUE(m.can_end()) << text;
    const Json v = Json::parse(text);
    ASSERT_TRUE(v.is_object()) << text;
    ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << text;
    const std::string name = v["name"].get<std::string>();
    // characters, not bytes: count UTF-8 lead bytes
    EXPECT_LE(std::count_if(name.begin(), name.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; }), 5) << text;
    ASSERT_TRUE(v["age"].is_number_integer()) << text;
    EXPECT_GE(v["age"].get<int64_t>(), 0);
    EXPECT_LE(v["age"].get<int64_t>(), 120);
    if (v.contains("tags")) {
      EXPECT_LE(v["tags"].size(), 2u);
      for (const Json& t : v["tags"]) EXPECT_TRUE(t == "a" || t == "bb" || t == 3) << text;
    }
    EXPECT_EQ(v.size(), v.contains("tags") ? 3u : 2u);
  }
}

// The trie's mask against the reference: each token's text tried through accept_bytes.
TEST(TokenMask, EqualsTryingEveryTokenOnRandomPrefixes) {
  const text::Tokenizer tok = muse_test_tokenizer(
      R"({"name": "Ann", "age": 30, "tags": ["a", "bb", 3]} {"name":"Bob","age":7} é, ü  )", 30, 300);
  const generate::VocabTrie trie(tok);
  const std::vector<int32_t> ends = {tok.eos_id()};
  std::mt19937 rng(99);
  std::vector<GrammarMatcher::Parses> scratch;
  int checked = 0, n_allowed = 0;
  for (const char* p : {"", "{", "{\"na", "{\"name\": \"A", "{\"name\": \"Ann\", \"age\": 1", "{\"name\": \"Ann\", \"age\": 12}",
                        "{\"name\": \"Ann\", \"age\": 12, \"tags\": [", "{\"name\": \"\xc3", "{\"name\": \"Ann\", \"age\": 1, \"tags\": [\"b"}) {
    GrammarMatcher m = matcher(kPerson);
    ASSERT_TRUE(m.accept_bytes(p)) << p;
    std::vector<float> logits(static_cast<size_t>(tok.n_vocab()));
    for (float& l : logits) l = std::uniform_real_distribution<float>(-3, 3)(rng);
    std::vector<float> masked = logits, walked = logits;
    trie.mask(m, ends, masked, scratch);
    trie.mask(m, ends, walked, scratch, /*use_string_path=*/false);
    EXPECT_EQ(masked, walked) << "the plain-string path differs from the full walk at '" << p << "'";
    for (int32_t t = 0; t < tok.n_vocab(); ++t) {
      const text::TokenType type = tok.token_type(t);
      const std::string piece = tok.token_to_piece(t, {.render_control = false});
      GrammarMatcher copy = m;
      bool allowed = type != text::TokenType::control && type != text::TokenType::unused && !piece.empty() &&
                     copy.accept_bytes(piece);
      if (t == tok.eos_id()) allowed = m.can_end();
      EXPECT_EQ(masked[static_cast<size_t>(t)] != -INFINITY, allowed) << "prefix '" << p << "' token " << t << " '" << piece << "'";
      if (allowed) {
        EXPECT_EQ(masked[static_cast<size_t>(t)], logits[static_cast<size_t>(t)]);
        ++n_allowed;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(n_allowed, 100);             // both sides are exercised
  EXPECT_LT(n_allowed, checked - 1000);
}

// A Sequence sampling random logits under a schema: every run ends by itself (Finish::stop,
// the value closed) with text that parses and keeps the schema's bounds.
TEST(GrammarSequence, RandomLogitsStillGiveTheSchemasJson) {
  const text::Tokenizer tok = muse_test_tokenizer(
      R"({"name": "Ann", "age": 30, "tags": ["a", "bb", 3]} {"name":"Bob","age":7} é, ü  )", 30, 300);
  const auto trie = std::make_shared<const generate::VocabTrie>(tok);
  const auto grammar = JsonGrammar::from_schema(Json::parse(kPerson));
  std::mt19937 rng(7);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    generate::SequenceParams params{.stop = {.eos_ids = {tok.eos_id()}, .max_tokens = 2000}, .n_ctx = 4000};
    params.grammar = grammar;
    params.vocab_trie = trie;
    generate::Sequence seq(tok, text::Sampler({.temperature = 1, .top_k = 0, .top_p = 1, .min_p = 0, .seed = seed}),
                           params, nullptr, {});
    seq.start(1, {});
    std::string text;
    std::vector<float> row(static_cast<size_t>(tok.n_vocab()));
    while (!seq.finished()) {
      for (float& l : row) l = std::uniform_real_distribution<float>(-2, 2)(rng);
      // Lean on closing characters now and then, as a model would, so runs stay short.
      for (int32_t t = 0; t < tok.n_vocab(); ++t) {
        const std::string piece = tok.token_to_piece(t, {.render_control = false});
        if (piece == "\"" || piece == "}" || piece == "]" || piece == ",") row[static_cast<size_t>(t)] += 2;
      }
      text += seq.advance(row, {}).text;
    }
    EXPECT_EQ(seq.finish_reason(), generate::Finish::stop) << text;
    const Json v = Json::parse(text);
    EXPECT_TRUE(v["name"].is_string() && v["age"].is_number_integer()) << text;
  }
}

// The plain-string path in an unbounded string, and after an escape and a UTF-8 lead byte
// (where it must not apply): equal to the full walk and to trying every token.
TEST(TokenMask, PlainStringPathEqualsTheWalkInUnboundedStrings) {
  const text::Tokenizer tok = muse_test_tokenizer(R"(["a long \"quoted\" word", "é ü", "x\\ny"] )", 30, 300);
  const generate::VocabTrie trie(tok);
  std::vector<GrammarMatcher::Parses> scratch;
  for (const char* p : {"[\"", "[\"a lo", "[\"a\\", "[\"\xc3", "[\"ab\", \"c"}) {
    GrammarMatcher m = matcher(R"({"type": "array", "items": {"type": "string"}})");
    ASSERT_TRUE(m.accept_bytes(p)) << p;
    std::vector<float> fast(static_cast<size_t>(tok.n_vocab()), 1.0f), walked = fast;
    trie.mask(m, {}, fast, scratch);
    trie.mask(m, {}, walked, scratch, false);
    EXPECT_EQ(fast, walked) << p;
    for (int32_t t = 0; t < tok.n_vocab(); ++t) {
      const std::string piece = tok.token_to_piece(t, {.render_control = false});
      const text::TokenType type = tok.token_type(t);
      GrammarMatcher copy = m;
      const bool ok = type != text::TokenType::control && type != text::TokenType::unused && !piece.empty() &&
                      copy.accept_bytes(piece);
      EXPECT_EQ(fast[static_cast<size_t>(t)] != -INFINITY, ok) << p << " token '" << piece << "'";
    }
  }
}
