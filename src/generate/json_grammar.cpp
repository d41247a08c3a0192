// generate/json_grammar.cpp — compiling a JSON schema into grammar nodes.
#include "generate/json_grammar.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <map>
#include <set>

namespace squeeze::generate {

using chat::Json;

namespace {

// Keywords that describe without constraining.
const std::set<std::string> kAnnotations = {"$schema", "$id", "$comment", "title", "description", "default",
                                            "examples", "deprecated", "readOnly", "writeOnly", "$defs",
                                            "definitions"};
// Keywords the compiler enforces.
const std::set<std::string> kEnforced = {"type",     "enum",     "const",         "anyOf",         "oneOf",
                                         "allOf",    "$ref",     "properties",    "required",      "additionalProperties",
                                         "items",    "minItems", "maxItems",      "minLength",     "maxLength",
                                         "minimum",  "maximum",  "exclusiveMinimum", "exclusiveMaximum",
                                         "pattern",  "format"};

constexpr double kMaxBound = 1e17;  // integer bounds stay exact in int64 with room for digits
constexpr int kMaxSchemaDepth = 64;

}  // namespace

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Json* document) : doc_(document) {}

  std::shared_ptr<const JsonGrammar> any_object() {
    g_->key_string_ = add(node_of(Kind::string));
    Node m = node_of(Kind::map);
    m.item = any();
    g_->root_ = add(std::move(m));
    g_->finish();
    return g_;
  }

  std::shared_ptr<const JsonGrammar> tool_call(const std::vector<JsonGrammar::Tool>& tools, const std::string& prefix,
                                               const std::string& suffix, const std::string& args_key) {
    if (tools.empty()) refuse("#", "no tools to call");
    g_->key_string_ = add(node_of(Kind::string));
    const int32_t root = add(node_of(Kind::alternatives));
    std::vector<int32_t> calls;
    for (const JsonGrammar::Tool& t : tools) {
      doc_ = t.parameters;  // a $ref in the parameters points within them
      refs_.clear();
      Node obj = node_of(Kind::object);
      obj.props.push_back({Json("name").dump(), add(literals_of({Json(t.name).dump()})), true});
      const Json any_object = {{"type", "object"}};
      obj.props.push_back({Json(args_key).dump(),
                           t.parameters ? compile(*t.parameters, "tools/" + t.name + "/parameters", 0)
                                        : compile(any_object, "#", 0),
                           true});
      Node seq = node_of(Kind::sequence);
      if (!prefix.empty()) seq.alts.push_back(add(literals_of({prefix})));
      seq.alts.push_back(add(std::move(obj)));
      if (!suffix.empty()) seq.alts.push_back(add(literals_of({suffix})));
      calls.push_back(add(std::move(seq)));
    }
    g_->nodes_[static_cast<size_t>(root)].alts = std::move(calls);
    g_->root_ = root;
    g_->root_whitespace_ = false;
    g_->finish();
    return g_;
  }

  std::shared_ptr<const JsonGrammar> schema() {
    g_->key_string_ = add(node_of(Kind::string));
    g_->root_ = compile(*doc_, "#", 0);
    g_->finish();
    return g_;
  }

 private:
  using Kind = JsonGrammar::Kind;
  using Node = JsonGrammar::Node;

  static Node node_of(Kind k) {
    Node n;
    n.kind = k;
    return n;
  }
  static Node literals_of(std::vector<std::string> texts) {
    Node n = node_of(Kind::literals);
    n.literals = std::move(texts);
    return n;
  }

  [[noreturn]] static void refuse(const std::string& where, const std::string& what) {
    throw SchemaError("json_schema at " + where + ": " + what);
  }

  int32_t add(Node n) {
    if (g_->nodes_.size() >= static_cast<size_t>(JsonGrammar::kMaxNodes))
      refuse("#", "the schema is too large (more than " + std::to_string(JsonGrammar::kMaxNodes) + " nodes)");
    g_->nodes_.push_back(std::move(n));
    return static_cast<int32_t>(g_->nodes_.size() - 1);
  }

  // Any JSON value; one shared node.
  int32_t any() {
    if (any_ >= 0) return any_;
    any_ = add(node_of(Kind::alternatives));
    Node m = node_of(Kind::map), a = node_of(Kind::array);
    m.item = a.item = any_;
    std::vector<int32_t> alts = {add(std::move(m)), add(std::move(a)), add(node_of(Kind::string)),
                                 add(node_of(Kind::number)), add(literals_of({"true", "false", "null"}))};
    g_->nodes_[static_cast<size_t>(any_)].alts = std::move(alts);
    return any_;
  }

  static bool only_annotations_besides(const Json& s, const std::set<std::string>& allowed) {
    for (const auto& [k, v] : s.items())
      if (!kAnnotations.count(k) && !allowed.count(k)) return false;
    return true;
  }

  // Whether `v` is of `type` (a name or a list of names), as JSON schema types it.
  static bool has_type(const Json& v, const Json& type) {
    if (type.is_array()) return std::any_of(type.begin(), type.end(), [&](const Json& t) { return has_type(v, t); });
    if (!type.is_string()) return false;
    const std::string t = type.get<std::string>();
    if (t == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (t == "number") return v.is_number();
    if (t == "string") return v.is_string();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    return false;
  }

  static int64_t count_field(const Json& s, const char* key, const std::string& where, int64_t fallback) {
    if (!s.contains(key)) return fallback;
    const Json& v = s[key];
    if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
      refuse(where, std::string("'") + key + "' must be a non-negative integer");
    const double d = v.get<double>();
    if (d < 0 || d > 1e9) refuse(where, std::string("'") + key + "' must be between 0 and 1e9");
    return static_cast<int64_t>(d);
  }

  // n.min / n.max from a pair of count keywords (minLength / maxLength, minItems / maxItems).
  static void count_bounds(const Json& s, const char* lo, const char* hi, Node& n, const std::string& where) {
    n.min = count_field(s, lo, where, 0);
    n.max = count_field(s, hi, where, -1);
    if (n.max >= 0 && n.min > n.max) refuse(where, std::string("'") + lo + "' is above '" + hi + "'");
  }

  int32_t compile(const Json& s, const std::string& where, int depth) {
    if (depth > kMaxSchemaDepth) refuse(where, "the schema nests deeper than " + std::to_string(kMaxSchemaDepth));
    if (s.is_boolean()) {
      if (!s.get<bool>()) refuse(where, "the schema 'false' allows nothing");
      return any();
    }
    if (!s.is_object()) refuse(where, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items())
      if (!kAnnotations.count(k) && !kEnforced.count(k))
        refuse(where, "'" + k + "' is not supported (supported: type, enum, const, anyOf, oneOf, $ref, properties, "
                                "required, additionalProperties, items, minItems, maxItems, minLength, maxLength, "
                                "pattern, format, minimum, maximum, exclusiveMinimum, exclusiveMaximum)");
    if (s.contains("$ref")) {
      if (!only_annotations_besides(s, {"$ref"})) refuse(where, "'$ref' beside other keywords is not supported");
      return reference(s["$ref"], where, depth);
    }
    if (s.contains("const") || s.contains("enum")) {
      // The values themselves; `type` filters them, any other constraint beside them is refused.
      if (!only_annotations_besides(s, {"const", "enum", "type"}))
        refuse(where, "'enum' / 'const' beside keywords other than 'type' is not supported");
      if (s.contains("enum") && (!s["enum"].is_array() || s["enum"].empty())) refuse(where, "'enum' must be a non-empty array");
      const Json values = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
      Node n = node_of(Kind::literals);
      for (const Json& v : values)
        if (!s.contains("type") || has_type(v, s["type"])) n.literals.push_back(v.dump());
      if (n.literals.empty()) refuse(where, "no value of 'enum' / 'const' has the schema's 'type'");
      return add(std::move(n));
    }
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      if (!s.contains(key)) continue;
      const Json& list = s[key];
      if (!list.is_array() || list.empty()) refuse(where, std::string("'") + key + "' must be a non-empty array");
      if (!only_annotations_besides(s, {key})) refuse(where, std::string("'") + key + "' beside other keywords is not supported");
      if (std::string(key) == "allOf") {
        if (list.size() != 1) refuse(where, "'allOf' of more than one schema is not supported");
        return compile(list[0], where + "/allOf/0", depth + 1);
      }
      const int32_t id = add(node_of(Kind::alternatives));
      std::vector<int32_t> alts;
      for (size_t i = 0; i < list.size(); ++i)
        alts.push_back(compile(list[i], where + "/" + key + "/" + std::to_string(i), depth + 1));
      g_->nodes_[static_cast<size_t>(id)].alts = std::move(alts);
      return id;
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) types.push_back(t.get<std::string>());
      else if (t.is_array() && !t.empty() && std::all_of(t.begin(), t.end(), [](const Json& x) { return x.is_string(); }))
        for (const Json& x : t) types.push_back(x.get<std::string>());
      else refuse(where, "'type' must be a type name or a non-empty array of them");
    } else if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) {
      types.push_back("object");
    } else if (s.contains("items")) {
      types.push_back("array");
    } else {
      return any();
    }
    if (types.size() == 1) return typed(s, types[0], where, depth);
    const int32_t id = add(node_of(Kind::alternatives));
    std::vector<int32_t> alts;
    for (const std::string& t : types) alts.push_back(typed(s, t, where, depth));
    g_->nodes_[static_cast<size_t>(id)].alts = std::move(alts);
    return id;
  }

  int32_t reference(const Json& ref, const std::string& where, int depth) {
    if (!ref.is_string()) refuse(where, "'$ref' must be a string");
    const std::string r = ref.get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return it->second;
    if (r.empty() || r[0] != '#') refuse(where, "'$ref' " + r + ": only references within the document (#...) are supported");
    const Json* target = nullptr;
    try {
      target = &doc_->at(Json::json_pointer(r.substr(1)));
    } catch (const std::exception&) {
      refuse(where, "'$ref' " + r + " names nothing in the document");
    }
    const int32_t id = add(node_of(Kind::alternatives));  // the placeholder a recursive schema points back to
    refs_[r] = id;
    const int32_t body = compile(*target, r, depth + 1);
    g_->nodes_[static_cast<size_t>(id)].alts = {body};
    return id;
  }

  // Bounds of an integer node: minimum/maximum rounded inwards, exclusive ones one step in.
  void integer_bounds(const Json& s, Node& n, const std::string& where) {
    auto bound = [&](const char* key) -> std::optional<double> {
      if (!s.contains(key)) return std::nullopt;
      if (!s[key].is_number()) refuse(where, std::string("'") + key + "' must be a number");
      const double v = s[key].get<double>();
      if (!(std::fabs(v) < kMaxBound)) refuse(where, std::string("'") + key + "' beyond ±1e17 is not supported");
      return v;
    };
    if (auto v = bound("minimum")) n.has_lo = true, n.lo = static_cast<int64_t>(std::ceil(*v));
    if (auto v = bound("exclusiveMinimum")) {
      const int64_t lo = static_cast<int64_t>(std::floor(*v)) + 1;
      n.lo = n.has_lo ? std::max(n.lo, lo) : lo, n.has_lo = true;
    }
    if (auto v = bound("maximum")) n.has_hi = true, n.hi = static_cast<int64_t>(std::floor(*v));
    if (auto v = bound("exclusiveMaximum")) {
      const int64_t hi = static_cast<int64_t>(std::ceil(*v)) - 1;
      n.hi = n.has_hi ? std::min(n.hi, hi) : hi, n.has_hi = true;
    }
    if (n.has_lo && n.has_hi && n.lo > n.hi) refuse(where, "no integer lies between the bounds");
  }

  int32_t typed(const Json& s, const std::string& type, const std::string& where, int depth) {
    if (type == "null") return add(literals_of({"null"}));
    if (type == "boolean") return add(literals_of({"true", "false"}));
    if (type == "integer" || type == "number") {
      const bool bounded = s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                           s.contains("exclusiveMaximum");
      if (type == "number" && !bounded) return add(node_of(Kind::number));
      Node n = node_of(Kind::integer);  // a bounded number is generated as an integer in range
      integer_bounds(s, n, where);
      return add(std::move(n));
    }
    if (type == "string") {
      Node n = node_of(Kind::string);
      count_bounds(s, "minLength", "maxLength", n, where);
      std::string regex;
      if (s.contains("pattern")) {
        if (!s["pattern"].is_string()) refuse(where, "'pattern' must be a string");
        if (s.contains("format")) refuse(where, "'pattern' with 'format' is not supported");
        regex = s["pattern"].get<std::string>();
      } else if (s.contains("format")) {
        const std::string format = s["format"].is_string() ? s["format"].get<std::string>() : "";
        regex = StringPattern::format_pattern(format);
        if (regex.empty())
          refuse(where, "'format' '" + format + "' is not supported (supported: date, time, date-time, uuid, ipv4)");
      }
      if (!regex.empty() || s.contains("pattern")) {
        try {
          g_->patterns_.push_back(StringPattern::compile(regex));
        } catch (const SchemaError& e) {
          refuse(where, std::string("'pattern' ") + e.what());
        }
        n.pattern = static_cast<int32_t>(g_->patterns_.size() - 1);
        const int64_t shortest = g_->patterns_.back().remaining(StringPattern::kStart);
        if (shortest >= StringPattern::kNever) refuse(where, "'pattern' matches no string the grammar can write");
        if (n.max >= 0 && shortest > n.max)
          refuse(where, "'pattern' needs at least " + std::to_string(shortest) + " characters, more than 'maxLength'");
        if (n.min > 0) refuse(where, "'pattern' with 'minLength' is not supported");
      }
      return add(std::move(n));
    }
    if (type == "array") {
      Node n = node_of(Kind::array);
      count_bounds(s, "minItems", "maxItems", n, where);
      if (s.contains("items") && s["items"].is_array()) refuse(where, "'items' as an array (tuples) is not supported");
      n.item = s.contains("items") ? compile(s["items"], where + "/items", depth + 1) : any();
      return add(std::move(n));
    }
    if (type == "object") return object(s, where, depth);
    refuse(where, "unknown type '" + type + "'");
  }

  int32_t object(const Json& s, const std::string& where, int depth) {
    std::set<std::string> required;
    if (s.contains("required")) {
      const Json& r = s["required"];
      if (!r.is_array()) refuse(where, "'required' must be an array of names");
      for (const Json& k : r) {
        if (!k.is_string()) refuse(where, "'required' must be an array of names");
        required.insert(k.get<std::string>());
      }
    }
    const bool has_props = s.contains("properties");
    if (has_props && !s["properties"].is_object()) refuse(where, "'properties' must be an object");
    if (!has_props && required.empty()) {  // a map: any keys, values of additionalProperties
      Node m = node_of(Kind::map);
      const Json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
      if (extra && extra->is_boolean() && !extra->get<bool>()) return add(literals_of({"{}"}));
      m.item = extra ? compile(*extra, where + "/additionalProperties", depth + 1) : any();
      return add(std::move(m));
    }
    Node n = node_of(Kind::object);
    std::set<std::string> declared;
    if (has_props) {
      for (const auto& [k, v] : s["properties"].items()) {
        declared.insert(k);
        n.props.push_back({Json(k).dump(), -1, required.count(k) > 0});
      }
      size_t i = 0;
      for (const auto& [k, v] : s["properties"].items())
        n.props[i++].value = compile(v, where + "/properties/" + k, depth + 1);
    }
    for (const std::string& k : required) {  // required but not declared: any value
      if (declared.count(k)) continue;
      const Json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
      if (extra && extra->is_boolean() && !extra->get<bool>())
        refuse(where, "'" + k + "' is required but additionalProperties is false");
      n.props.push_back({Json(k).dump(), extra && !extra->is_boolean() ? compile(*extra, where, depth + 1) : any(), true});
    }
    return add(std::move(n));
  }

  const Json* doc_;
  std::shared_ptr<JsonGrammar> g_ = std::make_shared<JsonGrammar>();
  std::map<std::string, int32_t> refs_;
  int32_t any_ = -1;
};

