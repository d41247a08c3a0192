// core/error.h — the one error type of squeeze, carrying a chain of context.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace squeeze {

// Error: what went wrong, plus where ("model.gguf: tensor 'x': offset past end").
// Thrown by every component; the CLI prints what() on one line and exits non-zero.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}

  // A new error whose message is "context: <this message>".
  Error with_context(std::string_view context) const {
    return Error(std::string(context) + ": " + what());
  }
};

// Throws an Error whose message is the streamed parts: fail("bad dim ", i, " of ", n).
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  throw Error(out.str());
}

}  // namespace squeeze

// SQZ_CHECK(cond, parts...): throws squeeze::Error made of the parts when cond is false.
#define SQZ_CHECK(cond, ...)                   \
  do {                                         \
    if (!(cond)) ::squeeze::fail(__VA_ARGS__); \
  } while (0)
