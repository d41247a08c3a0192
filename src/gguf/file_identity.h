// gguf/file_identity.h — "is this the same file?" by device + inode, and the registry
// of GGUF files currently open for reading, which the writer consults so that it never
// replaces a file that is still mapped as an input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace squeeze::gguf {

struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The identity of the file at `path` (following symlinks); nullopt if it does not exist.
std::optional<FileIdentity> file_identity(const std::string& path);

// RAII registration of an open input; File holds one while its mapping lives.
class OpenFileRegistration {
 public:
  OpenFileRegistration() = default;
  explicit OpenFileRegistration(FileIdentity id);
  ~OpenFileRegistration();
  OpenFileRegistration(OpenFileRegistration&& other) noexcept;
  OpenFileRegistration& operator=(OpenFileRegistration&& other) noexcept;
  OpenFileRegistration(const OpenFileRegistration&) = delete;
  OpenFileRegistration& operator=(const OpenFileRegistration&) = delete;

 private:
  void release();
  std::optional<FileIdentity> id_;
};

// True while some gguf::File holds this file open.
bool is_open_for_reading(const FileIdentity& id);

}  // namespace squeeze::gguf