void JsonGrammar::finish() {
  const size_t n = nodes_.size();
  for (Node& node : nodes_) {
    std::sort(node.literals.begin(), node.literals.end());
    node.literals.erase(std::unique(node.literals.begin(), node.literals.end()), node.literals.end());
  }
  starts_.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    if (nodes_[i].kind != Kind::alternatives) {
      starts_[i] = {static_cast<int32_t>(i)};
      continue;
    }
    std::vector<uint8_t> seen(n, 0);
    std::vector<int32_t> stack = {static_cast<int32_t>(i)}, found;
    seen[i] = 1;
    while (!stack.empty()) {
      const int32_t a = stack.back();
      stack.pop_back();
      for (int32_t b : nodes_[static_cast<size_t>(a)].alts) {
        if (seen[static_cast<size_t>(b)]) continue;
        seen[static_cast<size_t>(b)] = 1;
        if (nodes_[static_cast<size_t>(b)].kind == Kind::alternatives) stack.push_back(b);
        else found.push_back(b);
      }
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) throw SchemaError("json_schema: a schema whose alternatives only refer to each other allows nothing");
    if (found.size() > kMaxStarts)
      throw SchemaError("json_schema: more than " + std::to_string(kMaxStarts) + " alternatives for one value");
    starts_[i] = std::move(found);
  }
  // Frames to complete a value: the fixpoint from "never" down (recursive schemas).
  constexpr int kNever = 1 << 20;
  need_.assign(n, kNever);
  const auto at = [&](int32_t i) { return need_[static_cast<size_t>(i)]; };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      const Node& node = nodes_[i];
      int v = 1;
      switch (node.kind) {
        case Kind::alternatives:
          v = kNever;
          for (int32_t s : starts_[i]) v = std::min(v, at(s));
          break;
        case Kind::array:
          v = node.min > 0 ? 1 + at(node.item) : 1;
          break;
        case Kind::object:
          for (const Property& prop : node.props)
            if (prop.required) v = std::max(v, 1 + at(prop.value));
          break;
        case Kind::sequence:
          for (int32_t part : node.alts) v = std::max(v, 1 + at(part));
          break;
        default: break;
      }
      v = std::min(v, kNever);
      if (v < need_[i]) need_[i] = v, changed = true;
    }
  }
  if (1 + at(root_) > kMaxDepth)
    throw SchemaError("json_schema: every value of the schema nests deeper than " + std::to_string(kMaxDepth - 1) +
                      " levels (or none is finite)");
}

std::shared_ptr<const JsonGrammar> JsonGrammar::any_object() { return SchemaCompiler(nullptr).any_object(); }

std::shared_ptr<const JsonGrammar> JsonGrammar::from_schema(const chat::Json& schema) {
  return SchemaCompiler(&schema).schema();
}

std::shared_ptr<const JsonGrammar> JsonGrammar::tool_call(const std::vector<Tool>& tools, const std::string& prefix,
                                                          const std::string& suffix, const std::string& args_key) {
  return SchemaCompiler(nullptr).tool_call(tools, prefix, suffix, args_key);
}

}  // namespace squeeze::generate
