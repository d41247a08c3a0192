// serve/connection_guard.h — cpp-httplib's server with the connection handling a public
// listener needs. httplib parses requests and routes them; what it leaves open is taken
// here:
//   - a request's head must arrive within a deadline (not only each byte within the read
//     timeout: a client that trickles one byte per second would otherwise hold a worker
//     thread for ever), and its body within another, and at most max_body bytes of it,
//     chunked or not;
//   - a worker thread is never left to an idle or trickling connection while a new one
//     waits: when every worker is busy, the connection that has waited longest for a
//     request head is closed, so /health and real requests always get a worker;
//   - past the worker count plus a backlog of as many, a connection gets an immediate
//     503 and is closed;
//   - a request answered without reading its body (401, 413, 403) closes the connection
//     after the answer, instead of reading the body as the next request;
//   - stop() also closes every connection waiting for a request, so shutdown does not
//     wait for slow clients.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace squeeze::serve {

struct ConnectionLimits {
  int workers = 128;             // connections served at once (one thread each)
  int head_timeout_s = 10;       // from the first wait to a request's complete head
  int body_timeout_s = 60;       // from the head to the end of the body
  int idle_timeout_s = 30;       // keep-alive: between requests; also each read or write
  size_t max_head_bytes = 64 << 10;
  size_t max_body_bytes = 8 << 20;
  int keep_alive_requests = 100;  // requests on one connection before it is closed
};

class GuardedHttpServer : public httplib::Server {
 public:
  explicit GuardedHttpServer(const ConnectionLimits& limits);

  // Called from a handler (or the pre-routing handler): close this connection after the
  // response, as when the body was left unread.
  static void close_after_response();

  // Stops accepting and closes every connection waiting for a request head.
  void shut_down();

  // Connections now open in a worker, and those waiting for a request head.
  int open_connections() const { return open_.load(); }

 private:
  class WorkerPool;
  friend class WorkerPool;

  bool process_and_close_socket(socket_t sock) override;
  // Marks `sock` as waiting for a request head (evictable) or not.
  void set_waiting(socket_t sock, bool waiting);
  // Closes (shuts down) the connection that has waited longest for a head; false if none.
  bool evict_longest_waiting();
  void lingering_close(socket_t sock);

  ConnectionLimits limits_;
  std::atomic<int> open_{0};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::map<socket_t, std::chrono::steady_clock::time_point> waiting_;  // sock → since
};

}  // namespace squeeze::serve
