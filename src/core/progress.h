// core/progress.h — progress for long work: a redrawn bar on a terminal, plain lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace squeeze {

class Progress {
 public:
  // total: units of work (steps, tensors, bytes). `out` defaults to stderr; the bar
  // is drawn only when `out` is a terminal, else one line per ~10% is printed.
  Progress(std::string label, int64_t total, std::FILE* out = stderr);
  ~Progress();

  // Thread-safe: add `n` finished units and an optional status text ("loss 2.31").
  void advance(int64_t n = 1, const std::string& status = "");
  void set_status(const std::string& status);
  // Prints the final line (also done by the destructor).
  void finish();

  int64_t done() const { return done_; }
  // Formats "[#####-----] 50% 5/10 1.2s eta 1.2s status" (exposed for tests).
  std::string render(int width) const;

 private:
  void draw_locked(bool final);

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  std::string status_;
  std::FILE* out_;
  bool is_tty_;
  bool finished_ = false;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  mutable std::mutex mutex_;
};

}  // namespace squeeze
