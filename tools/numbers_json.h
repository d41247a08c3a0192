// tools/numbers_json.h — the --json file of the scoring commands (eval, perplexity): every
// printed number as one flat JSON object, keys in the order given, written atomically.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace squeeze::cli {

void write_numbers_json(const std::string& path, const std::vector<std::pair<std::string, double>>& values);

}  // namespace squeeze::cli
