// text/stop.cpp — see stop.h.
#include "text/stop.h"

#include <algorithm>

#include "core/error.h"

namespace squeeze::text {

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::none: return "none";
    case StopReason::eos: return "eos";
    case StopReason::stop_string: return "stop";
    case StopReason::max_tokens: return "length";
  }
  return "?";
}

StopChecker::StopChecker(StopParams params) : params_(std::move(params)) {
  for (const std::string& s : params_.stop_strings) SQZ_CHECK(!s.empty(), "stop strings must not be empty");
  SQZ_CHECK(params_.max_tokens >= -1, "max_tokens must be >= -1 (got ", params_.max_tokens, ")");
}

size_t StopChecker::hold_back() const {
  const size_t n = pending_.size();
  size_t hold = 0;
  // The longest tail of pending_ that is a proper prefix of a stop string.
  for (const std::string& s : params_.stop_strings) {
    for (size_t len = std::min(n, s.size() - 1); len > hold; --len) {
      if (pending_.compare(n - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  // An incomplete UTF-8 sequence at the end: a lead byte within the last 3 bytes whose
  // sequence runs past the end, followed only by continuation bytes.
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(pending_[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation: keep looking for the lead
    const size_t need = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
    if (need > back) hold = std::max(hold, back);
    break;
  }
  return hold;
}

StopStep StopChecker::push(int32_t token, std::string_view piece) {
  SQZ_CHECK(reason_ == StopReason::none, "generation already stopped (", stop_reason_name(reason_), ")");
  ++n_tokens_;
  StopStep step;
  if (std::find(params_.eos_ids.begin(), params_.eos_ids.end(), token) != params_.eos_ids.end()) {
    step.text = finish();
    reason_ = step.reason = StopReason::eos;
    return step;
  }
  if (params_.max_tokens >= 0 && n_tokens_ > params_.max_tokens) {  // max_tokens == 0
    step.text = finish();
    reason_ = step.reason = StopReason::max_tokens;
    return step;
  }
  // Only the held tail and the new piece can contain a stop string: any earlier start
  // would have been held back.
  pending_.append(piece);
  size_t first = std::string::npos;
  for (const std::string& s : params_.stop_strings) {
    const size_t at = pending_.find(s);
    if (at == std::string::npos) continue;
    if (at < first || (at == first && s.size() > matched_.size())) {
      first = at;
      matched_ = s;
    }
  }
  if (first != std::string::npos) {
    step.text = pending_.substr(0, first);
    pending_.clear();
    reason_ = step.reason = StopReason::stop_string;
    return step;
  }
  if (params_.max_tokens >= 0 && n_tokens_ >= params_.max_tokens) {
    step.text = finish();
    reason_ = step.reason = StopReason::max_tokens;
    return step;
  }
  const size_t emit = pending_.size() - hold_back();
  step.text = pending_.substr(0, emit);
  pending_.erase(0, emit);
  return step;
}

std::string StopChecker::finish() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace squeeze::text
