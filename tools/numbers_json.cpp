// tools/numbers_json.cpp — see numbers_json.h.
#include "numbers_json.h"

#include <cstdio>

#include "gguf/atomic_file.h"

namespace squeeze::cli {

void write_numbers_json(const std::string& path, const std::vector<std::pair<std::string, double>>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    char num[64];
    std::snprintf(num, sizeof num, "%.9g", values[i].second);  // 9 digits: a float round-trips
    out += std::string(i ? ", " : "") + '"' + values[i].first + "\": " + num;
  }
  gguf::write_file_atomically(path, out + "}\n");
}

}  // namespace squeeze::cli
