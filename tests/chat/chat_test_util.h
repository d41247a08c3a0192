// tests/chat/chat_test_util.h — render a template source over a JSON context.
#pragma once

#include <string>

#include "chat/template.h"
#include "common/thrown_message.h"

namespace squeeze::chat::testing {

inline std::string render(const std::string& source, const Json& context = Json::object(),
                          TemplateOptions options = {}) {
  options.name = "t";
  options.now = 1721952000;  // 26 Jul 2024 00:00:00 UTC
  return Template(source, options).render(context);
}

// The error message of rendering (or parsing) `source`, "(no error)" when it renders.
inline std::string render_error(const std::string& source, const Json& context = Json::object(),
                                const RenderLimits& limits = {}) {
  return thrown_message([&] {
    TemplateOptions o;
    o.name = "t";
    Template(source, o).render(context, limits);
  });
}

}  // namespace squeeze::chat::testing
