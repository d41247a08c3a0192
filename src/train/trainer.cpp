// train/trainer.cpp — see trainer.h.
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/progress.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/gguf_config.h"
#include "train/ops.h"

namespace squeeze::train {

namespace {

std::span<const uint8_t> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

void read_f32_tensor(const gguf::File& f, const std::string& name, std::vector<float>& out) {
  const gguf::TensorInfo& t = f.tensor(name);
  SQZ_CHECK(t.type == gguf::GgmlType::F32 && t.data.size() == out.size() * sizeof(float), f.path(), ": tensor '", name,
            "' is not F32 of ", out.size(), " values");
  std::memcpy(out.data(), t.data.data(), t.data.size());
}

}  // namespace

uint64_t next_random(TrainState& state) {
  uint64_t z = (state.rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void TrainOptions::validate() const {
  SQZ_CHECK(steps > 0, "training: steps must be positive");
  SQZ_CHECK(batch > 0 && seq_len > 0 && accum > 0, "training: batch, seq_len and accum must be positive");
  SQZ_CHECK(std::isfinite(lr) && lr > 0 && std::isfinite(min_lr) && min_lr >= 0 && min_lr <= lr,
            "training: need 0 <= min_lr <= lr and lr > 0");
  SQZ_CHECK(warmup >= 0 && eval_every >= 0 && checkpoint_every >= 0 && eval_sequences > 0,
            "training: warmup, eval_every, checkpoint_every must not be negative");
  SQZ_CHECK(checkpoint_every == 0 || !checkpoint_path.empty(), "training: checkpoint_every needs a checkpoint path");
}

LossFn cross_entropy_loss() {
  return [](Tape<float>& t, Var logits, std::span<const int32_t>, std::span<const int32_t> targets, int64_t) {
    return cross_entropy(t, logits, targets);
  };
}

Trainer::Trainer(GlimmerModel& model, std::span<const int32_t> train_tokens, std::span<const int32_t> val_tokens,
                 TrainOptions options, LossFn loss, BatchFn batches)
    : model_(model), train_(train_tokens), val_(val_tokens), opt_(std::move(options)), loss_(std::move(loss)),
      batches_(std::move(batches)), adamw_(model, opt_.adamw) {
  opt_.validate();
  SQZ_CHECK(opt_.seq_len <= model.config().n_ctx, "training: seq_len ", opt_.seq_len, " exceeds the model's context ",
            model.config().n_ctx);
  SQZ_CHECK(static_cast<int64_t>(train_.size()) >= 2 * (opt_.seq_len + 1), "training: the training stream has ",
            train_.size(), " tokens, fewer than two sequences of ", opt_.seq_len + 1);
  for (int32_t tk : train_) SQZ_CHECK(tk >= 0 && tk < model.config().n_vocab, "training: token ", tk, " outside the vocabulary");
  for (int32_t tk : val_) SQZ_CHECK(tk >= 0 && tk < model.config().n_vocab, "validation: token ", tk, " outside the vocabulary");
  state_.rng = opt_.seed;
}

uint64_t Trainer::next_window_start() {
  const uint64_t S = static_cast<uint64_t>(opt_.seq_len), N = train_.size();
  if (opt_.order == TrainOptions::Order::sequential) {
    if (state_.data_pos + S + 1 > N)  // wrap with a fresh phase: new sequence boundaries
      state_.data_pos = next_random(state_) % S;
    const uint64_t start = state_.data_pos;
    state_.data_pos += S;
    return start;
  }
  auto windows = [&](uint64_t seed) { return (N - 1 - seed % S) / S; };  // whole windows after the phase
  if (state_.epoch == 0 || state_.data_pos >= windows(state_.epoch_seed)) {
    state_.epoch_seed = next_random(state_);
    ++state_.epoch;
    state_.data_pos = 0;
    epoch_order_.clear();
  }
  if (epoch_order_.empty()) {  // a new epoch, or the first window after a resume
    TrainState shuffle{.rng = state_.epoch_seed};
    epoch_order_.resize(windows(state_.epoch_seed));
    for (uint32_t i = 0; i < epoch_order_.size(); ++i) epoch_order_[i] = i;
    for (size_t i = epoch_order_.size(); i > 1; --i) std::swap(epoch_order_[i - 1], epoch_order_[next_random(shuffle) % i]);
  }
  return state_.epoch_seed % S + epoch_order_[state_.data_pos++] * S;
}

void Trainer::next_batch(std::vector<int32_t>& inputs, std::vector<int32_t>& targets) {
  const int64_t S = opt_.seq_len;
  inputs.resize(static_cast<size_t>(opt_.batch * S));
  targets.resize(inputs.size());
  for (int64_t b = 0; b < opt_.batch; ++b) {
    const int32_t* src = train_.data() + next_window_start();
    std::copy_n(src, S, inputs.data() + b * S);
    std::copy_n(src + 1, S, targets.data() + b * S);
  }
}

float Trainer::micro_step(const std::vector<int32_t>& inputs, const std::vector<int32_t>& targets) {
  Tape<float> t;
  const Var logits = model_.forward(t, inputs, opt_.seq_len);
  const Var loss = loss_(t, logits, inputs, targets, opt_.seq_len);
  const float value = t.value(loss)[0];
  SQZ_CHECK(std::isfinite(value), "training diverged at step ", state_.step + 1, " (loss ", value, ")");
  t.backward(loss);
  return value;
}

float Trainer::evaluate() {
  const int64_t S = opt_.seq_len, N = static_cast<int64_t>(val_.size());
  const int64_t n_seq = std::min(opt_.eval_sequences, (N - 1) / S);
  if (n_seq <= 0) return -1.0f;
  double total = 0;
  int64_t done = 0;
  std::vector<int32_t> in, tg;
  while (done < n_seq) {
    const int64_t b = std::min(opt_.batch, n_seq - done);
    in.resize(static_cast<size_t>(b * S));
    tg.resize(in.size());
    for (int64_t i = 0; i < b; ++i) {
      std::copy_n(val_.data() + (done + i) * S, S, in.data() + i * S);
      std::copy_n(val_.data() + (done + i) * S + 1, S, tg.data() + i * S);
    }
    Tape<float> t;
    total += static_cast<double>(t.value(cross_entropy(t, model_.forward(t, in, S), tg))[0]) * static_cast<double>(b);
    done += b;
  }
  return static_cast<float>(total / static_cast<double>(n_seq));
}

void Trainer::run(int64_t until) {
  if (until < 0) until = opt_.steps;
  until = std::min(until, opt_.steps);
  const ScheduleParams sched{.lr = opt_.lr, .min_lr = opt_.min_lr, .warmup = opt_.warmup, .total = opt_.steps};
  std::unique_ptr<Progress> bar;
  if (opt_.progress && until > state_.step) bar = std::make_unique<Progress>("train", until - state_.step);
  std::vector<int32_t> inputs, targets;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t tokens = 0;
  while (state_.step < until) {
    model_.zero_grad();
    double loss = 0;
    for (int64_t a = 0; a < opt_.accum; ++a) {
      if (batches_) {
        batches_(state_, inputs, targets);
        SQZ_CHECK(inputs.size() == static_cast<size_t>(opt_.batch * opt_.seq_len) && targets.size() == inputs.size(),
                  "training: the batch source returned ", inputs.size(), " inputs / ", targets.size(), " targets, not ",
                  opt_.batch * opt_.seq_len);
      } else {
        next_batch(inputs, targets);
      }
      loss += micro_step(inputs, targets);
      tokens += static_cast<int64_t>(inputs.size());
    }
    if (opt_.accum > 1) {  // the mean over micro-batches
      const float inv = 1.0f / static_cast<float>(opt_.accum);
      for (Parameter& p : model_.params())
        for (float& g : p.grad) g *= inv;
    }
    StepRecord rec{.step = state_.step + 1, .loss = static_cast<float>(loss / static_cast<double>(opt_.accum))};
    rec.grad_norm = clip_grad_norm(model_, opt_.clip);
    rec.lr = learning_rate(sched, state_.step);
    adamw_.step(model_, rec.lr);
    ++state_.step;
    const bool last = state_.step == opt_.steps;
    if ((opt_.eval_every > 0 && state_.step % opt_.eval_every == 0) || last) rec.val_loss = evaluate();
    history_.push_back(rec);
    if (opt_.checkpoint_every > 0 && (state_.step % opt_.checkpoint_every == 0 || last)) save_checkpoint(opt_.checkpoint_path);
    if (bar) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char status[160];
      std::snprintf(status, sizeof status, "loss %.4f%s lr %.2e %.0f tok/s", rec.loss,
                    rec.val_loss >= 0 ? (" val " + std::to_string(rec.val_loss).substr(0, 6)).c_str() : "", rec.lr,
                    static_cast<double>(tokens) / std::max(secs, 1e-9));
      bar->advance(1, status);
    }
  }
}

void Trainer::save_checkpoint(const std::string& path) const {
  gguf::Writer w(path, {.replaces = opt_.resume_path});
  model::write_config(w.metadata(), model_.config());
  model::write_tokenizer(w.metadata(), model_.tokenizer());
  auto& md = w.metadata();
  md.set("general.name", gguf::Value::string(model_.config().name + " (training checkpoint)"));
  md.set("train.step", gguf::Value::u64(static_cast<uint64_t>(state_.step)));
  md.set("train.data_pos", gguf::Value::u64(state_.data_pos));
  md.set("train.rng_state", gguf::Value::u64(state_.rng));
  md.set("train.epoch", gguf::Value::u64(state_.epoch));
  md.set("train.epoch_seed", gguf::Value::u64(state_.epoch_seed));
  md.set("train.order", gguf::Value::string(opt_.order == TrainOptions::Order::shuffled ? "shuffled" : "sequential"));
  md.set("train.adam_steps", gguf::Value::u64(static_cast<uint64_t>(adamw_.steps_taken())));
  md.set("train.total_steps", gguf::Value::u64(static_cast<uint64_t>(opt_.steps)));
  auto& self = const_cast<Trainer&>(*this);  // moment accessors are non-const; nothing is modified
  const auto& params = model_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    const std::vector<int64_t> dims = p.is_norm() ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
    w.add_tensor({.name = p.name, .type = gguf::GgmlType::F32, .dims = dims}, bytes_of(p.value));
    w.add_tensor({.name = "optim.m." + p.name, .type = gguf::GgmlType::F32, .dims = dims},
                 bytes_of(self.adamw_.first_moments()[i]));
    w.add_tensor({.name = "optim.v." + p.name, .type = gguf::GgmlType::F32, .dims = dims},
                 bytes_of(self.adamw_.second_moments()[i]));
  }
  w.finish();
}

void Trainer::load_checkpoint(const std::string& path) {
  const gguf::File f(path);
  const auto& md = f.metadata();
  const model::ModelConfig c = model::config_from_gguf(f);
  const model::ModelConfig& mine = model_.config();
  SQZ_CHECK(c.n_layer == mine.n_layer && c.n_embd == mine.n_embd && c.n_vocab == mine.n_vocab && c.n_ff == mine.n_ff &&
                c.n_head == mine.n_head && c.n_head_kv == mine.n_head_kv && c.head_dim == mine.head_dim &&
                c.tied_output == mine.tied_output,
            path, ": the checkpoint's model shape differs from the model being trained");
  const uint64_t total = md.get_u64("train.total_steps");
  SQZ_CHECK(total == static_cast<uint64_t>(opt_.steps), path, ": the checkpoint belongs to a run of ", total,
            " steps, this run has ", opt_.steps, " (the schedule would differ)");
  auto& params = model_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    read_f32_tensor(f, params[i].name, params[i].value);
    read_f32_tensor(f, "optim.m." + params[i].name, adamw_.first_moments()[i]);
    read_f32_tensor(f, "optim.v." + params[i].name, adamw_.second_moments()[i]);
  }
  state_.step = static_cast<int64_t>(md.get_u64("train.step"));
  state_.data_pos = md.get_u64("train.data_pos");
  state_.rng = md.get_u64("train.rng_state");
  state_.epoch = md.get_u64_opt("train.epoch").value_or(0);
  state_.epoch_seed = md.get_u64_opt("train.epoch_seed").value_or(0);
  const std::string order = md.get_string_opt("train.order").value_or("sequential");
  SQZ_CHECK(order == (opt_.order == TrainOptions::Order::shuffled ? "shuffled" : "sequential"), path,
            ": the checkpoint's data order is ", order, ", this run's differs");
  epoch_order_.clear();
  adamw_.set_steps_taken(static_cast<int64_t>(md.get_u64("train.adam_steps")));
  SQZ_CHECK(state_.step <= opt_.steps && state_.data_pos < train_.size(), path,
            ": the checkpoint's step or data position does not fit this run");
}

}  // namespace squeeze::train
