// tests/model/test_speculative.cpp — what speculative decoding needs from the target: the
// tapped hidden states are the layers' outputs, verified rows are bit for bit the logits a
// one-token decode step gives at the same position (so keeping or rejecting drafts cannot
// change the output), and rolling the KV cache back — across local rings that wrapped
// during the verification — leaves the sequence exactly as if the rejected rows had never
// run. Also the prompt-lookup source.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/session.h"
#include "model/speculative.h"

using namespace squeeze;
using namespace squeeze::model;

namespace {

struct TempModel {
  std::string path;
  TempModel(const std::string& config, gguf::GgmlType type) {
    path = (std::filesystem::temp_directory_path() /
            ("squeeze_spec_" + std::to_string(::getpid()) + "_" + config + "_" + std::to_string(static_cast<int>(type)) + ".gguf"))
               .string();
    write_random_model({.config = builtin_config(config), .type = type, .seed = 9, .path = path});
  }
  ~TempModel() { std::filesystem::remove(path); }
};

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

TEST(Speculative, TapsAreTheLayersOutputs) {
  TempModel tm("muse-glimmer-tiny", gguf::GgmlType::Q8_0);
  const auto m = Model::load(tm.path);
  const int64_t E = m->config().n_embd;
  Session s(*m, {.n_ctx = 64, .batch = 8});
  std::map<std::string, std::vector<float>> dumped;
  s.set_dump([&](const std::string& name, const float* d, int64_t rows, int64_t cols) {
    auto& v = dumped[name];
    v.insert(v.end(), d, d + rows * cols);
  });
  s.set_taps({4, 1});
  const auto prompt = random_tokens(21, m->config().n_vocab, 1);  // three chunks of ≤ 8
  s.forward(prompt);
  const auto taps = s.taps();
  ASSERT_EQ(taps.size(), prompt.size() * 2 * E);
  for (size_t r = 0; r < prompt.size(); ++r)
    for (int t = 0; t < 2; ++t) {
      const auto& layer = dumped[t == 0 ? "blk.4.ffn_residual" : "blk.1.ffn_residual"];
      EXPECT_TRUE(std::equal(taps.begin() + (r * 2 + t) * E, taps.begin() + (r * 2 + t + 1) * E, layer.begin() + r * E))
          << "row " << r << " tap " << t;
    }
  EXPECT_THROW(s.set_taps({6}), Error);
}

// A plain decode of `plain` tokens after the prompt, row by row, against verifications of
// random chunks with random rollbacks: every verified row must equal the plain row of its
// position bit for bit. The cache's batch (16) makes local rings of window + 15 slots, so
// the 40-token prompt and 70 more wrap them several times, inside chunks and rollbacks.
void check_verify_rows(const std::string& config, gguf::GgmlType type, bool plain_invariant) {
  SCOPED_TRACE(config + " type " + std::to_string(static_cast<int>(type)));
  TempModel tm(config, type);
  const auto m = Model::load(tm.path);
  const int64_t V = m->config().n_vocab, n_prompt = 40, n_gen = 70;
  const auto prompt = random_tokens(n_prompt, V, 2), tokens = random_tokens(n_gen, V, 3);
  Session plain(*m, {.n_ctx = 160, .batch = 16, .batch_invariant = plain_invariant});
  plain.forward(prompt);
  std::vector<std::vector<float>> rows;  // rows[i]: logits after tokens[0..i]
  for (int32_t t : tokens) {
    const auto l = plain.forward(std::span<const int32_t>(&t, 1));
    rows.emplace_back(l.begin(), l.end());
  }
  Session spec(*m, {.n_ctx = 160, .batch = 16, .batch_invariant = plain_invariant});
  spec.forward(prompt);
  std::mt19937 rng(4);
  int64_t done = 0, rollbacks_across_wrap = 0;
  const int64_t ring = m->config().sliding_window + 15;
  while (done < n_gen) {
    const int64_t k = std::min<int64_t>(1 + static_cast<int64_t>(rng() % 16), n_gen - done);
    spec.set_batch_invariant(true);
    const auto l = spec.forward(std::span<const int32_t>(tokens.data() + done, static_cast<size_t>(k)), true);
    spec.set_batch_invariant(plain_invariant);
    for (int64_t i = 0; i < k; ++i)
      ASSERT_TRUE(std::equal(l.begin() + i * V, l.begin() + (i + 1) * V, rows[static_cast<size_t>(done + i)].begin()))
          << "row " << i << " of a verify of " << k << " at token " << done;
    const int64_t kept = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(k));  // the rest is rejected
    const int64_t end = n_prompt + done + k, keep_to = n_prompt + done + kept;
    if ((end - 1) / ring != (keep_to - 1) / ring) ++rollbacks_across_wrap;
    spec.truncate(keep_to);
    done += kept;
  }
  EXPECT_GT(rollbacks_across_wrap, 0);
}

TEST(Speculative, VerifiedRowsAreDecodeStepsBitForBit) {
  check_verify_rows("glimmer-tiny", gguf::GgmlType::Q4_0, false);
  check_verify_rows("gemma3-tiny", gguf::GgmlType::F16, false);
  check_verify_rows("muse-glimmer-tiny", gguf::GgmlType::Q8_0, false);
  // F32 matrices have faster one-token and prompt paths than their dot kernels: plain
  // decoding (prompt included) is then bit-identical only when it too runs batch-invariant
  check_verify_rows("glimmer-tiny", gguf::GgmlType::F32, true);
}

TEST(Speculative, PromptLookupProposesWhatFollowedTheLatestMatch) {
  PromptLookupSource s(4, 1, 3);
  const std::vector<int32_t> h = {1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 5};
  s.commit(h, nullptr);
  EXPECT_EQ(s.propose(2, 4), (std::vector<int32_t>{3, 7, 8, 5}));  // "5 2" never occurred; "2" did, last at 5
  EXPECT_EQ(s.propose(2, 2), (std::vector<int32_t>{3, 7}));
  EXPECT_EQ(s.propose(42, 4), (std::vector<int32_t>{}));           // never seen
  s.truncate(7);                                                     // 1 2 3 9 1 2 3
  EXPECT_EQ(s.propose(9, 4), (std::vector<int32_t>{1, 2, 3, 9}));   // "2 3 9" seen at 1..3; what followed, the anchor too
  EXPECT_THROW(s.truncate(8), Error);
}

}  // namespace
