// gguf/file_identity.h — "is this the same file?" by device + inode; the registry of
// GGUF files currently open for reading; and the inputs a command declares. Every file
// squeeze writes goes through check_output_path (AtomicFile calls it), so no output ever
// replaces one of the command's inputs, whatever the path spelling or symlinks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// RAII declaration of a command's input paths (models, texts, vocabularies, checkpoints
// it resumes from): while it lives, check_output_path refuses them as outputs. Empty
// paths are skipped, so optional inputs can be passed as they are. A path is resolved
// when checked, so an input that does not exist yet is still covered once it does.
class DeclaredInputs {
 public:
  explicit DeclaredInputs(std::vector<std::string> paths);
  ~DeclaredInputs();
  DeclaredInputs(const DeclaredInputs&) = delete;
  DeclaredInputs& operator=(const DeclaredInputs&) = delete;

 private:
  std::vector<std::string> paths_;
};

// What an output may replace.
struct OutputPolicy {
  // More inputs of this output alone (on top of the declared ones).
  std::vector<std::string> inputs = {};
  // A documented in-place update: the one input this output may replace (e.g. the
  // checkpoint a resumed run continues). Safe because the write is atomic: readers
  // holding the old file keep the old inode, and the new file appears whole.
  std::string replaces = {};
};

// Throws a one-line squeeze::Error if writing `path` would replace a declared input, one
// of policy.inputs or a GGUF file open for reading (same device + inode, through
// symlinks), unless that file is policy.replaces. A path that does not exist is fine.
void check_output_path(const std::string& path, const OutputPolicy& policy = {});

}  // namespace squeeze::gguf
