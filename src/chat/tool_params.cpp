// chat/tool_params.cpp — request tools → per-parameter kinds, reading the JSON defensively
// (it comes from a client: every access checks the type first, nothing throws).
#include "chat/tool_params.h"

#include <algorithm>

namespace squeeze::chat {
namespace {

const Json* member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// Nested schemas deeper than this are not looked into: they admit a string as far as we
// know, which keeps the parameter's text verbatim (the conservative reading).
constexpr int kMaxSchemaDepth = 32;

bool admits_string(const Json& schema, int depth) {
  if (!schema.is_object() || depth > kMaxSchemaDepth) return true;  // `true`, {}, or unreadable
  if (const Json* type = member(schema, "type")) {
    if (type->is_string()) return type->get_ref<const std::string&>() == "string";
    if (type->is_array())
      return std::any_of(type->begin(), type->end(), [](const Json& t) { return t.is_string() && t == "string"; });
    return true;
  }
  if (const Json* c = member(schema, "const")) return c->is_string();
  if (const Json* e = member(schema, "enum"); e && e->is_array())
    return std::any_of(e->begin(), e->end(), [](const Json& v) { return v.is_string(); });
  for (const char* key : {"anyOf", "oneOf"})
    if (const Json* branches = member(schema, key); branches && branches->is_array() && !branches->empty())
      return std::any_of(branches->begin(), branches->end(),
                         [&](const Json& b) { return admits_string(b, depth + 1); });
  if (const Json* branches = member(schema, "allOf"); branches && branches->is_array() && !branches->empty())
    return std::all_of(branches->begin(), branches->end(), [&](const Json& b) { return admits_string(b, depth + 1); });
  // An untyped schema that describes an object's or an array's shape is structured.
  for (const char* key : {"properties", "items", "additionalProperties", "required"})
    if (member(schema, key)) return false;
  return true;
}

}  // namespace

bool schema_admits_string(const Json& schema) { return admits_string(schema, 0); }

ToolParams ToolParams::from_json(const Json& tools) {
  ToolParams out;
  if (!tools.is_array()) return out;
  for (const Json& tool : tools) {
    const Json* fn = member(tool, "function");
    if (!fn || !fn->is_object()) fn = &tool;
    const Json* name = member(*fn, "name");
    if (!name || !name->is_string() || name->get_ref<const std::string&>().empty()) continue;
    auto& params = out.tools_[name->get_ref<const std::string&>()];
    const Json* schema = member(*fn, "parameters");
    const Json* props = schema ? member(*schema, "properties") : nullptr;
    if (!props || !props->is_object()) continue;
    for (auto it = props->begin(); it != props->end(); ++it)
      params[it.key()] = schema_admits_string(it.value()) ? ParamKind::string : ParamKind::json;
  }
  return out;
}

bool ToolParams::has_tool(std::string_view tool) const { return tools_.find(tool) != tools_.end(); }

ParamKind ToolParams::kind(std::string_view tool, std::string_view param) const {
  const auto t = tools_.find(tool);
  if (t == tools_.end()) return ParamKind::unknown;
  const auto p = t->second.find(param);
  return p == t->second.end() ? ParamKind::unknown : p->second;
}

}  // namespace squeeze::chat
