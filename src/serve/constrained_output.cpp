// serve/constrained_output.cpp — response_format and tool_choice to compiled grammars.
#include "serve/constrained_output.h"

#include "serve/openai_api.h"

namespace squeeze::serve {

using chat::Json;

namespace {

ApiError bad_format(const std::string& message) { return ApiError(400, message, "response_format"); }

std::shared_ptr<const generate::JsonGrammar> compile(const Json& schema) {
  try {
    return generate::JsonGrammar::from_schema(schema);
  } catch (const generate::SchemaError& e) {
    throw bad_format(std::string("response_format: ") + e.what());
  }
}

}  // namespace

std::shared_ptr<const generate::JsonGrammar> response_format_grammar(const Json& body) {
  const bool format = body.contains("response_format") && !body["response_format"].is_null();
  if (body.contains("json_schema") && !body["json_schema"].is_null()) {  // llama-server's top-level field
    if (format) throw bad_format("give 'response_format' or llama-server's 'json_schema', not both");
    return compile(body["json_schema"]);
  }
  if (!format) return nullptr;
  const Json& f = body["response_format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string()) throw bad_format("'response_format' needs a 'type'");
  const std::string type = f["type"].get<std::string>();
  if (type == "text") return nullptr;
  if (type == "json_object") {
    if (f.contains("schema") && !f["schema"].is_null()) return compile(f["schema"]);
    return generate::JsonGrammar::any_object();
  }
  if (type == "json_schema") {
    if (!f.contains("json_schema") || !f["json_schema"].is_object())
      throw bad_format("response_format 'json_schema' needs a 'json_schema' object");
    const Json& js = f["json_schema"];
    if (!js.contains("schema") || js["schema"].is_null())
      throw bad_format("response_format 'json_schema' needs 'json_schema.schema'");
    return compile(js["schema"]);
  }
  throw bad_format("response_format '" + type + "' is not supported (use \"text\", \"json_object\" or \"json_schema\")");
}

ToolChoice parse_tool_choice(const Json& body) {
  ToolChoice c;
  if (!body.contains("tool_choice") || body["tool_choice"].is_null()) return c;
  const Json& t = body["tool_choice"];
  const auto bad_choice = [](const std::string& m) { return ApiError(400, m, "tool_choice"); };
  if (t.is_string()) {
    c.mode = t.get<std::string>();
    if (c.mode != "auto" && c.mode != "none" && c.mode != "required")
      throw bad_choice("'tool_choice' \"" + c.mode + "\" is not one of \"auto\", \"none\", \"required\" or a function");
    return c;
  }
  if (!t.is_object() || !t.contains("function") || !t["function"].is_object() || !t["function"].contains("name") ||
      !t["function"]["name"].is_string())
    throw bad_choice("'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  c.mode = "function";
  c.function = t["function"]["name"].get<std::string>();
  return c;
}

std::shared_ptr<const generate::JsonGrammar> tool_choice_grammar(const ToolChoice& choice, const Json& tools,
                                                                 generate::OutputFraming framing) {
  if (choice.mode != "required" && choice.mode != "function") return nullptr;
  const auto bad_choice = [](const std::string& m) { return ApiError(400, m, "tool_choice"); };
  if (!tools.is_array() || tools.empty()) throw bad_choice("'tool_choice' \"" + choice.mode + "\" needs 'tools'");
  std::string prefix, suffix, args_key;
  switch (framing) {
    case generate::OutputFraming::tagged:
      prefix = "<tool_call>\n", suffix = "\n</tool_call>", args_key = "arguments";
      break;
    case generate::OutputFraming::llama3_json:
      args_key = "parameters";
      break;
    case generate::OutputFraming::muse_glimmer:
    case generate::OutputFraming::harmony:
      throw bad_choice("'tool_choice' \"" + choice.mode + "\" needs a model whose calls are plain text; this model frames "
                       "them with control tokens");
    case generate::OutputFraming::plain:
      throw bad_choice("'tool_choice' \"" + choice.mode + "\": this model's chat format has no tool calls");
  }
  std::vector<generate::JsonGrammar::Tool> list;
  for (const Json& t : tools) {
    const Json& fn = t.contains("function") ? t["function"] : t;
    if (!fn.contains("name") || !fn["name"].is_string()) continue;
    const std::string name = fn["name"].get<std::string>();
    if (choice.mode == "function" && name != choice.function) continue;
    list.push_back({name, fn.contains("parameters") && fn["parameters"].is_object() ? &fn["parameters"] : nullptr});
  }
  if (list.empty()) throw bad_choice("'tool_choice' names '" + choice.function + "', which is not in 'tools'");
  try {
    return generate::JsonGrammar::tool_call(list, prefix, suffix, args_key);
  } catch (const generate::SchemaError& e) {
    throw ApiError(400, std::string("tools: ") + e.what(), "tools");
  }
}

}  // namespace squeeze::serve
