// serve/connection_guard.cpp — deadlines per request phase, eviction of waiting
// connections, a bounded backlog, and closing connections whose body was left unread.
#include "serve/connection_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

namespace squeeze::serve {

namespace {

using Clock = std::chrono::steady_clock;

// Set while the listener thread runs a connection it has no room for: answer 503, close.
thread_local bool t_reject = false;

// What a handler asked of the connection it runs on.
struct ConnectionState {
  bool close = false;
};
thread_local ConnectionState* t_connection = nullptr;

// A socket stream whose reads end at the current phase's deadline and byte budget, not
// only after an idle gap: httplib's own stream resets its timeout with every byte.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(socket_t sock, const ConnectionLimits& limits) : sock_(sock), limits_(limits) {}

  void begin_head() { begin(Phase::head, limits_.head_timeout_s); }
  void begin_body() { begin(Phase::body, limits_.body_timeout_s); }
  size_t body_bytes() const { return body_bytes_; }
  bool has_buffered() const { return pos_ < len_; }

  // Waits up to `seconds` for the first byte of a next request.
  bool wait_for_request(int seconds) {
    return has_buffered() || wait(POLLIN, Clock::now() + std::chrono::seconds(seconds)) > 0;
  }

  bool is_readable() const override { return has_buffered() || wait(POLLIN, deadline_) > 0; }

  bool is_writable() const override {
    return wait(POLLOUT, Clock::now() + std::chrono::seconds(limits_.idle_timeout_s)) > 0 && peer_alive();
  }

