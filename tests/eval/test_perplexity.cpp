// tests/eval/test_perplexity.cpp — llama-perplexity's log-probability file (rows decode
// to the exact log-softmax within the quantization step, files round-trip, malformed
// files are refused with one line), the KL statistics (zero against one's own rows,
// equal to a float64 sum otherwise) and the chunking (the scored logits are those of a
// plain forward over the chunk with BOS in front).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "common/thrown_message.h"
#include "core/error.h"
#include "eval/logits_file.h"
#include "eval/perplexity.h"
#include "model/random_model.h"
#include "model/session.h"

namespace squeeze::eval {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("squeeze_ppl_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::vector<float> random_logits(size_t n, std::mt19937& rng, float spread = 6) {
  std::normal_distribution<float> d(0, spread);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<double> log_softmax(const std::vector<float>& x) {
  double mx = -INFINITY, sum = 0;
  for (float v : x) mx = std::max(mx, double(v));
  for (float v : x) sum += std::exp(double(v) - mx);
  std::vector<double> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = double(x[i]) - mx - std::log(sum);
  return r;
}

LogProbRow row_of(const std::vector<uint16_t>& values) {
  LogProbRow r;
  std::memcpy(&r.scale, values.data(), 4);
  std::memcpy(&r.min_log_prob, values.data() + 2, 4);
  r.q = values.data() + 4;
  return r;
}

// Every token within 16 of the top decodes to its log-softmax within half a step (plus
// float rounding); lower ones read the floor.
TEST(LogitsFile, RowsDecodeToLogSoftmax) {
  std::mt19937 rng(11);
  for (size_t n : {size_t{1001}, size_t{4096}}) {
    const auto logits = random_logits(n, rng);
    std::vector<uint16_t> values(static_cast<size_t>(logits_row_values(static_cast<int32_t>(n))));
    encode_log_probs(logits, values.data());
    const LogProbRow row = row_of(values);
    const auto exact = log_softmax(logits);
    const float mx = *std::max_element(logits.begin(), logits.end());
    int64_t above = 0;
    for (size_t i = 0; i < n; ++i) {
      if (logits[i] >= mx - 16) {
        EXPECT_NEAR(row.log_prob(int32_t(i)), exact[i], row.scale * 0.5 + 1e-4) << i;
        ++above;
      } else {
        EXPECT_FLOAT_EQ(row.log_prob(int32_t(i)), row.min_log_prob);
      }
    }
    EXPECT_GT(above, int64_t(n / 4));
    EXPECT_LT(above, int64_t(n));  // the spread puts some below the floor: both branches ran
  }
}

void write_file(const std::string& path, int32_t n_ctx, int32_t n_vocab, int32_t n_chunk, std::vector<int32_t>& tokens,
                std::vector<std::vector<uint16_t>>& rows, std::mt19937& rng) {
  tokens.resize(size_t(n_ctx) * n_chunk);
  for (auto& t : tokens) t = int32_t(rng() % uint32_t(n_vocab));
  LogitsFileWriter w(path, n_ctx, n_vocab, n_chunk, tokens);
  rows.clear();
  for (int64_t r = 0; r < n_chunk * scored_per_chunk(n_ctx); ++r) {
    rows.emplace_back(size_t(logits_row_values(n_vocab)));
    encode_log_probs(random_logits(size_t(n_vocab), rng), rows.back().data());
    w.write_rows(rows.back());
  }
  w.commit();
}

TEST(LogitsFile, WrittenFileReadsBack) {
  std::mt19937 rng(3);
  const std::string path = temp_path("rt.bin");
  std::vector<int32_t> tokens;
  std::vector<std::vector<uint16_t>> rows;
  write_file(path, 10, 37, 3, tokens, rows, rng);
  EXPECT_EQ(std::filesystem::file_size(path), 20 + 30 * 4 + 3 * 4 * (38 + 4) * 2);
  LogitsFileReader f(path);
  EXPECT_EQ(f.n_ctx(), 10);
  EXPECT_EQ(f.n_vocab(), 37);
  EXPECT_EQ(f.n_chunk(), 3);
  EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), f.tokens().begin(), f.tokens().end()));
  for (int32_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < scored_per_chunk(10); ++i) {
      const LogProbRow a = f.row(c, i), b = row_of(rows[size_t(c * scored_per_chunk(10) + i)]);
      EXPECT_EQ(a.scale, b.scale);
      EXPECT_EQ(a.min_log_prob, b.min_log_prob);
      for (int32_t t = 0; t < 37; ++t) EXPECT_EQ(a.log_prob(t), b.log_prob(t));
    }
  std::remove(path.c_str());
}

