// gguf/atomic_file.h — write-to-temporary-then-rename, so the target is either the old
// file or the complete new one, never half of one.
//
// The temporary lives in the target's directory (rename must not cross file systems)
// under a hidden unique name. commit() flushes, fsyncs, renames and fsyncs the
// directory; destroying an uncommitted AtomicFile removes the temporary, and so does a
// SIGINT or SIGTERM (where the command keeps the default action for them).
//
// This is the one way squeeze writes a file (models, reports, JSON, CSV, .npy, plots,
// checkpoints): the constructor refuses a target that is one of the command's inputs
// (gguf::check_output_path) before anything is written.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file_identity.h"

namespace squeeze::gguf {

class AtomicFile {
 public:
  explicit AtomicFile(std::string target, const OutputPolicy& policy = {});
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Buffered append; throws squeeze::Error on I/O failure (e.g. disk full).
  void write(std::span<const uint8_t> bytes);
  void write(std::string_view text) { write({reinterpret_cast<const uint8_t*>(text.data()), text.size()}); }
  void write_zeros(uint64_t n);
  uint64_t size() const { return written_; }
  const std::string& temp_path() const { return temp_; }

  // Makes the new file visible at the target path.
  void commit();

 private:
  void flush();
  void write_all(const uint8_t* p, size_t n);

  std::string target_;
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
  int temp_slot_ = -1;  // where a SIGINT / SIGTERM handler finds the temporary to remove
  uint64_t written_ = 0;
  std::vector<uint8_t> buffer_;
};

// A whole small file (a report, JSON, CSV) in one atomic write.
void write_file_atomically(const std::string& path, std::string_view content, const OutputPolicy& policy = {});

}  // namespace squeeze::gguf
