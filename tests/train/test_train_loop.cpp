// tests/train/test_train_loop.cpp — optimiser, schedule, clipping, gradient accumulation,
// the loop's learning on a repetitive text, and exact resume from a checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "text/tokenizer.h"
#include "train/corpus.h"
#include "train/distill.h"
#include "train/optimizer.h"
#include "train/trainer.h"

namespace squeeze::train {
namespace {

constexpr const char* kText =
    "In the beginning the keeper lit the lamp, and the lamp shone over the sea. "
    "And the ships saw the light, and the ships came home to the harbour. ";

model::ModelConfig tiny_config() {
  model::ModelConfig c = model::builtin_config("glimmer-tiny");
  c.name = "loop-test";
  c.n_layer = 2;
  c.is_local = {true, false};
  c.n_embd = 32, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 8, c.n_ff = 48, c.n_vocab = 300;
  c.sliding_window = 4;
  return c;
}

// The same shape with every Muse Glimmer option (arch defaults: pre+post norms, QK-norm,
// attention gate, embedding norm, NoPE on the global layer 1 of [L G], untied head, logits
// × 1/sqrt(32/256) soft-capped at 20).
model::ModelConfig tiny_muse_config() {
  model::ModelConfig c = tiny_config();
  c.name = "loop-test-muse";
  model::set_arch_defaults(c, model::Arch::muse_glimmer);
  return c;
}

struct Fixture {
  model::ModelConfig config;
  text::TokenizerData tok = train_tokenizer(kText, config.n_vocab);
  std::vector<int32_t> tokens;
  explicit Fixture(model::ModelConfig c = tiny_config()) : config(std::move(c)) {
    std::string text;
    for (int i = 0; i < 12; ++i) text += kText;
    tokens = text::Tokenizer(tok).encode(text, {.add_special = false});
  }
  GlimmerModel model(uint64_t seed = 3) const { return GlimmerModel::init(config, tok, {.seed = seed}); }
};

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("squeeze_train_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(TrainSchedule, WarmupThenCosine) {
  const ScheduleParams p{.lr = 1e-3f, .min_lr = 1e-4f, .warmup = 4, .total = 20};
  EXPECT_FLOAT_EQ(learning_rate(p, 0), 2.5e-4f);
  EXPECT_FLOAT_EQ(learning_rate(p, 3), 1e-3f);
  EXPECT_FLOAT_EQ(learning_rate(p, 4), 1e-3f);          // cosine starts at the peak
  EXPECT_NEAR(learning_rate(p, 19), 1e-4f, 1e-9f);      // and ends at the floor
  EXPECT_NEAR(learning_rate(p, 4 + 15 / 2.0), 5.5e-4f, 5e-5f);
  for (int64_t s = 4; s < 19; ++s) EXPECT_GE(learning_rate(p, s), learning_rate(p, s + 1));
}

TEST(TrainOptimizer, AdamWFirstStepAndDecoupledDecay) {
  Fixture f;
  GlimmerModel m = f.model();
  Parameter& w = m.param("blk.0.attn_q.weight");
  Parameter& n = m.param("blk.0.attn_norm.weight");
  const float w0 = w.value[5], n0 = n.value[2];
  w.grad[5] = 0.5f, n.grad[2] = -2.0f;
  AdamW opt(m, {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f});
  opt.step(m, 0.01f);
  // Step 1 with bias correction: m̂ = g, v̂ = g², so the update is lr·sign(g) (+ decay).
  EXPECT_NEAR(w.value[5], w0 - 0.01f * (1.0f + 0.1f * w0), 1e-6f);
  EXPECT_NEAR(n.value[2], n0 + 0.01f, 1e-6f);           // norms: no weight decay
  // A parameter with zero gradient only decays.
  Parameter& o = m.param("blk.0.attn_output.weight");
  const float o0 = o.value[0];
  opt.step(m, 0.01f);
  EXPECT_LT(std::abs(o.value[0]), std::abs(o0));
}

TEST(TrainOptimizer, ClipScalesToTheNorm) {
  Fixture f;
  GlimmerModel m = f.model();
  m.param("token_embd.weight").grad[0] = 3.0f;
  m.param("output_norm.weight").grad[1] = 4.0f;
  EXPECT_NEAR(clip_grad_norm(m, 10.0), 5.0, 1e-9);       // under the limit: untouched
  EXPECT_EQ(m.param("token_embd.weight").grad[0], 3.0f);
  EXPECT_NEAR(clip_grad_norm(m, 1.0), 5.0, 1e-9);
  EXPECT_NEAR(m.param("token_embd.weight").grad[0], 0.6f, 1e-6f);
  EXPECT_NEAR(m.param("output_norm.weight").grad[1], 0.8f, 1e-6f);
}

TEST(TrainLoop, GradientAccumulationEqualsTheLargerBatch) {
  Fixture f;
  GlimmerModel a = f.model(), b = f.model();
  const TrainOptions base{.steps = 1, .batch = 2, .seq_len = 16, .accum = 1, .lr = 1e-3f, .min_lr = 1e-3f,
                          .clip = 0, .progress = false};
  TrainOptions acc = base;
  acc.batch = 1, acc.accum = 2;  // the same two sequences, one per micro-batch
  Trainer(a, f.tokens, f.tokens, base).run();
  Trainer(b, f.tokens, f.tokens, acc).run();
  // Same sequences, same mean: the step's gradients (left in .grad after the run) differ
  // only by float summation order — within 1e-4 of each tensor's largest gradient. (Not
  // the weights: Adam's first step is lr·g/(|g|+eps), ill-conditioned where g ≈ 0.)
  for (size_t i = 0; i < a.params().size(); ++i) {
    const auto& ga = a.params()[i].grad;
    const auto& gb = b.params()[i].grad;
    float scale = 0;
    for (float g : ga) scale = std::max(scale, std::fabs(g));
    ASSERT_GT(scale, 0.0f) << a.params()[i].name;
    for (size_t j = 0; j < ga.size(); ++j) ASSERT_NEAR(ga[j], gb[j], 1e-4f * scale) << a.params()[i].name << " " << j;
  }
}

TEST(TrainLoop, LearnsARepetitiveText) {
  Fixture f;
  GlimmerModel m = f.model();
  Trainer tr(m, f.tokens, f.tokens,
             {.steps = 40, .batch = 4, .seq_len = 24, .lr = 3e-3f, .min_lr = 3e-4f, .warmup = 4, .eval_every = 20,
              .eval_sequences = 4, .progress = false});
  const float before = tr.evaluate();
  tr.run();
  const float after = tr.history().back().val_loss;
  // The text repeats every ~40 tokens: a 2-layer model memorises it quickly. From ≈ log 300
  // = 5.7 the validation loss must at least halve within 40 steps.
  EXPECT_GT(before, 4.5f);
  EXPECT_LT(after, before / 2) << "before " << before << " after " << after;
  EXPECT_EQ(tr.history().size(), 40u);
}

TEST(TrainLoop, MuseGlimmerLearnsARepetitiveText) {
  // The smoke test of training the muse-glimmer options: 20 steps of the run above.
  Fixture f(tiny_muse_config());
  ASSERT_EQ(f.config.is_local, (std::vector<bool>{true, false}));
  GlimmerModel m = f.model();
  Trainer tr(m, f.tokens, f.tokens,
             {.steps = 20, .batch = 4, .seq_len = 24, .lr = 3e-3f, .min_lr = 3e-4f, .warmup = 4, .eval_every = 20,
              .eval_sequences = 4, .progress = false});
  const float before = tr.evaluate();
  tr.run();
  const float after = tr.history().back().val_loss;
  std::printf("muse-glimmer loop: validation loss %.3f -> %.3f in 20 steps\n", before, after);
  EXPECT_GT(before, 4.5f);
  EXPECT_LT(after, before / 2) << "before " << before << " after " << after;
}

TEST(TrainLoop, ResumeIsBitIdentical) {
  Fixture f;
  const TrainOptions opt{.steps = 6, .batch = 2, .seq_len = 32, .accum = 2, .lr = 2e-3f, .warmup = 2,
                         .seed = 77, .progress = false};
  GlimmerModel straight = f.model();
  Trainer(straight, f.tokens, f.tokens, opt).run();

  const std::string ckpt = temp_path("resume.gguf");
  {
    GlimmerModel first = f.model();
    Trainer tr(first, f.tokens, f.tokens, opt);
    tr.run(3);
    tr.save_checkpoint(ckpt);
  }
  GlimmerModel resumed = f.model(999);  // different initial weights: all must come from the checkpoint
  Trainer tr(resumed, f.tokens, f.tokens, opt);
  tr.load_checkpoint(ckpt);
  EXPECT_EQ(tr.state().step, 3);
  tr.run();
  for (size_t i = 0; i < straight.params().size(); ++i) {
    const auto& x = straight.params()[i].value;
    const auto& y = resumed.params()[i].value;
    ASSERT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(float))) << straight.params()[i].name;
  }
  // The checkpoint is also a model the runtime can load.
  EXPECT_NO_THROW(GlimmerModel::load(ckpt));
  std::filesystem::remove(ckpt);
}

