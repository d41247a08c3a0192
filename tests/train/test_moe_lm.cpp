// tests/train/test_moe_lm.cpp — the expert-parallel MoE language model: R ranks with B
// sequences each take the same steps as one rank with R·B sequences (losses and every
// parameter after three AdamW steps, up to float summation order), and the layer styles
// (pull-fused, pull, push) train bit-identically.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>

#include "mok/inproc_transport.h"
#include "model/config.h"
#include "text/tokenizer.h"
#include "train/corpus.h"
#include "train/moe_lm.h"

namespace squeeze::train {
namespace {

constexpr int kGlobalBatch = 4;
constexpr int64_t kSeq = 16;
constexpr int kSteps = 3;

struct Result {
  std::vector<double> losses;                  // per step (rank 0's report: the global mean)
  std::map<std::string, std::vector<float>> params;  // every rank's parameters by name
};

Result train_on(int R, mok::LayerOptions layer) {
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.n_layer = 2;
  c.is_local.resize(2);
  const std::string text = "In the beginning God created the heaven and the earth. And the earth was without form, "
                           "and void; and darkness was upon the face of the deep. ";
  const text::TokenizerData tok = train_tokenizer(text, c.n_vocab);
  MoeLmOptions opt;
  opt.n_experts = 4;
  opt.top_k = 2;
  opt.expert_ff = 24;
  opt.payload = mok::Payload::F32;
  opt.layer = layer;
  opt.batch = kGlobalBatch / R;
  opt.seq_len = kSeq;
  opt.seed = 7;
  std::string corpus;
  for (int i = 0; i < 40; ++i) corpus += text;
  const std::vector<int32_t> ids = text::Tokenizer(tok).encode(corpus, {.add_special = false});
  std::vector<int32_t> tokens;
  for (int i = 0; tokens.size() < size_t(kSteps * kGlobalBatch * (kSeq + 1)); i += 5)  // overlapping windows
    tokens.insert(tokens.end(), ids.begin() + i, ids.begin() + i + kSeq + 1);
  Result res;
  std::mutex m;
  mok::run_inproc_ranks_or_throw(R, [&](mok::Transport& t) {
    MoeLm lm(c, tok, opt, t);
    std::vector<int32_t> in, tg;
    for (int s = 0; s < kSteps; ++s) {
      in.clear();
      tg.clear();
      for (int b = t.rank() * int(opt.batch); b < (t.rank() + 1) * int(opt.batch); ++b) {
        const int32_t* seq = tokens.data() + (s * kGlobalBatch + b) * (kSeq + 1);
        in.insert(in.end(), seq, seq + kSeq);
        tg.insert(tg.end(), seq + 1, seq + kSeq + 1);
      }
      const double loss = lm.step(in, tg, 3e-3f);
      std::lock_guard<std::mutex> lock(m);
      if (t.rank() == 0) res.losses.push_back(loss);
    }
    std::lock_guard<std::mutex> lock(m);
    for (const Parameter& p : lm.params()) res.params[p.name] = p.value;
  });
  return res;
}

TEST(MoeLm, RanksTrainLikeOneRankWithTheWholeBatch) {
  const Result one = train_on(1, mok::LayerOptions::fused_pull());
  for (int R : {2, 4}) {  // 4 ranks oversubscribe the cores: a correctness check
    const Result many = train_on(R, mok::LayerOptions::fused_pull());
    ASSERT_EQ(many.losses.size(), one.losses.size());
    for (size_t s = 0; s < one.losses.size(); ++s)
      EXPECT_NEAR(many.losses[s], one.losses[s], 1e-5 * std::abs(one.losses[s])) << "R=" << R << " step " << s;
    // Every parameter, the experts of every rank included (names carry the global expert id).
    ASSERT_EQ(many.params.size(), one.params.size());
    double worst = 0;
    for (const auto& [name, v] : one.params) {
      const auto it = many.params.find(name);
      ASSERT_NE(it, many.params.end()) << name;
      ASSERT_EQ(it->second.size(), v.size()) << name;
      for (size_t i = 0; i < v.size(); ++i) worst = std::max(worst, double(std::abs(it->second[i] - v[i])));
    }
    // AdamW moves a weight by up to 3e-3 per step; a different float summation order
    // (the dense gradients summed over ranks, the experts' rows gathered from several
    // sources) moves a weight whose gradient is near zero by a little of that, as Adam
    // divides by √v. 1e-4 is 1% of three steps' movement; a wrong gradient moves it by ~1e-3.
    EXPECT_LT(worst, 1e-4) << "R=" << R;
  }
  // The loss moved: three steps trained something.
  EXPECT_LT(one.losses.back(), one.losses.front());
}

TEST(MoeLm, LayerStylesTrainBitIdentically) {
  const Result fused = train_on(2, mok::LayerOptions::fused_pull());
  const Result pull = train_on(2, {mok::DispatchStyle::Pull, mok::CombineStyle::Pull});
  const Result push = train_on(2, {mok::DispatchStyle::PushNegotiated, mok::CombineStyle::Push});
  EXPECT_EQ(fused.losses, pull.losses);
  EXPECT_EQ(fused.losses, push.losses);
  EXPECT_EQ(fused.params, push.params);
}

}  // namespace
}  // namespace squeeze::train
