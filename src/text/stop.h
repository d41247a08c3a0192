// text/stop.h — when generation ends, and which text is safe to show while streaming.
//
// Stop strings are matched on the decoded text, across token boundaries. While
// streaming, a tail of the text that could still become a stop string is held back (and
// so is an incomplete UTF-8 sequence at the very end), so a stop string is never
// partly printed. Generation ends with the first token whose text completes a stop
// string; the text before the earliest stop string is emitted, the stop string is not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace squeeze::text {

enum class StopReason { none, eos, stop_string, max_tokens };
const char* stop_reason_name(StopReason r);

struct StopParams {
  std::vector<int32_t> eos_ids = {};         // end-of-generation tokens (their text is not emitted)
  std::vector<std::string> stop_strings = {};  // non-empty
  int64_t max_tokens = -1;                // tokens to generate at most; -1: no limit
};

struct StopStep {
  std::string text;  // ready to print now
  StopReason reason = StopReason::none;
  bool stopped() const { return reason != StopReason::none; }
};

class StopChecker {
 public:
  explicit StopChecker(StopParams params);

  // One generated token and its decoded bytes. After a step that stopped, further
  // calls are errors.
  StopStep push(int32_t token, std::string_view piece);
  // Ends generation for another reason (e.g. the context is full): the held text.
  std::string finish();

  int64_t n_tokens() const { return n_tokens_; }
  StopReason reason() const { return reason_; }
  // The stop string that ended generation (reason stop_string).
  const std::string& matched_stop() const { return matched_; }

 private:
  size_t hold_back() const;  // bytes at the end of pending_ that must wait

  StopParams params_;
  std::string pending_;  // decoded text not yet emitted
  int64_t n_tokens_ = 0;
  StopReason reason_ = StopReason::none;
  std::string matched_;
};

}  // namespace squeeze::text
