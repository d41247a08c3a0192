// train/draft_trainer.cpp
#include "train/draft_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/progress.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/drafter.h"
#include "model/weights.h"
#include "train/draft_data.h"
#include "train/ops.h"
#include "train/optimizer.h"

namespace squeeze::train {

namespace {

std::span<const uint8_t> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

}  // namespace

DraftTrainer::DraftTrainer(DraftTrainModel& model, const model::Model& target, std::vector<std::string> train_files,
                           std::vector<std::string> val_files, DraftTrainOptions options)
    : model_(model),
      target_(target),
      train_files_(std::move(train_files)),
      val_files_(std::move(val_files)),
      opt_(std::move(options)),
      block_(opt_.block ? opt_.block : model.config().block_size),
      adamw_(model.params(), {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.0f}),
      rng_(opt_.seed * 0x9E3779B97F4A7C15ull + 1) {
  model.config().check_target(target.config());
  SQZ_CHECK(!train_files_.empty(), "train-drafter: no training sequences");
  SQZ_CHECK(block_ >= 2 && block_ <= model.config().block_size, "train-drafter: block ", block_, " (2..",
            model.config().block_size, ")");
  SQZ_CHECK(opt_.steps > 0 && opt_.anchors > 0, "train-drafter: steps and anchors must be positive");
  const quant::QMatrix& out = target.weights().output;
  head_.resize(static_cast<size_t>(out.rows * out.cols));
  for (int64_t r = 0; r < out.rows; ++r) model::dequantize_row(out, r, head_.data() + r * out.cols);
}

uint64_t DraftTrainer::next_random() {
  rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;  // xorshift64
  return rng_;
}

// Anchors: positions a with a and a + 1 in the continuation (the reference's loss mask),
// n of them without replacement, sorted.
std::vector<int64_t> DraftTrainer::sample_anchors(const DraftSample& s, int64_t n) {
  std::vector<int64_t> cand;
  for (int64_t a = s.n_prompt; a + 1 < static_cast<int64_t>(s.tokens.size()); ++a) cand.push_back(a);
  const int64_t k = std::min<int64_t>(n, static_cast<int64_t>(cand.size()));
  for (int64_t i = 0; i < k; ++i) std::swap(cand[static_cast<size_t>(i)], cand[static_cast<size_t>(i + static_cast<int64_t>(next_random() % (cand.size() - i)))]);
  cand.resize(static_cast<size_t>(k));
  std::sort(cand.begin(), cand.end());
  return cand;
}

DraftTrainer::Batch DraftTrainer::make_batch(const DraftSample& s, std::vector<int64_t> anchors) const {
  const model::DraftConfig& c = model_.config();
  const int64_t E = c.n_embd, B = block_, len = static_cast<int64_t>(s.tokens.size());
  Batch b;
  b.anchors = std::move(anchors);
  b.n_ctx = *std::max_element(b.anchors.begin(), b.anchors.end());
  b.taps.resize(static_cast<size_t>(b.n_ctx * s.width));
  for (size_t i = 0; i < b.taps.size(); ++i) b.taps[i] = bf16_to_f32(s.taps[i]);
  const int64_t rows = static_cast<int64_t>(b.anchors.size()) * B;
  b.embeds.resize(static_cast<size_t>(rows * E));
  b.targets.assign(static_cast<size_t>(rows), -1);
  b.weights.assign(static_cast<size_t>(rows), 0.0f);
  for (size_t n = 0; n < b.anchors.size(); ++n) {
    const int64_t a = b.anchors[n];
    for (int64_t k = 0; k < B; ++k) {
      const int64_t r = static_cast<int64_t>(n) * B + k;
      const int32_t tok = k == 0 ? s.tokens[static_cast<size_t>(a)] : static_cast<int32_t>(c.mask_token_id);
      model::embed_block_token(target_, tok, b.embeds.data() + r * E);
      if (k >= 1 && a + k < len) {
        b.targets[static_cast<size_t>(r)] = s.tokens[static_cast<size_t>(a + k)];
        b.weights[static_cast<size_t>(r)] = std::exp(-static_cast<float>(k - 1) / opt_.gamma);
      }
    }
  }
  return b;
}

void DraftTrainer::run() {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t E = model_.config().n_embd, V = target_.config().n_vocab;
  std::unique_ptr<Progress> bar;
  const int64_t end = opt_.stop_after > 0 ? std::min(opt_.stop_after, opt_.steps) : opt_.steps;
  if (opt_.progress) bar = std::make_unique<Progress>("train-drafter", std::max<int64_t>(0, end - step_));
  const ScheduleParams sched{.lr = opt_.lr, .min_lr = opt_.min_lr, .warmup = opt_.warmup, .total = opt_.steps};
  while (step_ < end) {
    const std::string& file = train_files_[static_cast<size_t>(next_random() % train_files_.size())];
    const DraftSample s = read_draft_sample(file, model_.config().n_taps() * E);
    std::vector<int64_t> anchors = sample_anchors(s, opt_.anchors);
    if (anchors.empty()) continue;
    const Batch b = make_batch(s, std::move(anchors));
    model_.zero_grad();
    Tape<float> t;
    const Var h = model_.forward(t, b.taps, b.n_ctx, b.embeds, b.anchors, block_);
    const Var head = t.leaf(head_, {}, V, E);
    const Var loss = weighted_cross_entropy(t, matmul_nt(t, h, head), b.targets, b.weights);
    t.backward(loss);
    clip_grad_norm(model_.params(), opt_.clip);
    const float lr = learning_rate(sched, step_);
    adamw_.step(model_.params(), lr);
    ++step_;
    DraftStepRecord rec{.step = step_, .loss = t.value(loss)[0], .lr = lr};
    const bool last = step_ == end;
    if (!val_files_.empty() && ((opt_.val_every > 0 && step_ % opt_.val_every == 0) || last)) {
      const auto [vl, tau] = validate();
      rec.val_loss = vl, rec.val_tau = tau;
    }
    rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    history_.push_back(rec);
    if (opt_.checkpoint_every > 0 && !opt_.checkpoint_path.empty() && (step_ % opt_.checkpoint_every == 0 || last))
      save_checkpoint(opt_.checkpoint_path);
    if (bar) {
      char status[128];
      std::snprintf(status, sizeof status, "loss %.3f%s lr %.1e", rec.loss,
                    rec.val_tau >= 0 ? (" val tau " + std::to_string(rec.val_tau).substr(0, 4)).c_str() : "", lr);
      bar->advance(1, status);
    }
  }
}

std::pair<float, float> DraftTrainer::validate() {
  const int64_t E = model_.config().n_embd, V = target_.config().n_vocab, B = block_;
  double loss_sum = 0, run_sum = 0;
  int64_t blocks = 0, files = 0;
  for (const std::string& file : val_files_) {
    const DraftSample s = read_draft_sample(file, model_.config().n_taps() * E);
    // evenly spaced anchors over the continuation (the same every time)
    std::vector<int64_t> anchors;
    const int64_t first = s.n_prompt, last = static_cast<int64_t>(s.tokens.size()) - 2;
    if (last < first) continue;
    const int64_t n = std::min<int64_t>(opt_.val_anchors, last - first + 1);
    for (int64_t i = 0; i < n; ++i) anchors.push_back(first + i * (last - first + 1) / n);
    const Batch b = make_batch(s, anchors);
    Tape<float> t;
    const Var h = model_.forward(t, b.taps, b.n_ctx, b.embeds, b.anchors, B, /*with_grad=*/false);
    const Var logits = matmul_nt(t, h, t.leaf(head_, {}, V, E));
    loss_sum += t.value(weighted_cross_entropy(t, logits, b.targets, b.weights))[0];
    ++files;
    // accepted run per block: leading positions whose argmax is the target's token
    for (size_t blk = 0; blk < b.anchors.size(); ++blk) {
      int64_t run = 0;
      for (int64_t k = 1; k < B; ++k) {
        const int64_t r = static_cast<int64_t>(blk) * B + k;
        const int32_t y = b.targets[static_cast<size_t>(r)];
        if (y < 0) break;
        const float* row = t.value(logits) + r * V;
        if (std::max_element(row, row + V) - row != y) break;
        ++run;
      }
      run_sum += static_cast<double>(run);
      ++blocks;
    }
  }
  SQZ_CHECK(files > 0 && blocks > 0, "train-drafter: no validation sequence has a continuation");
  return {static_cast<float>(loss_sum / files), static_cast<float>(1.0 + run_sum / blocks)};
}

void DraftTrainer::save_checkpoint(const std::string& path) const {
  gguf::Writer w(path, {.replaces = opt_.resume_path});
  model::write_draft_config(w.metadata(), model_.config());
  auto& md = w.metadata();
  md.set("general.name", gguf::Value::string("dflash drafter (training checkpoint)"));
  md.set("train.step", gguf::Value::u64(static_cast<uint64_t>(step_)));
  md.set("train.total_steps", gguf::Value::u64(static_cast<uint64_t>(opt_.steps)));
  md.set("train.rng_state", gguf::Value::u64(rng_));
  md.set("train.adam_steps", gguf::Value::u64(static_cast<uint64_t>(adamw_.steps_taken())));
  auto& self = const_cast<DraftTrainer&>(*this);  // moment accessors are non-const; nothing is modified
  const auto& params = model_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    const std::vector<int64_t> dims = p.is_norm() ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
    w.add_tensor({.name = p.name, .type = gguf::GgmlType::F32, .dims = dims}, bytes_of(p.value));
    w.add_tensor({.name = "optim.m." + p.name, .type = gguf::GgmlType::F32, .dims = dims}, bytes_of(self.adamw_.first_moments()[i]));
    w.add_tensor({.name = "optim.v." + p.name, .type = gguf::GgmlType::F32, .dims = dims}, bytes_of(self.adamw_.second_moments()[i]));
  }
  w.finish();
}