// The windows (first input token of each sequence) a run of `steps` feeds the loss.
std::vector<int32_t> window_starts(GlimmerModel& m, std::span<const int32_t> stream, TrainOptions o, int64_t steps,
                                   const std::string& resume_from = "", const std::string& save_to = "") {
  std::vector<int32_t> starts;
  LossFn record = [&starts, S = o.seq_len](Tape<float>& t, Var logits, std::span<const int32_t> in,
                                           std::span<const int32_t> tg, int64_t) {
    for (size_t i = 0; i < in.size(); i += static_cast<size_t>(S)) starts.push_back(in[i]);
    return cross_entropy(t, logits, tg);
  };
  Trainer tr(m, stream, stream, o, record);
  if (!resume_from.empty()) tr.load_checkpoint(resume_from);
  tr.run(steps);
  if (!save_to.empty()) tr.save_checkpoint(save_to);
  return starts;
}

TEST(TrainLoop, ShuffledOrderVisitsEveryWindowOncePerEpoch) {
  Fixture f;
  // A stream of distinct ids, so a window is known by its first token.
  std::vector<int32_t> stream(241);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<int32_t>(i + 8);
  const TrainOptions o{.steps = 20, .batch = 3, .seq_len = 8, .lr = 1e-4f, .min_lr = 1e-5f, .eval_sequences = 1,
                       .seed = 5, .progress = false};
  GlimmerModel m = f.model();
  const auto starts = window_starts(m, stream, o, 20);  // 60 windows: two epochs of 29 or 30
  const int32_t phase = (starts[0] - 8) % 8;
  const int64_t windows = (240 - phase) / 8;
  std::vector<int32_t> epoch1(starts.begin(), starts.begin() + windows);
  std::sort(epoch1.begin(), epoch1.end());
  for (size_t k = 0; k < epoch1.size(); ++k) EXPECT_EQ(epoch1[k], 8 + phase + 8 * static_cast<int32_t>(k)) << k;
  EXPECT_FALSE(std::is_sorted(starts.begin(), starts.begin() + windows)) << "not shuffled";
  // Resuming mid-epoch continues the same order.
  GlimmerModel a = f.model(), b = f.model();
  const std::string ckpt = temp_path("order.gguf");
  TrainOptions oc = o;
  const auto first = window_starts(a, stream, oc, 7, "", ckpt);
  const auto rest = window_starts(b, stream, oc, 20, ckpt);
  std::remove(ckpt.c_str());
  std::vector<int32_t> joined = first;
  joined.insert(joined.end(), rest.begin(), rest.end());
  EXPECT_EQ(joined, starts);
  // Sequential: stream order.
  TrainOptions os = o;
  os.order = TrainOptions::Order::sequential;
  GlimmerModel c = f.model();
  const auto seq = window_starts(c, stream, os, 3);
  for (size_t k = 0; k < seq.size(); ++k) EXPECT_EQ(seq[k], 8 + 8 * static_cast<int32_t>(k));
}

