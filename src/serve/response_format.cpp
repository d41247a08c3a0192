// serve/response_format.cpp — response_format's spellings to a compiled grammar.
#include "serve/response_format.h"

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
  if (!body.contains("response_format") || body["response_format"].is_null()) return nullptr;
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

}  // namespace squeeze::serve
