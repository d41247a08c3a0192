// tests/common/thrown_message.h — the message of the squeeze::Error a call throws, for
// tests that check an error names what is wrong ("(no error)" when nothing is thrown).
#pragma once

#include <functional>
#include <string>

#include "core/error.h"

namespace squeeze {

inline std::string thrown_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace squeeze
