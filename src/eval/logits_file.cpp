// eval/logits_file.cpp — llama-perplexity's log-probability file (layout in the header).
#include "eval/logits_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace squeeze::eval {

namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr size_t kHeaderBytes = sizeof(kMagic) + 3 * sizeof(int32_t);

int32_t read_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

int64_t logits_row_values(int32_t n_vocab) { return 2 * ((int64_t{n_vocab} + 1) / 2) + 4; }
int64_t scored_per_chunk(int64_t n_ctx) { return n_ctx - 1 - n_ctx / 2; }

void encode_log_probs(std::span<const float> logits, uint16_t* row) {
  // The arithmetic (float extremes, a double sum of float exps, float offsets) follows
  // llama-perplexity's so that a row written here decodes to the same values as theirs.
  float max_logit = logits[0], min_logit = logits[0];
  for (float v : logits) {
    max_logit = std::max(max_logit, v);
    min_logit = std::min(min_logit, v);
  }
  min_logit = std::max(min_logit, max_logit - 16);
  double sum_exp = 0;
  for (float v : logits) sum_exp += std::exp(v - max_logit);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.f;
  std::memcpy(row, &scale, sizeof scale);
  std::memcpy(row + 2, &min_log_prob, sizeof min_log_prob);
  uint16_t* q = row + 4;
  const size_t n = logits.size();
  if (scale == 0) {
    std::fill(q, q + n, uint16_t{0});
  } else {
    const float inv_scale = 1 / scale;
    for (size_t i = 0; i < n; ++i)  // lrintf: round half to even, as their nearest_int
      q[i] = logits[i] > min_logit ? static_cast<uint16_t>(std::lrintf(inv_scale * (logits[i] - min_logit))) : 0;
  }
  if (n % 2) q[n] = 0;  // the padding value
}

float LogProbRow::log_prob(int32_t token) const {
  uint16_t v;
  std::memcpy(&v, q + token, sizeof v);
  return scale * v + min_log_prob;
}

LogitsFileReader::LogitsFileReader(const std::string& path) : file_(path) {
  const auto bytes = file_.bytes();
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    fail(path, ": not a log-probability file (llama-perplexity --kl-divergence-base format: no \"_logits_\" header)");
  n_ctx_ = read_i32(bytes.data() + 8);
  n_vocab_ = read_i32(bytes.data() + 12);
  n_chunk_ = read_i32(bytes.data() + 16);
  if (n_ctx_ < 4 || n_ctx_ > (1 << 24)) fail(path, ": context ", n_ctx_, " out of range [4, 16777216]");
  if (n_vocab_ < 2 || n_vocab_ > (1 << 26)) fail(path, ": vocabulary size ", n_vocab_, " out of range");
  if (n_chunk_ < 1 || n_chunk_ > (1 << 24)) fail(path, ": chunk count ", n_chunk_, " out of range");
  const uint64_t n_tokens = uint64_t(n_ctx_) * uint64_t(n_chunk_);
  const uint64_t row_bytes = uint64_t(logits_row_values(n_vocab_)) * sizeof(uint16_t);
  const uint64_t expected = kHeaderBytes + n_tokens * sizeof(int32_t) +
                            uint64_t(n_chunk_) * uint64_t(scored_per_chunk(n_ctx_)) * row_bytes;
  if (bytes.size() != expected)
    fail(path, ": ", bytes.size(), " bytes, but n_ctx ", n_ctx_, ", n_vocab ", n_vocab_, " and ", n_chunk_,
         " chunks need ", expected, " (truncated or not this format)");
  tokens_.resize(n_tokens);
  std::memcpy(tokens_.data(), bytes.data() + kHeaderBytes, n_tokens * sizeof(int32_t));
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (tokens_[i] < 0 || tokens_[i] >= n_vocab_)
      fail(path, ": token ", i, " is ", tokens_[i], ", not an id below n_vocab ", n_vocab_);
  rows_offset_ = kHeaderBytes + n_tokens * sizeof(int32_t);
}

LogProbRow LogitsFileReader::row(int32_t chunk, int64_t i) const {
  SQZ_CHECK(chunk >= 0 && chunk < n_chunk_ && i >= 0 && i < scored_per_chunk(n_ctx_), "logits row out of range");
  const uint64_t row_bytes = uint64_t(logits_row_values(n_vocab_)) * sizeof(uint16_t);
  const uint8_t* p = file_.data() + rows_offset_ + (uint64_t(chunk) * scored_per_chunk(n_ctx_) + i) * row_bytes;
  LogProbRow r;
  std::memcpy(&r.scale, p, sizeof r.scale);
  std::memcpy(&r.min_log_prob, p + 4, sizeof r.min_log_prob);
  r.q = reinterpret_cast<const uint16_t*>(p + 8);
  return r;
}

LogitsFileWriter::LogitsFileWriter(const std::string& path, int32_t n_ctx, int32_t n_vocab, int32_t n_chunk,
                                   std::span<const int32_t> tokens)
    : out_(path) {
  SQZ_CHECK(tokens.size() == size_t(n_ctx) * size_t(n_chunk), "logits file: tokens must be n_chunk × n_ctx");
  expected_size_ = kHeaderBytes + tokens.size() * sizeof(int32_t) +
                   uint64_t(n_chunk) * uint64_t(scored_per_chunk(n_ctx)) * logits_row_values(n_vocab) * 2;
  out_.write(std::string_view(kMagic, sizeof kMagic));
  for (int32_t v : {n_ctx, n_vocab, n_chunk})
    out_.write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&v), sizeof v));
  out_.write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(tokens.data()), tokens.size_bytes()));
}

void LogitsFileWriter::write_rows(std::span<const uint16_t> rows) {
  out_.write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(rows.data()), rows.size_bytes()));
}

void LogitsFileWriter::commit() {
  SQZ_CHECK(out_.size() == expected_size_, "logits file: ", out_.size(), " bytes written, ", expected_size_, " expected");
  out_.commit();
}

}  // namespace squeeze::eval