  ssize_t read(char* ptr, size_t size) override {
    if (!has_buffered()) {
      if (wait(POLLIN, deadline_) <= 0) return -1;
      const ssize_t n = ::recv(sock_, buf_, sizeof buf_, 0);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, len_ - pos_);
    if (!within_budget(n)) return -1;
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (wait(POLLOUT, Clock::now() + std::chrono::seconds(limits_.idle_timeout_s)) <= 0) return -1;
    return ::send(sock_, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(getsockname, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  enum class Phase { head, body };

  void begin(Phase p, int seconds) {
    phase_ = p;
    head_bytes_ = body_bytes_ = 0;
    deadline_ = Clock::now() + std::chrono::seconds(seconds);
  }

  // Head bytes past max_head_bytes, or body bytes (chunk framing included) well past
  // max_body_bytes, end the request.
  bool within_budget(size_t n) {
    if (phase_ == Phase::head) return (head_bytes_ += n) <= limits_.max_head_bytes;
    return (body_bytes_ += n) <= 2 * limits_.max_body_bytes + (64 << 10);
  }

  // poll() for `events` until `deadline`, and never longer than the idle timeout at once.
  int wait(short events, Clock::time_point deadline) const {
    const Clock::time_point idle_end = Clock::now() + std::chrono::seconds(limits_.idle_timeout_s);
    const Clock::time_point end = std::min(deadline, idle_end);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      if (left <= 0) return 0;
      pollfd p{sock_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r > 0 && (p.revents & (POLLERR | POLLNVAL))) return -1;
      return r;
    }
  }

  // False once the peer has closed or reset the connection.
  bool peer_alive() const {
    pollfd p{sock_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return true;
    char c;
    return ::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  template <class Getter>
  void address_of(Getter getter, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ip.clear();
    port = 0;
    if (getter(sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  socket_t sock_;
  const ConnectionLimits& limits_;
  Phase phase_ = Phase::head;
  Clock::time_point deadline_ = Clock::now();
  size_t head_bytes_ = 0, body_bytes_ = 0;
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
};

void reject_busy(socket_t sock) {
  const std::string body =
      R"({"error":{"message":"too many connections; retry later","type":"unavailable_error","param":null,"code":503}})";
  const std::string response = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                               "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  // Never blocks the listener: a client that does not read gets what fits in the buffer.
  (void)::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

}  // namespace

// Worker threads that never leave a new connection queued behind idle ones: when no
// worker is free, the connection waiting longest for a request head is closed. Past a
// backlog as long as the worker count, the listener answers 503 itself.
class GuardedHttpServer::WorkerPool final : public httplib::TaskQueue {
 public:
  WorkerPool(GuardedHttpServer& server, int workers) : server_(server), backlog_(static_cast<size_t>(workers)) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }

  void enqueue(std::function<void()> fn) override {
    bool reject = false;
    {
      std::lock_guard lock(mu_);
      if (static_cast<size_t>(idle_) <= jobs_.size()) server_.evict_longest_waiting();
      if (jobs_.size() >= backlog_) {
        reject = true;
      } else {
        jobs_.push_back(std::move(fn));
      }
    }
    if (reject) {
      t_reject = true;
      fn();
      t_reject = false;
      return;
    }
    cv_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        ++idle_;
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        --idle_;
        if (jobs_.empty()) return;  // stopping
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  GuardedHttpServer& server_;
  const size_t backlog_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  int idle_ = 0;
  bool stop_ = false;
};

GuardedHttpServer::GuardedHttpServer(const ConnectionLimits& limits) : limits_(limits) {
  const int workers = std::max(1, limits_.workers);
  new_task_queue = [this, workers] { return new WorkerPool(*this, workers); };
  set_payload_max_length(limits_.max_body_bytes);
  set_read_timeout(limits_.idle_timeout_s, 0);
  set_write_timeout(limits_.idle_timeout_s, 0);
  set_keep_alive_timeout(limits_.idle_timeout_s);
  set_keep_alive_max_count(static_cast<size_t>(limits_.keep_alive_requests));
}

void GuardedHttpServer::close_after_response() {
  if (t_connection) t_connection->close = true;
}

void GuardedHttpServer::set_waiting(socket_t sock, bool waiting) {
  std::lock_guard lock(mu_);
  if (waiting) {
    waiting_[sock] = Clock::now();
  } else {
    waiting_.erase(sock);
  }
}

bool GuardedHttpServer::evict_longest_waiting() {
  std::lock_guard lock(mu_);
  if (waiting_.empty()) return false;
  auto oldest = std::min_element(waiting_.begin(), waiting_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
  // Its worker's poll wakes and sees the end of the stream; it closes the socket, after
  // taking it out of waiting_ under this lock, so the descriptor cannot be reused here.
  ::shutdown(oldest->first, SHUT_RDWR);
  waiting_.erase(oldest);
  return true;
}

void GuardedHttpServer::shut_down() {
  stopping_ = true;
  {
    std::lock_guard lock(mu_);
    for (const auto& [sock, since] : waiting_) ::shutdown(sock, SHUT_RDWR);
    waiting_.clear();
  }
  stop();
}

// Closes after the client has had the chance to read our last answer: shutting down our
// side first and reading (and dropping) what it still sends avoids a reset that would
// discard the answer in flight — a 401 or 413 sent while the client still sends its body,
// as clients that read only after sending do. The drain is bounded in bytes and time, and
// evictable like a connection waiting for a head.
void GuardedHttpServer::lingering_close(socket_t sock) {
  set_waiting(sock, true);
  ::shutdown(sock, SHUT_WR);
  const Clock::time_point end = Clock::now() + std::chrono::seconds(limits_.body_timeout_s);
  const size_t budget = 2 * limits_.max_body_bytes + (1 << 20);
  char sink[16384];
  for (size_t drained = 0; drained <= budget;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    pollfd p{sock, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000L * limits_.idle_timeout_s))) <= 0) break;
    const ssize_t n = ::recv(sock, sink, sizeof sink, 0);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  set_waiting(sock, false);
  ::close(sock);
}

bool GuardedHttpServer::process_and_close_socket(socket_t sock) {
  if (t_reject || stopping_) {
    reject_busy(sock);
    return false;
  }
  ++open_;
  DeadlineStream stream(sock, limits_);
  ConnectionState state;
  t_connection = &state;
  for (int n = 0; n < limits_.keep_alive_requests && !stopping_; ++n) {
    set_waiting(sock, true);
    if (stopping_) break;  // shut_down() may have cleared waiting_ just before
    if (n > 0 && !stream.wait_for_request(limits_.idle_timeout_s)) break;
    stream.begin_head();
    state = {};
    bool head_done = false, chunked = false, closed = false;
    uint64_t content_length = 0;
    process_request(stream, n + 1 == limits_.keep_alive_requests, closed, [&](httplib::Request& req) {
      head_done = true;
      set_waiting(sock, false);
      stream.begin_body();
      content_length = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
      chunked = req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
    });
    set_waiting(sock, false);
    if (!head_done || closed || state.close || stopping_) break;
    // A body the handler never read would be parsed as the next request.
    if (stream.body_bytes() < content_length || (chunked && stream.body_bytes() == 0)) break;
  }
  t_connection = nullptr;
  lingering_close(sock);
  --open_;
  return true;
}

}  // namespace squeeze::serve