TEST(LogitsFile, MalformedFilesAreRefusedWithOneLine) {
  std::mt19937 rng(4);
  const std::string path = temp_path("bad.bin");
  std::vector<int32_t> tokens;
  std::vector<std::vector<uint16_t>> rows;
  write_file(path, 8, 16, 2, tokens, rows, rng);
  std::string good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto message_for = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return thrown_message([&] { LogitsFileReader f(path); });
  };
  EXPECT_EQ(message_for(good), "(no error)");
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_NE(message_for(bad).find("no \"_logits_\" header"), std::string::npos);
  EXPECT_NE(message_for(good.substr(0, good.size() - 1)).find("truncated"), std::string::npos);
  EXPECT_NE(message_for(good + "x").find("truncated"), std::string::npos);
  EXPECT_NE(message_for(good.substr(0, 10)).find("no \"_logits_\" header"), std::string::npos);
  bad = good;
  const int32_t huge_token = 16;  // == n_vocab
  std::memcpy(bad.data() + 20 + 5 * 4, &huge_token, 4);
  EXPECT_NE(message_for(bad).find("token 5 is 16"), std::string::npos);
  bad = good;
  const int32_t negative = -3;
  std::memcpy(bad.data() + 16, &negative, 4);  // n_chunk
  EXPECT_NE(message_for(bad).find("chunk count -3"), std::string::npos);
  bad = good;
  const int32_t big_ctx = 1 << 30;
  std::memcpy(bad.data() + 8, &big_ctx, 4);
  EXPECT_NE(message_for(bad).find("context 1073741824 out of range"), std::string::npos);
  for (const auto& m : {message_for(bad), message_for(good.substr(0, 100))}) {
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find(path), std::string::npos) << m;
  }
  std::remove(path.c_str());
}

// Against its own rows the KL is the quantization's only (tiny), the top token the same;
// against other logits it equals a float64 sum over the base's resolved tokens.
TEST(KlStats, ZeroAgainstOwnRowsAndExactOtherwise) {
  std::mt19937 rng(5);
  const size_t n = 3001;
  KlStats self, other;
  for (int pos = 0; pos < 20; ++pos) {
    const auto base = random_logits(n, rng, 3);
    std::vector<uint16_t> values(static_cast<size_t>(logits_row_values(static_cast<int32_t>(n))));
    encode_log_probs(base, values.data());
    const LogProbRow row = row_of(values);
    int32_t token = int32_t(rng() % n);
    while (row.log_prob(token) <= row.min_log_prob) token = int32_t(rng() % n);  // a resolved token
    const KlPosition s = compare_to_base(base, row, token);
    // Only the quantization step and the mass below the floor (not summed) separate them.
    EXPECT_LT(std::abs(s.kld), 1e-4);
    EXPECT_TRUE(s.same_top);
    EXPECT_NEAR(s.nll, s.nll_base, row.scale);
    self.add(s);

    auto model = base;
    std::normal_distribution<float> noise(0, 0.5f);
    for (float& v : model) v += noise(rng);
    const KlPosition o = compare_to_base(model, row, token);
    const auto lp = log_softmax(model);
    double kld = 0;
    for (size_t i = 0; i < n; ++i) {
      const double lb = row.log_prob(int32_t(i));
      if (lb > -16) kld += std::exp(lb) * (lb - lp[i]);
    }
    EXPECT_NEAR(o.kld, kld, 1e-9 + 1e-9 * kld);
    EXPECT_GT(o.kld, 1e-3);
    EXPECT_NEAR(o.nll, -lp[size_t(token)], 1e-9);
    other.add(o);
  }
  EXPECT_EQ(self.count(), 20);
  EXPECT_LT(self.mean_kld().mean, 1e-4);
  EXPECT_DOUBLE_EQ(self.same_top().mean, 1.0);
  EXPECT_NEAR(self.ppl() / self.ppl_base(), 1.0, 1e-3);
  EXPECT_GT(other.mean_kld().mean, 1e-3);
  EXPECT_LE(other.kld_quantile(0.5), other.kld_quantile(0.99));
  EXPECT_LE(other.kld_quantile(0.99), other.kld_quantile(1.0));
}

