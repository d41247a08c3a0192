// chat/interpreter.h — runs a parsed template over a context (internal to chat/).
#pragma once

#include <optional>
#include <string>

#include "chat/ast.h"
#include "chat/template.h"

namespace squeeze::chat {

std::string run_template(const Body& body, const DictItems& context, const TemplateOptions& options,
                         const RenderLimits& limits);

}  // namespace squeeze::chat
