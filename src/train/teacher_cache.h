// train/teacher_cache.h — the teacher's top-k log-probabilities stored on disk, per
// training window, so that distillation runs over the same text pay the teacher's
// forward pass once (teacher logits stored as sparse top-k).
//
// A window is found by its tokens (a hash to find it, the stored tokens compared to be
// sure), so a cache serves any run over the same text and sequence length whatever its
// order, seed, batch or student. Entries are appended as they are computed and flushed
// one by one: an interrupted run loses at most its last, partial entry, which the next
// open drops. One run at a time may hold a cache (an exclusive lock). Per position the cache keeps k (int32 id, f16 log-prob) pairs; 6·k bytes,
// 384 B at k = 64, against 2·V for a dense f16 row.
//
// File: header (magic "SQZTOPK1", vocabulary, k, sequence length, temperature, teacher
// fingerprint), then fixed-size entries: tokens int32[S], ids int32[S·k], f16[S·k].
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace squeeze::train {

class GlimmerModel;

struct TeacherCacheKey {
  int64_t vocab = 0;
  int64_t k = 0;
  int64_t seq_len = 0;
  float temperature = 1.0f;
  uint64_t teacher = 0;  // teacher_fingerprint of the model that wrote it
};

// A hash of the teacher's shape and every weight bit: a cache written by another teacher
// (or another training of the same shape) is refused.
uint64_t teacher_fingerprint(const GlimmerModel& teacher);

// Log-probabilities as the cache stores them (f16, round to nearest even). A run that
// fills the cache trains on these rounded values too, so it and a later run that reads
// them see the same numbers.
void round_like_cache(std::span<float> logprobs);

class TeacherTopKCache {
 public:
  // Opens `path`, creating it when absent. An existing file must carry `key` exactly;
  // anything else (another teacher, k, temperature, length, not a cache) is an error.
  TeacherTopKCache(const std::string& path, const TeacherCacheKey& key);
  ~TeacherTopKCache();
  TeacherTopKCache(const TeacherTopKCache&) = delete;
  TeacherTopKCache& operator=(const TeacherTopKCache&) = delete;

  const TeacherCacheKey& key() const { return key_; }
  const std::string& path() const { return path_; }
  int64_t entries() const { return n_entries_; }
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

  // window: seq_len tokens. On a hit fills ids / logprobs [seq_len · k] and returns true.
  bool lookup(std::span<const int32_t> window, std::span<int32_t> ids, std::span<float> logprobs);
  // Stores a window's top-k (logprobs already rounded by round_like_cache); a window
  // already present is not stored twice.
  void append(std::span<const int32_t> window, std::span<const int32_t> ids, std::span<const float> logprobs);

 private:
  void lock();
  int64_t entry_bytes() const;
  int64_t find(std::span<const int32_t> window);  // entry index or -1

  std::string path_;
  TeacherCacheKey key_;
  std::FILE* file_ = nullptr;
  int64_t n_entries_ = 0, hits_ = 0, misses_ = 0;
  std::unordered_multimap<uint64_t, int64_t> index_;  // hash of the tokens → entry
  std::vector<int32_t> scratch_tokens_;
  std::vector<uint16_t> scratch_half_;
};

}  // namespace squeeze::train
