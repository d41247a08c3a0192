// tools/cmd_moe_train.cpp — `squeeze moe-train`: a small MoE language model (Glimmer
// attention, MoK MoE FFN layers) trained expert-parallel on a text file, on in-process
// ranks or under mpirun; the loss curve and tokens/s per rank for one layer style.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <sstream>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "gguf/atomic_file.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "model/gguf_config.h"
#include "moe_ranks.h"
#include "text/tokenizer.h"
#include "train/corpus.h"
#include "train/loss_plot.h"
#include "train/trainer.h"
#include "train/moe_lm.h"

namespace {
using namespace squeeze;

// pull-fused | pull | push (push-negotiated dispatch, push combine) | push-private |
// alltoallv (the MPI collective layer; MPI ranks only)
mok::LayerOptions layer_style(const std::string& s) {
  if (s == "pull-fused") return mok::LayerOptions::fused_pull();
  if (s == "pull") return {mok::DispatchStyle::Pull, mok::CombineStyle::Pull};
  if (s == "push") return {mok::DispatchStyle::PushNegotiated, mok::CombineStyle::Push};
  if (s == "push-private") return {mok::DispatchStyle::PushPrivate, mok::CombineStyle::Push};
  if (s == "alltoallv") return {mok::DispatchStyle::Alltoallv, mok::CombineStyle::Alltoallv};
  fail("--style: unknown layer style '", s, "' (expected pull-fused, pull, push, push-private or alltoallv)");
}

// The global batch of a step: R·B windows drawn from the step's own generator, rank r
// taking windows r·B .. r·B + B − 1, so one rank with R·B sequences sees the same data.
void batch_for(const std::vector<int32_t>& tokens, int64_t step, int rank, int64_t B, int64_t S, uint64_t seed,
               std::vector<int32_t>& in, std::vector<int32_t>& tg) {
  std::mt19937_64 rng(seed * 1000003 + uint64_t(step));
  const uint64_t span = uint64_t(tokens.size()) - uint64_t(S) - 1;
  in.resize(size_t(B * S));
  tg.resize(in.size());
  for (int64_t w = 0; w < int64_t(rank + 1) * B; ++w) {
    const uint64_t start = rng() % span;
    if (w < int64_t(rank) * B) continue;
    const int64_t b = w - int64_t(rank) * B;
    std::copy_n(tokens.data() + start, S, in.data() + b * S);
    std::copy_n(tokens.data() + start + 1, S, tg.data() + b * S);
  }
}

int run_moe_train(int argc, char** argv) {
  cli::Args a("moe-train", "moe-train --data FILE --tokenizer GGUF [options]",
              "Train a small MoE language model expert-parallel: Glimmer attention blocks (glimmer-kjv's\n"
              "shape, replicated, data-parallel) with every FFN a MoK MoE layer whose experts are sharded\n"
              "across ranks. In-process ranks (--transport inproc -r R) or one MPI rank per process\n"
              "(mpirun -np R squeeze moe-train --transport mpi-shm|mpi-rma). Prints the loss per step and\n"
              "tokens/s per rank; the same seed gives the same data and initial weights for any R.");
  a.option({"--data"}, "FILE", "training text").reads()
      .option({"--tokenizer"}, "GGUF", "take the tokenizer (and vocabulary size) from this model").reads()
      .option({"--transport"}, "NAME", "inproc | mpi-shm | mpi-rma (under mpirun)", "inproc")
      .int_option({"-r", "--ranks"}, "R", "in-process ranks", {1, 64}, "2")
      .option({"--style"}, "NAME", "MoE layer: pull-fused | pull | push | push-private | alltoallv (MPI)", "pull-fused")
      .option({"--payload"}, "DTYPE", "bf16 | f32 | mxfp8", "bf16")
      .int_option({"--layers"}, "N", "transformer layers (glimmer-kjv's pattern, [L L L G] repeated)", {1, 8}, "4")
      .int_option({"--experts"}, "E", "experts per layer (a multiple of R)", {1, 256}, "8")
      .int_option({"--topk"}, "K", "experts per token", {1, 256}, "2")
      .int_option({"--expert-ff"}, "I", "each expert's SwiGLU width", {1, 1 << 16}, "256")
      .int_option({"--batch"}, "B", "sequences per rank per step", {1, 1024}, "4")
      .int_option({"--seq-len"}, "S", "tokens per sequence (at most 256)", {2, 256}, "64")
      .int_option({"--steps"}, "N", "optimiser steps", {1, 1000000}, "100")
      .real_option({"--lr"}, "LR", "peak learning rate", {.min = 0, .max = 1, .min_open = true}, "2e-3")
      .int_option({"--warmup"}, "N", "learning-rate warm-up steps", {0, 1000000}, "10")
      .int_option({"--seed"}, "N", "weights and data", {0, 1LL << 62}, "1")
      .int_option({"--print-every"}, "N", "print the loss every N steps", {1, 1000000}, "10")
      .option({"--loss-csv"}, "FILE", "write step,loss,seconds (rank 0)").writes()
      .option({"--plot"}, "FILE", "write the loss curve as a PNG (rank 0)").writes()
      .option({"--link"}, "MODEL", "none | nvlink | ib (mok/link_model.h)", "none")
      .real_option({"--link-latency-us"}, "A", "the link model's one-way latency α (µs)", {.min = 0, .max = 1e6})
      .real_option({"--link-gbps"}, "B", "the link model's bandwidth β per peer (GB/s)",
                   {.min = 0, .max = 1e6, .min_open = true});
  if (!a.parse(argc, argv)) return 0;
  SQZ_CHECK(a.has("--data") && a.has("--tokenizer"), "moe-train needs --data FILE and --tokenizer GGUF");
  const std::string tr = a.get("--transport");
  const int R = tools::world_size(tr, a.get_int32("--ranks"));
  const int me = tools::reporting_rank(tr);

  train::MoeLmOptions opt;
  opt.layer = layer_style(a.get("--style"));
  opt.payload = mok::parse_payload(a.get("--payload"));
  opt.n_experts = a.get_int32("--experts");
  opt.top_k = a.get_int32("--topk");
  opt.expert_ff = a.get_int("--expert-ff");
  opt.batch = a.get_int("--batch");
  opt.seq_len = a.get_int("--seq-len");
  opt.seed = uint64_t(a.get_int("--seed"));
  const int64_t steps = a.get_int("--steps"), print_every = a.get_int("--print-every");
  train::ScheduleParams sched{.lr = float(a.get_double("--lr")), .min_lr = float(a.get_double("--lr")) / 10,
                              .warmup = a.get_int("--warmup"), .total = steps};

  model::ModelConfig dense = model::builtin_config("glimmer-kjv");
  dense.name = "moe-kjv";
  dense.n_layer = a.get_int("--layers");
  dense.is_local.resize(size_t(dense.n_layer));
  dense.n_ff = 1;  // unused: every FFN is the MoE layer
  const gguf::File tok_file(a.get("--tokenizer"));
  text::TokenizerData tok = model::tokenizer_data_from_gguf(tok_file.metadata());
  dense.n_vocab = int64_t(tok.tokens.size());
  const mok::MoeConfig check(mok::MoeShape{.tokens_per_rank = opt.batch * opt.seq_len, .hidden = dense.n_embd,
                                           .inter = opt.expert_ff, .n_experts = opt.n_experts, .top_k = opt.top_k,
                                           .n_ranks = R, .payload = opt.payload});
  const std::vector<int32_t> tokens =
      text::Tokenizer(tok).encode(train::read_text_file(a.get("--data")), {.add_special = false});
  SQZ_CHECK(int64_t(tokens.size()) > opt.seq_len + 1, a.get("--data"), ": ", tokens.size(),
            " tokens, fewer than one sequence");

  std::ostringstream csv;
  csv << "step,loss,seconds\n";
  double tokens_per_s = 0, seconds = 0, last_loss = 0;
  std::vector<train::StepRecord> history;
  int64_t n_params = 0;
  std::mutex m;
  tools::on_ranks(tr, R, tools::link_from(a), [&](mok::Transport& t) {
    train::MoeLm lm(dense, tok, opt, t);
    std::vector<int32_t> in, tg;
    const auto t0 = std::chrono::steady_clock::now();
    auto t_after_first = t0;
    for (int64_t s = 0; s < steps; ++s) {
      batch_for(tokens, s, t.rank(), opt.batch, opt.seq_len, opt.seed, in, tg);
      const double loss = lm.step(in, tg, train::learning_rate(sched, s));
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s == 0) t_after_first = std::chrono::steady_clock::now();
      if (t.rank() != 0) continue;
      std::lock_guard<std::mutex> lock(m);
      csv << s + 1 << ',' << loss << ',' << el << '\n';
      history.push_back({.step = s + 1, .loss = float(loss), .lr = train::learning_rate(sched, s)});
      last_loss = loss;
      if ((s + 1) % print_every == 0 || s + 1 == steps) {
        std::printf("step %lld  loss %.4f  %.1f s\n", static_cast<long long>(s + 1), loss, el);
        std::fflush(stdout);
      }
    }
    // Tokens per second per rank, after the first step (allocation, first touch).
    const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_after_first).count();
    std::lock_guard<std::mutex> lock(m);
    if (t.rank() == 0) {
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      tokens_per_s = steps > 1 ? double((steps - 1) * opt.batch * opt.seq_len) / after : 0;
      n_params = lm.n_params_total();
    }
  });
  if (me != 0) return 0;
  std::printf("moe-train: %s, %d ranks (%s), style %s, %lld parameters; %lld steps in %.1f s, %.0f tokens/s per rank, "
              "final loss %.4f\n",
              check.describe().c_str(), R, tr.c_str(), a.get("--style").c_str(), static_cast<long long>(n_params),
              static_cast<long long>(steps), seconds, tokens_per_s, last_loss);
  if (a.has("--loss-csv")) gguf::write_file_atomically(a.get("--loss-csv"), csv.str());
  if (a.has("--plot"))
    train::write_loss_plot(a.get("--plot"), history,
                           "moe-train " + a.get("--style") + ", " + std::to_string(R) + " ranks: training loss");
  return 0;
}

}  // namespace

SQZ_COMMAND("moe-train", "train a small MoE language model expert-parallel (MoK layers, in-process or MPI ranks)",
            run_moe_train);
