// gguf/atomic_file.cpp — temporary file + fsync + rename.
#include "gguf/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iterator>
#include <mutex>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"

namespace squeeze::gguf {
namespace {

constexpr size_t kBufferBytes = size_t{4} << 20;  // big enough that syscalls are not the cost

std::string parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Temporaries in flight, for the SIGINT / SIGTERM handler to remove (a killed convert used
// to leave ~200 MB hidden files). Fixed slots with their own path buffers: the handler may
// only read memory that no other thread frees under it.
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 live
  char path[4096] = {};
};
TempSlot g_temps[64];

void remove_temporaries_and_die(int sig) {
  for (TempSlot& s : g_temps)
    if (s.state.load() == 2) ::unlink(s.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Installed once, and only over the default action: a command with its own handler (chat's
// SIGINT stops an answer) or one that waits for signals (serve) keeps its own.
void install_cleanup_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = remove_temporaries_and_die;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

int claim_temp_slot(const std::string& path) {
  install_cleanup_handlers();
  if (path.size() >= sizeof(TempSlot::path)) return -1;
  for (int i = 0; i < static_cast<int>(std::size(g_temps)); ++i) {
    int expected = 0;
    if (!g_temps[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_temps[i].path, path.c_str(), path.size() + 1);
    g_temps[i].state.store(2);
    return i;
  }
  return -1;  // more than 64 at once: this one is not removed on a signal
}

void release_temp_slot(int slot) {
  if (slot >= 0) g_temps[slot].state.store(0);
}

}  // namespace

AtomicFile::AtomicFile(std::string target, const OutputPolicy& policy) : target_(std::move(target)) {
  SQZ_CHECK(!target_.empty() && target_.back() != '/', "'", target_, "' is not a file path");
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail("'", target_, "' is a directory");
  check_output_path(target_, policy);
  // A unique name without mkstemp, so that open(O_CREAT, 0666) applies the umask the
  // way any newly created file would get it.
  static std::atomic<uint64_t> counter{0};
  const auto stamp = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_ = parent_dir(target_) + "/." + base_name(target_) + ".tmp-" + std::to_string(::getpid()) + "-" +
            std::to_string(stamp % 1000000007u) + "-" + std::to_string(counter++);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) fail("cannot create '", temp_, "': ", std::strerror(errno));
  }
  SQZ_CHECK(fd_ >= 0, "cannot create a temporary file next to '", target_, "'");
  temp_slot_ = claim_temp_slot(temp_);
  buffer_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
  release_temp_slot(temp_slot_);
}

void AtomicFile::write_all(const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write to '", temp_, "' failed: ", std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::flush() {
  write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::write(std::span<const uint8_t> bytes) {
  SQZ_CHECK(fd_ >= 0 && !committed_, "write to a closed AtomicFile");
  written_ += bytes.size();
  if (buffer_.size() + bytes.size() <= kBufferBytes) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return;
  }
  flush();
  if (bytes.size() >= kBufferBytes) write_all(bytes.data(), bytes.size());  // large tensors bypass the buffer
  else buffer_.assign(bytes.begin(), bytes.end());
}

void AtomicFile::write_zeros(uint64_t n) {
  static const uint8_t kZeros[4096] = {};
  while (n > 0) {
    const size_t k = n < sizeof kZeros ? static_cast<size_t>(n) : sizeof kZeros;
    write({kZeros, k});
    n -= k;
  }
}

void AtomicFile::commit() {
  SQZ_CHECK(fd_ >= 0 && !committed_, "AtomicFile committed twice");
  flush();
  if (::fsync(fd_) != 0) fail("fsync of '", temp_, "' failed: ", std::strerror(errno));
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail("close of '", temp_, "' failed: ", std::strerror(errno));
  if (::rename(temp_.c_str(), target_.c_str()) != 0)
    fail("cannot rename '", temp_, "' to '", target_, "': ", std::strerror(errno));
  committed_ = true;
  release_temp_slot(temp_slot_);
  temp_slot_ = -1;
  // Persist the directory entry too; failure here cannot be undone, so it is not an error.
  const int dir = ::open(parent_dir(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::string& path, std::string_view content, const OutputPolicy& policy) {
  AtomicFile out(path, policy);
  out.write(content);
  out.commit();
}

}  // namespace squeeze::gguf
