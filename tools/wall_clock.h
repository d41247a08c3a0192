// tools/wall_clock.h — the commands' timings: a steady clock and the seconds since a point.
#pragma once

#include <chrono>

namespace squeeze::cli {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace squeeze::cli