TEST(TrainLoop, BadOptionsAndDataAreErrors) {
  Fixture f;
  GlimmerModel m = f.model();
  EXPECT_THROW(Trainer(m, f.tokens, f.tokens, {.steps = 0}), Error);
  EXPECT_THROW(Trainer(m, f.tokens, f.tokens, {.seq_len = 100000}), Error);
  const std::vector<int32_t> few = {1, 2, 3};
  EXPECT_THROW(Trainer(m, few, few, {.seq_len = 8}), Error);
  const std::vector<int32_t> bad(100, 5000);
  EXPECT_THROW(Trainer(m, bad, bad, {.seq_len = 8}), Error);
  Trainer tr(m, f.tokens, f.tokens, {.steps = 5, .progress = false});
  EXPECT_THROW(tr.load_checkpoint("/nonexistent/ckpt.gguf"), Error);
}

}  // namespace
}  // namespace squeeze::train

namespace squeeze::train {
namespace {

// Mean forward KL(teacher ‖ student) at τ = 1 on the first sequences of `tokens`.
float mean_kl(GlimmerModel& teacher, GlimmerModel& student, std::span<const int32_t> tokens, int64_t S) {
  const auto in = tokens.first(static_cast<size_t>(4 * S));
  Tape<float> tt, ts;
  const Var tl = teacher.forward(tt, in, S, false);
  const Var sl = student.forward(ts, in, S, false);
  const std::span<const float> t_logits(tt.value(tl), static_cast<size_t>(tt.size(tl)));
  return ts.value(kl_divergence(ts, sl, t_logits, {}))[0];
}

TEST(TrainDistill, StudentApproachesTheTeacher) {
  Fixture f;
  GlimmerModel teacher = f.model(41);
  // A sharper teacher (so there is a distribution worth learning): scale its output head.
  for (float& v : teacher.param("token_embd.weight").value) v *= 3.0f;
  for (int64_t topk : {0, 16}) {
    GlimmerModel student = f.model(7);
    const float before = mean_kl(teacher, student, f.tokens, 16);
    Trainer tr(student, f.tokens, f.tokens,
               {.steps = 25, .batch = 4, .seq_len = 16, .lr = 3e-3f, .min_lr = 3e-4f, .warmup = 3,
                .eval_sequences = 2, .progress = false},
               distillation_loss(teacher, {.kl = {.direction = KlDirection::forward, .temperature = 2.0f}, .topk = topk}));
    tr.run();
    const float after = mean_kl(teacher, student, f.tokens, 16);
    // 25 steps of KL training on the very inputs it is measured on: the KL must drop by
    // well over a third (it does by more; a broken gradient leaves it flat or rising).
    std::printf("top-k %lld: KL %.4f -> %.4f\n", static_cast<long long>(topk), before, after);
    EXPECT_LT(after, 0.65f * before) << "top-k " << topk << ": " << before << " -> " << after;
  }
}

}  // namespace
}  // namespace squeeze::train