TEST(NllStats, MeanErrorAndQuantiles) {
  NllStats s;
  for (double v : {1.0, 2.0, 3.0}) s.add(v);
  EXPECT_DOUBLE_EQ(s.mean_nll().mean, 2.0);
  EXPECT_NEAR(s.mean_nll().error, std::sqrt(1.0 / 3.0), 1e-12);  // population var 2/3, / (n−1)
  EXPECT_NEAR(s.ppl(), std::exp(2.0), 1e-12);
  KlStats k;
  for (double v : {0.4, 0.1, 0.3, 0.2, 0.0}) k.add({.kld = v});
  EXPECT_DOUBLE_EQ(k.kld_quantile(0.5), 0.2);
  EXPECT_NEAR(k.kld_quantile(0.9), 0.36, 1e-12);  // between 0.3 and 0.4
  EXPECT_DOUBLE_EQ(k.kld_quantile(0), 0.0);
  EXPECT_DOUBLE_EQ(k.kld_quantile(1), 0.4);
}

// run_chunks scores the second half of each chunk, BOS in front, each from an empty
// cache: the same logits as one forward over the chunk with every position's logits.
TEST(RunChunks, ScoresTheSecondHalfOfEachChunkFromAnEmptyCache) {
  const std::string path = temp_path("m.gguf");
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.n_ctx = 64;
  model::write_random_model({.config = c, .seed = 8, .path = path});
  const auto m = model::Model::load(path);
  std::remove(path.c_str());
  std::mt19937 rng(9);
  const int32_t n_ctx = 24, bos = 1;
  std::vector<int32_t> tokens(3 * n_ctx + 5);
  for (auto& t : tokens) t = int32_t(8 + rng() % 300);
  model::Session s(*m, {.n_ctx = 64, .batch = 64});
  const int64_t V = m->config().n_vocab;
  int calls = 0;
  run_chunks(s, tokens, {.n_ctx = n_ctx, .n_chunk = 3, .bos_id = bos},
             [&](int32_t chunk, std::span<const float> logits, std::span<const int32_t> targets) {
               EXPECT_EQ(chunk, calls++);
               ASSERT_EQ(int64_t(targets.size()), scored_per_chunk(n_ctx));
               ASSERT_EQ(int64_t(logits.size()), scored_per_chunk(n_ctx) * V);
               std::vector<int32_t> seq(tokens.begin() + chunk * n_ctx, tokens.begin() + (chunk + 1) * n_ctx);
               seq[0] = bos;
               model::Session fresh(*m, {.n_ctx = 64, .batch = 64});
               const auto all = fresh.forward(seq, /*all_logits=*/true);
               float worst = 0;
               for (int64_t i = 0; i < scored_per_chunk(n_ctx); ++i) {
                 EXPECT_EQ(targets[size_t(i)], seq[size_t(n_ctx / 2 + i + 1)]);
                 for (int64_t v = 0; v < V; ++v)
                   worst = std::max(worst, std::abs(logits[size_t(i * V + v)] - all[size_t((n_ctx / 2 + i) * V + v)]));
               }
               EXPECT_LT(worst, 1e-3f);  // split at n_ctx/2 vs one batch: only summation order differs
             });
  EXPECT_EQ(calls, 3);
  EXPECT_THROW(run_chunks(s, std::span<const int32_t>(tokens).first(40), {.n_ctx = n_ctx, .n_chunk = 3}, {}), Error);
  EXPECT_THROW(run_chunks(s, tokens, {.n_ctx = 80, .n_chunk = 1}, {}), Error);
}

}  // namespace
}  // namespace squeeze::eval
