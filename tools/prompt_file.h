// tools/prompt_file.h — a file of prompts, one per line (blank lines skipped), as token ids:
// raw text, or each line as one user message in the model's chat template (spec-bench,
// train-drafter).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace squeeze::cli {

// Throws naming the file when it cannot be read or holds no prompt, or the model has no
// chat template and `chat` asks for it.
std::vector<std::vector<int32_t>> read_prompt_file(const std::string& path, const model::Model& model, bool chat);

}  // namespace squeeze::cli
