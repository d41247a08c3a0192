// serve/response_format.h — OpenAI's response_format as a grammar for constrained sampling.
//
//   {"type": "text"}                                  free text (null grammar)
//   {"type": "json_object"}                           any JSON object
//   {"type": "json_object", "schema": {...}}          llama-server's spelling of a schema
//   {"type": "json_schema", "json_schema": {"name": "...", "schema": {...}, "strict": true}}
//
// A schema keyword the grammar cannot enforce is a 400 naming it (generate/json_grammar.h
// lists what is enforced and how).
#pragma once

#include <memory>

#include "chat/value.h"
#include "generate/json_grammar.h"

namespace squeeze::serve {

// Null for free text. Throws ApiError (400, param response_format).
std::shared_ptr<const generate::JsonGrammar> response_format_grammar(const chat::Json& body);

}  // namespace squeeze::serve
