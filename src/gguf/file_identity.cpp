// gguf/file_identity.cpp — stat()-based file identity and the open-input registry.
#include "gguf/file_identity.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "core/error.h"

namespace squeeze::gguf {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<FileIdentity> open;     // one entry per open File (duplicates allowed)
  std::vector<std::string> declared;  // DeclaredInputs' paths (duplicates allowed)
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

DeclaredInputs::DeclaredInputs(std::vector<std::string> paths) {
  for (auto& p : paths)
    if (!p.empty()) paths_.push_back(std::move(p));
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.declared.insert(r.declared.end(), paths_.begin(), paths_.end());
}

DeclaredInputs::~DeclaredInputs() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& p : paths_)
    if (auto it = std::find(r.declared.begin(), r.declared.end(), p); it != r.declared.end()) r.declared.erase(it);
}

void check_output_path(const std::string& path, const OutputPolicy& policy) {
  const auto target = file_identity(path);
  if (!target) return;  // a new file cannot be anyone's input
  const auto exempt = policy.replaces.empty() ? std::nullopt : file_identity(policy.replaces);
  if (exempt == target) return;
  std::vector<std::string> inputs = policy.inputs;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    inputs.insert(inputs.end(), r.declared.begin(), r.declared.end());
  }
  std::error_code ec;
  const std::filesystem::path resolved = std::filesystem::canonical(path, ec);
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    if (file_identity(in) == target) fail("refusing to overwrite '", path, "': it is the input file '", in, "'");
    // A folder input (a Hugging Face checkpoint) covers the files in it: its config.json,
    // tokenizer files, index and shards are read, and none may be replaced.
    if (std::filesystem::is_directory(in, ec) && !resolved.empty()) {
      const std::filesystem::path dir = std::filesystem::canonical(in, ec);
      if (!ec && std::mismatch(dir.begin(), dir.end(), resolved.begin(), resolved.end()).first == dir.end())
        fail("refusing to overwrite '", path, "': it is a file of the input folder '", in, "'");
    }
  }
  if (is_open_for_reading(*target))
    fail("refusing to overwrite '", path, "': it is a GGUF file currently open for reading");
}

}  // namespace squeeze::gguf
