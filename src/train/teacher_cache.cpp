// train/teacher_cache.cpp — see teacher_cache.h.
#include "train/teacher_cache.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "gguf/file_identity.h"
#include "train/glimmer_model.h"

namespace squeeze::train {
namespace {

constexpr char kMagic[8] = {'S', 'Q', 'Z', 'T', 'O', 'P', 'K', '1'};
constexpr uint32_t kVersion = 1;

#pragma pack(push, 1)
struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  int64_t vocab, k, seq_len;
  float temperature;
  uint32_t pad;
  uint64_t teacher;
};
#pragma pack(pop)
static_assert(sizeof(FileHeader) == 56);

uint64_t mix(uint64_t h, uint64_t v) {  // splitmix64 finaliser over a running value
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 30, h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27, h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

uint64_t hash_tokens(std::span<const int32_t> w) {
  uint64_t h = 0x5eed;
  for (int32_t t : w) h = mix(h, static_cast<uint32_t>(t));
  return h;
}

}  // namespace

uint64_t teacher_fingerprint(const GlimmerModel& teacher) {
  uint64_t h = mix(0x7eac4e5, static_cast<uint64_t>(teacher.config().n_vocab));
  for (const Parameter& p : teacher.params()) {
    h = mix(h, static_cast<uint64_t>(p.rows) << 32 | static_cast<uint64_t>(p.cols));
    for (float v : p.value) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      h = mix(h, bits);
    }
  }
  return h;
}

void round_like_cache(std::span<float> logprobs) {
  for (float& v : logprobs) v = f16_to_f32(f32_to_f16(v));
}

TeacherTopKCache::TeacherTopKCache(const std::string& path, const TeacherCacheKey& key) : path_(path), key_(key) {
  SQZ_CHECK(key.vocab > 0 && key.k > 0 && key.k <= key.vocab && key.seq_len > 0 && key.temperature > 0,
            path, ": bad teacher-cache shape (vocabulary ", key.vocab, ", k ", key.k, ", length ", key.seq_len, ")");
  // Appended in place (under a lock), not atomically: so at least never one of the
  // command's inputs (a --data text or the teacher given as the cache by mistake).
  gguf::check_output_path(path);
  file_ = std::fopen(path.c_str(), "r+b");
  if (!file_ && errno == ENOENT) {
    file_ = std::fopen(path.c_str(), "w+b");
    SQZ_CHECK(file_, path, ": cannot create the teacher cache (", std::strerror(errno), ")");
    lock();
    FileHeader h{};
    std::memcpy(h.magic, kMagic, 8);
    h.version = kVersion;
    h.vocab = key.vocab, h.k = key.k, h.seq_len = key.seq_len, h.temperature = key.temperature, h.teacher = key.teacher;
    if (std::fwrite(&h, sizeof h, 1, file_) != 1 || std::fflush(file_) != 0) {
      const int err = errno;
      std::fclose(file_);
      file_ = nullptr;
      std::remove(path.c_str());  // ours, just created: leave no headerless file behind
      fail(path, ": cannot write the teacher cache's header (", std::strerror(err), ")");
    }
    return;
  }
  SQZ_CHECK(file_, path, ": cannot open the teacher cache (", std::strerror(errno), ")");
  try {
    lock();
    FileHeader h{};
    SQZ_CHECK(std::fread(&h, sizeof h, 1, file_) == 1 && std::memcmp(h.magic, kMagic, 8) == 0,
              path, ": not a squeeze teacher top-k cache");
    SQZ_CHECK(h.version == kVersion, path, ": teacher-cache version ", h.version, ", this build reads ", kVersion);
    SQZ_CHECK(h.vocab == key.vocab, path, ": written for a vocabulary of ", h.vocab, ", the teacher has ", key.vocab);
    SQZ_CHECK(h.k == key.k, path, ": holds the top-", h.k, ", the run asks for --topk ", key.k);
    SQZ_CHECK(h.seq_len == key.seq_len, path, ": holds windows of ", h.seq_len, " tokens, the run uses --seq-len ",
              key.seq_len);
    SQZ_CHECK(h.temperature == key.temperature, path, ": log-probs at temperature ", h.temperature,
              ", the run uses ", key.temperature);
    SQZ_CHECK(h.teacher == key.teacher, path, ": written by another teacher (fingerprint ", h.teacher, ", this one ",
              key.teacher, ")");
    SQZ_CHECK(std::fseek(file_, 0, SEEK_END) == 0, path, ": cannot seek");
    const int64_t size = ftello(file_);
    const int64_t body = size - static_cast<int64_t>(sizeof(FileHeader));
    n_entries_ = body / entry_bytes();
    if (const int64_t partial = body % entry_bytes(); partial != 0) {
      // An interrupted append: its bytes are useless, and appending after them would
      // misalign every later entry.
      std::fprintf(stderr, "%s: dropping a partial last entry (%lld bytes, an interrupted write)\n", path.c_str(),
                   static_cast<long long>(partial));
      SQZ_CHECK(ftruncate(fileno(file_), size - partial) == 0, path, ": cannot drop the partial entry (",
                std::strerror(errno), ")");
    }
    scratch_tokens_.resize(static_cast<size_t>(key.seq_len));
    for (int64_t e = 0; e < n_entries_; ++e) {
      SQZ_CHECK(fseeko(file_, static_cast<off_t>(sizeof(FileHeader)) + e * entry_bytes(), SEEK_SET) == 0 &&
                    std::fread(scratch_tokens_.data(), 4, scratch_tokens_.size(), file_) == scratch_tokens_.size(),
                path, ": cannot read entry ", e);
      index_.emplace(hash_tokens(scratch_tokens_), e);
    }
  } catch (...) {
    if (file_) std::fclose(file_);
    file_ = nullptr;
    throw;
  }
}

