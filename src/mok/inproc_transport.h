// mok/inproc_transport.h — R ranks as threads of one process sharing one address space.
//
// get/put are memcpy into the peer's memory and flags are std::atomic, the analogue of
// GPUs in one NVLink domain loading and storing each other's memory.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <vector>

#include "mok/transport.h"

namespace squeeze::mok {

// Runs fn(transport) on R threads, one rank each, over a fresh shared world; returns
// each rank's exception (null when it finished cleanly).
std::vector<std::exception_ptr> run_inproc_ranks(int n_ranks, const std::function<void(Transport&)>& fn,
                                                 std::chrono::milliseconds timeout = std::chrono::seconds(10));

// As above, rethrowing the first rank's exception (prefixed "rank r: ").
void run_inproc_ranks_or_throw(int n_ranks, const std::function<void(Transport&)>& fn,
                               std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace squeeze::mok
