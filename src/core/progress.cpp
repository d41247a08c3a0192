// core/progress.cpp
#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace squeeze {

namespace {
std::string format_seconds(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) / 60) % 60);
  return buf;
}
}  // namespace

Progress::Progress(std::string label, int64_t total, std::FILE* out)
    : label_(std::move(label)),
      total_(std::max<int64_t>(total, 0)),
      out_(out),
      is_tty_(out != nullptr && ::isatty(::fileno(out)) == 1),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

void Progress::advance(int64_t n, const std::string& status) {
  std::lock_guard lock(mutex_);
  done_ = std::min(done_ + n, total_ > 0 ? total_ : done_ + n);
  if (!status.empty()) status_ = status;
  draw_locked(false);
}

void Progress::set_status(const std::string& status) {
  std::lock_guard lock(mutex_);
  status_ = status;
  draw_locked(false);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  draw_locked(true);
}

std::string Progress::render(int width) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  const int filled = static_cast<int>(std::lround(frac * width));
  std::string line = label_ + " [";
  line.append(static_cast<size_t>(filled), '#');
  line.append(static_cast<size_t>(width - filled), '-');
  char buf[160];
  std::snprintf(buf, sizeof buf, "] %3d%% %lld/%lld %s", static_cast<int>(frac * 100),
                static_cast<long long>(done_), static_cast<long long>(total_), format_seconds(elapsed).c_str());
  line += buf;
  if (done_ > 0 && done_ < total_) line += " eta " + format_seconds(elapsed / frac - elapsed);
  if (!status_.empty()) line += " " + status_;
  return line;
}

void Progress::draw_locked(bool final) {
  if (out_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  if (is_tty_) {
    if (!final && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    std::fprintf(out_, "\r\033[K%s%s", render(30).c_str(), final ? "\n" : "");
  } else {
    const int decile = total_ > 0 ? static_cast<int>(10 * done_ / total_) : 10;
    if (!final && decile == last_decile_) return;
    if (final && decile == last_decile_ && decile == 10) return;
    last_decile_ = decile;
    std::fprintf(out_, "%s\n", render(20).c_str());
  }
  std::fflush(out_);
}

}  // namespace squeeze