// Two runs appending to one cache would interleave their entries: one writer at a time.
void TeacherTopKCache::lock() {
  if (flock(fileno(file_), LOCK_EX | LOCK_NB) == 0) return;
  std::fclose(file_);
  file_ = nullptr;
  fail(path_, ": the teacher cache is in use by another run");
}

TeacherTopKCache::~TeacherTopKCache() {
  if (file_) std::fclose(file_);
}

int64_t TeacherTopKCache::entry_bytes() const {
  return key_.seq_len * 4 + key_.seq_len * key_.k * (4 + 2);
}

int64_t TeacherTopKCache::find(std::span<const int32_t> window) {
  const auto [lo, hi] = index_.equal_range(hash_tokens(window));
  scratch_tokens_.resize(static_cast<size_t>(key_.seq_len));
  for (auto it = lo; it != hi; ++it) {
    SQZ_CHECK(fseeko(file_, static_cast<off_t>(sizeof(FileHeader)) + it->second * entry_bytes(), SEEK_SET) == 0 &&
                  std::fread(scratch_tokens_.data(), 4, scratch_tokens_.size(), file_) == scratch_tokens_.size(),
              path_, ": cannot read entry ", it->second);
    if (std::equal(window.begin(), window.end(), scratch_tokens_.begin())) return it->second;
  }
  return -1;
}

bool TeacherTopKCache::lookup(std::span<const int32_t> window, std::span<int32_t> ids, std::span<float> logprobs) {
  const auto n = static_cast<size_t>(key_.seq_len * key_.k);
  SQZ_CHECK(static_cast<int64_t>(window.size()) == key_.seq_len && ids.size() == n && logprobs.size() == n,
            path_, ": lookup of a window of ", window.size(), " tokens");
  const int64_t e = find(window);  // leaves the file positioned after the entry's tokens
  if (e < 0) {
    ++misses_;
    return false;
  }
  scratch_half_.resize(n);
  SQZ_CHECK(std::fread(ids.data(), 4, n, file_) == n && std::fread(scratch_half_.data(), 2, n, file_) == n, path_,
            ": cannot read entry ", e);
  for (size_t i = 0; i < n; ++i) logprobs[i] = f16_to_f32(scratch_half_[i]);
  ++hits_;
  return true;
}

void TeacherTopKCache::append(std::span<const int32_t> window, std::span<const int32_t> ids,
                              std::span<const float> logprobs) {
  const auto n = static_cast<size_t>(key_.seq_len * key_.k);
  SQZ_CHECK(static_cast<int64_t>(window.size()) == key_.seq_len && ids.size() == n && logprobs.size() == n,
            path_, ": append of a window of ", window.size(), " tokens");
  if (find(window) >= 0) return;
  scratch_half_.resize(n);
  for (size_t i = 0; i < n; ++i) scratch_half_[i] = f32_to_f16(logprobs[i]);
  const off_t at = static_cast<off_t>(sizeof(FileHeader)) + n_entries_ * entry_bytes();
  SQZ_CHECK(fseeko(file_, at, SEEK_SET) == 0 && std::fwrite(window.data(), 4, window.size(), file_) == window.size() &&
                std::fwrite(ids.data(), 4, n, file_) == n && std::fwrite(scratch_half_.data(), 2, n, file_) == n &&
                std::fflush(file_) == 0,
            path_, ": cannot append to the teacher cache (", std::strerror(errno), ")");
  index_.emplace(hash_tokens(window), n_entries_++);
}

}  // namespace squeeze::train
