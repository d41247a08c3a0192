// eval/logits_file.h — the log-probability file of llama-perplexity
// (`--kl-divergence-base`), read and written byte-compatibly, so that squeeze and
// llama.cpp (or two quantizations of one model, in either engine) can be compared
// position by position on the same tokens.
//
// Layout (little-endian):
//   "_logits_"                          8 bytes
//   n_ctx, n_vocab, n_chunk             int32 each
//   tokens                              int32 × n_chunk·n_ctx (as tokenized, before the
//                                       first token of each chunk is replaced by BOS)
//   rows                                n_chunk × (n_ctx − 1 − n_ctx/2) rows, one per
//                                       scored position, each row_values(n_vocab) uint16:
//                                       float scale, float min_log_prob (4 uint16), then one
//                                       uint16 q per token: log p = scale·q + min_log_prob
//                                       (padded to an even count).
// The quantization spans [max − 16, max] of the logits in 65535 steps; lower log-probs
// read back as the floor min_log_prob.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "gguf/atomic_file.h"

namespace squeeze::eval {

// uint16 values per scored position.
int64_t logits_row_values(int32_t n_vocab);
// Scored positions per chunk of n_ctx tokens (the second half, minus the last token).
int64_t scored_per_chunk(int64_t n_ctx);

// Encodes one row of logits as llama-perplexity does; `row` has logits_row_values(n) values.
void encode_log_probs(std::span<const float> logits, uint16_t* row);

// A row decoded: log p(token) = scale·q[token] + min_log_prob.
struct LogProbRow {
  float scale = 0;
  float min_log_prob = 0;
  const uint16_t* q = nullptr;  // n_vocab values (may be unaligned in the mapping: read with load_q)
  float log_prob(int32_t token) const;
};

class LogitsFileReader {
 public:
  // Maps and validates the whole file: magic, positive sizes, exact length, token ids
  // below n_vocab. Errors are one line naming the file.
  explicit LogitsFileReader(const std::string& path);

  int32_t n_ctx() const { return n_ctx_; }
  int32_t n_vocab() const { return n_vocab_; }
  int32_t n_chunk() const { return n_chunk_; }
  std::span<const int32_t> tokens() const { return tokens_; }
  // Row of scored position `i` (0 ≤ i < scored_per_chunk) of chunk `chunk`.
  LogProbRow row(int32_t chunk, int64_t i) const;
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  int32_t n_ctx_ = 0, n_vocab_ = 0, n_chunk_ = 0;
  std::vector<int32_t> tokens_;
  size_t rows_offset_ = 0;
};

class LogitsFileWriter {
 public:
  // Writes the header and tokens (n_chunk·n_ctx of them) at once; rows follow with
  // write_rows(), and commit() makes the file visible (atomic: never half a file).
  LogitsFileWriter(const std::string& path, int32_t n_ctx, int32_t n_vocab, int32_t n_chunk,
                   std::span<const int32_t> tokens);
  void write_rows(std::span<const uint16_t> rows);
  void commit();

 private:
  gguf::AtomicFile out_;
  uint64_t expected_size_;
};

}  // namespace squeeze::eval
