// chat/tool_params.h — what a request's tools say about their parameters, as much as an
// output parser needs to type the arguments a model writes as text: is a parameter's text
// kept as a string verbatim, or read as JSON (numbers, booleans, objects, arrays, null)?
//
//   ToolParams tools = ToolParams::from_json(request["tools"]);
//   tools.kind("get_weather", "city")  // ParamKind::string
//
// Built from untrusted request JSON, so it never throws: entries without a usable name are
// skipped, and a schema it cannot read types its parameter as `unknown`.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "chat/value.h"

namespace squeeze::chat {

enum class ParamKind {
  unknown,  // not declared by the tool (or no such tool): JSON when the text is JSON, else a string
  string,   // the schema admits a string: the text verbatim, spaces and quotes included
  json,     // the schema admits only non-strings: JSON when the text is JSON, else a string
};

class ToolParams {
 public:
  ToolParams() = default;
  // `tools`: a list of OpenAI-style {"type": "function", "function": {"name", "parameters"}}
  // or bare {"name", "parameters"}; anything else (null included) gives no tools.
  static ToolParams from_json(const Json& tools);

  bool empty() const { return tools_.empty(); }
  bool has_tool(std::string_view tool) const;
  ParamKind kind(std::string_view tool, std::string_view param) const;

 private:
  std::map<std::string, std::map<std::string, ParamKind, std::less<>>, std::less<>> tools_;
};

// Whether a JSON schema admits a string value (type "string" or a list holding it, a string
// enum or const, any branch of anyOf/oneOf, every branch of allOf; a schema without any
// constraint, or one it cannot resolve such as a $ref, admits anything).
bool schema_admits_string(const Json& schema);

}  // namespace squeeze::chat