void DraftTrainer::load_checkpoint(const std::string& path) {
  const gguf::File f(path);
  const auto& md = f.metadata();
  const model::DraftConfig c = model::draft_config_from_gguf(f);
  const model::DraftConfig& mine = model_.config();
  SQZ_CHECK(c.n_layer == mine.n_layer && c.n_embd == mine.n_embd && c.n_ff == mine.n_ff && c.n_head == mine.n_head &&
                c.n_head_kv == mine.n_head_kv && c.head_dim == mine.head_dim && c.target_layers == mine.target_layers,
            path, ": the checkpoint's drafter differs from the one being trained");
  SQZ_CHECK(md.has("train.step") && f.find_tensor("optim.m.fc.weight") != nullptr, path, ": not a train-drafter checkpoint");
  const uint64_t total = md.get_u64("train.total_steps");
  SQZ_CHECK(total == static_cast<uint64_t>(opt_.steps), path, ": the checkpoint belongs to a run of ", total,
            " steps, this run has ", opt_.steps, " (the schedule would differ)");
  auto& params = model_.params();
  const auto read = [&](const std::string& name, std::vector<float>& out) {
    const gguf::TensorInfo& t = f.tensor(name);
    SQZ_CHECK(t.type == gguf::GgmlType::F32 && t.n_bytes == out.size() * sizeof(float), path, ": tensor '", name,
              "' does not match");
    std::memcpy(out.data(), t.data.data(), t.n_bytes);
  };
  for (size_t i = 0; i < params.size(); ++i) {
    read(params[i].name, params[i].value);
    read("optim.m." + params[i].name, adamw_.first_moments()[i]);
    read("optim.v." + params[i].name, adamw_.second_moments()[i]);
  }
  step_ = static_cast<int64_t>(md.get_u64("train.step"));
  rng_ = md.get_u64("train.rng_state");
  adamw_.set_steps_taken(static_cast<int64_t>(md.get_u64("train.adam_steps")));
}

}  // namespace squeeze::train
