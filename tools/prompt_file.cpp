// tools/prompt_file.cpp
#include "prompt_file.h"

#include <fstream>
#include <optional>

#include "generate/conversation.h"
#include "core/error.h"
#include "generate/chat_format.h"

namespace squeeze::cli {

using namespace generate;

std::vector<std::vector<int32_t>> read_prompt_file(const std::string& path, const model::Model& model, bool chat) {
  std::optional<generate::ChatFormat> format;
  if (chat) format.emplace(model);
  std::ifstream in(path);
  SQZ_CHECK(in.good(), path, ": cannot open");
  std::vector<std::vector<int32_t>> prompts;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (format) {
      Conversation c;
      c.add("user", line);
      prompts.push_back(format->encode(c.to_json(), true));
    } else {
      prompts.push_back(model.tokenizer().encode(line));
    }
  }
  SQZ_CHECK(!prompts.empty(), path, ": no prompts");
  return prompts;
}

}  // namespace squeeze::cli
