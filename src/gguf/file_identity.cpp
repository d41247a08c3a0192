// gguf/file_identity.cpp — stat()-based file identity and the open-input registry.
#include "gguf/file_identity.h"

#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace squeeze::gguf {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<FileIdentity> open;  // one entry per open File (duplicates allowed)
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::optional<FileIdentity> file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

OpenFileRegistration::OpenFileRegistration(FileIdentity id) : id_(id) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.open.push_back(id);
}

OpenFileRegistration::~OpenFileRegistration() { release(); }

void OpenFileRegistration::release() {
  if (!id_) return;
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = std::find(r.open.begin(), r.open.end(), *id_);
  if (it != r.open.end()) r.open.erase(it);
  id_.reset();
}

OpenFileRegistration::OpenFileRegistration(OpenFileRegistration&& other) noexcept
    : id_(std::exchange(other.id_, std::nullopt)) {}

OpenFileRegistration& OpenFileRegistration::operator=(OpenFileRegistration&& other) noexcept {
  if (this != &other) {
    release();
    id_ = std::exchange(other.id_, std::nullopt);
  }
  return *this;
}

bool is_open_for_reading(const FileIdentity& id) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return std::find(r.open.begin(), r.open.end(), id) != r.open.end();
}

}  // namespace squeeze::gguf
