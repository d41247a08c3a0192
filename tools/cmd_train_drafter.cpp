// tools/cmd_train_drafter.cpp — `squeeze train-drafter`: a DFlash drafter for a target
// model, trained on the target's own continuations of prompts (generated once, with the
// tapped hidden states, into --data; a rerun keeps what is there), then written as a
// `dflash` GGUF that generate / chat / spec-bench take with --draft.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <optional>

#include "args.h"
#include "prompt_file.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/atomic_file.h"
#include "gguf/file_identity.h"
#include "gguf/ggml_type.h"
#include "model/draft_config.h"
#include "model/model.h"
#include "generate/chat_format.h"
#include "train/draft_data.h"
#include "train/draft_model.h"
#include "train/draft_trainer.h"
#include "train/loss_plot.h"

namespace {

using namespace squeeze;

int run_train_drafter(int argc, char** argv) {
  cli::Args args("train-drafter", "train-drafter --target T.gguf --prompts FILE --data DIR --out D.gguf [options]",
                 "Train a DFlash drafter for a target model on the target's own continuations of the prompts.\n"
                 "The last --val prompts are held out: validation loss and the acceptance estimate (mean run of\n"
                 "drafts equal to the target's tokens + 1, i.e. tau) are measured on them during training.");
  args.option({"--target"}, "FILE", "the target GGUF model").reads()
      .option({"--prompts"}, "FILE", "prompts, one per line").reads()
      .flag({"--chat"}, "wrap each prompt as a user message in the target's chat template (continuations end at end of turn)")
      .option({"--data"}, "DIR", "where the generated continuations and taps are stored (reused when present)")
      .option({"-o", "--out"}, "FILE", "the drafter GGUF to write").writes()
      .option({"--init"}, "FILE", "start from this drafter instead of random weights").reads()
      .int_option({"--init-layers"}, "FIRST",
                  "start draft layer i as a copy of the target's layer FIRST + i, fc passing the last tap (-1: random)",
                  {-1, 1 << 20}, "-1")
      .int_option({"--gen-tokens"}, "N", "continuation tokens per prompt at most", {1, 1 << 16}, "128")
      .real_option({"--gen-temp"}, "T", "temperature of the continuations (0: greedy)", {.min = 0}, "0")
      .int_option({"--val"}, "N", "prompts held out for validation", {1, 1 << 20}, "16")
      .int_option({"--layers"}, "N", "draft layers", {1, 64}, "5")
      .int_option({"--block"}, "B", "block size (anchor + drafts)", {2, 64}, "16")
      .int_option({"--window"}, "N", "sliding window of the draft layers (0: none)", {0, 1 << 20}, "0")
      .int_option({"--mask-token"}, "ID", "the mask token (-1: the vocabulary's last id)", {-1, 1 << 30}, "-1")
      .int_option({"--steps"}, "N", "optimizer steps (one sequence each)", {1, 1 << 30}, "1000")
      .int_option({"--anchors"}, "N", "blocks per sequence and step", {1, 4096}, "16")
      .real_option({"--lr"}, "X", "peak learning rate", {.min = 0, .min_open = true}, "6e-4")
      .real_option({"--gamma"}, "X", "loss weight decay over block positions, exp(-(k-1)/gamma)", {.min = 0, .min_open = true}, "7")
      .int_option({"--val-every"}, "N", "steps between validations (0: at the end)", {0, 1 << 30}, "100")
      .option({"--checkpoint"}, "FILE", "checkpoint file (written every --checkpoint-every steps and at the end)")
      .writes("--resume")
      .int_option({"--checkpoint-every"}, "N", "steps between checkpoints", {0, 1 << 30}, "200")
      .option({"--resume"}, "FILE", "resume from this checkpoint (same --steps)").reads()
      .int_option({"--stop-after"}, "N", "stop after this step (an interrupted run: checkpoint, then --resume)", {0, 1 << 30}, "0")
      .flag({"--no-progress"}, "no progress bar")
      .option({"--loss-csv"}, "FILE", "step, loss, lr, validation loss and tau, seconds").writes()
      .option({"--plot"}, "FILE", "the loss curve as a PNG").writes()
      .option({"--type"}, "TYPE", "matrix type of --out: F32, F16, BF16 or Q8_0", "F32")
      .int_option({"--seed"}, "N", "seed of the weights, anchors and sampled continuations", {0, cli::kMaxSeed}, "1")
      .threads_option();
  if (!args.parse(argc, argv)) return 0;
  for (const char* k : {"--target", "--prompts", "--data", "--out"})
    SQZ_CHECK(args.has(k), "train-drafter needs ", k);
  const gguf::DeclaredInputs inputs({args.get("--target"), args.get("--prompts")});
  set_default_thread_count(args.get_int32("--threads"));
  const auto target = model::Model::load(args.get("--target"));
  const auto type_opt = gguf::ggml_type_from_name(args.get("--type"));
  SQZ_CHECK(type_opt.has_value(), "--type: unknown type '", args.get("--type"), "'");
  const gguf::GgmlType out_type = *type_opt;
  SQZ_CHECK(out_type == gguf::GgmlType::F32 || out_type == gguf::GgmlType::F16 || out_type == gguf::GgmlType::BF16 ||
                out_type == gguf::GgmlType::Q8_0,
            "--type must be F32, F16, BF16 or Q8_0");

  // the drafter: from --init, else the reference recipe for this target
  const int64_t mask = args.get_int("--mask-token") >= 0 ? args.get_int("--mask-token") : target->config().n_vocab - 1;
  const int64_t init_layers = args.get_int("--init-layers");
  SQZ_CHECK(!(args.has("--init") && init_layers >= 0), "--init and --init-layers exclude each other");
  const auto fresh = [&] {
    const model::DraftConfig c = model::default_draft_config(target->config(), args.get_int("--layers"),
                                                             args.get_int("--block"), mask, args.get_int("--window"));
    const auto seed = static_cast<uint64_t>(args.get_int("--seed"));
    return init_layers >= 0 ? train::DraftTrainModel::init_from_target(c, *target, init_layers, seed)
                            : train::DraftTrainModel::init(c, seed);
  };
  train::DraftTrainModel drafter = args.has("--init") ? train::DraftTrainModel::load(args.get("--init")) : fresh();
  drafter.config().check_target(target->config());
  if (!args.has("--init") && init_layers < 0) {
    // the final norm feeds the target's head, as the target's own final norm does: start
    // from its scale rather than 1 (SmolLM2's is 1.8 on average)
    const auto& norm = target->weights().output_norm;
    for (auto& p : drafter.params())
      if (p.name == "output_norm.weight") p.value.assign(norm.begin(), norm.end());
  }

  const auto prompts = cli::read_prompt_file(args.get("--prompts"), *target, args.has("--chat"));
  std::optional<generate::ChatFormat> format;  // its end-of-turn tokens end the continuations
  if (args.has("--chat")) format.emplace(*target);
  const int64_t n_val = args.get_int("--val");
  SQZ_CHECK(static_cast<int64_t>(prompts.size()) > n_val, args.get("--prompts"), ": ", prompts.size(),
            " prompts, need more than the ", n_val, " held out");
  train::DraftDataParams dp{.gen_tokens = args.get_int("--gen-tokens"),
                            .temperature = static_cast<float>(args.get_double("--gen-temp")),
                            .seed = static_cast<uint64_t>(args.get_int("--seed"))};
  if (format) dp.stop_ids = format->stop_ids();
  else if (target->tokenizer().eos_id() >= 0) dp.stop_ids = {target->tokenizer().eos_id()};
  const auto files = train::generate_draft_data(*target, drafter.config().target_layers, prompts, args.get("--data"), dp);
  const std::vector<std::string> train_files(files.begin(), files.end() - n_val), val_files(files.end() - n_val, files.end());

  train::DraftTrainOptions opt{.steps = args.get_int("--steps"), .anchors = args.get_int("--anchors"),
                               .gamma = static_cast<float>(args.get_double("--gamma")),
                               .lr = static_cast<float>(args.get_double("--lr")),
                               .min_lr = static_cast<float>(args.get_double("--lr") / 10),
                               .seed = static_cast<uint64_t>(args.get_int("--seed")), .val_every = args.get_int("--val-every"),
                               .checkpoint_every = args.has("--checkpoint") ? args.get_int("--checkpoint-every") : 0,
                               .checkpoint_path = args.get("--checkpoint"), .resume_path = args.get("--resume"),
                               .stop_after = args.get_int("--stop-after"), .progress = !args.has("--no-progress")};
  train::DraftTrainer trainer(drafter, *target, train_files, val_files, opt);
  if (args.has("--resume")) trainer.load_checkpoint(args.get("--resume"));
  std::fprintf(stderr, "drafter: %lld layers, %.1fM parameters, taps %s, block %lld, window %lld, mask %lld; %zu training / %zu validation sequences\n",
               static_cast<long long>(drafter.config().n_layer), drafter.n_params() / 1e6,
               [&] { std::string s; for (int64_t l : drafter.config().target_layers) s += (s.empty() ? "" : ",") + std::to_string(l); return s; }().c_str(),
               static_cast<long long>(drafter.config().block_size), static_cast<long long>(drafter.config().sliding_window),
               static_cast<long long>(drafter.config().mask_token_id), train_files.size(), val_files.size());
  trainer.run();
  drafter.export_gguf(args.get("--out"), "dflash drafter for " + args.get("--target"), {}, out_type);

  const auto& hist = trainer.history();
  if (args.has("--loss-csv")) {
    // a resumed run appends to the file of the run it continues (old rows + new into a
    // temporary renamed over it, so an interrupted write leaves the old file whole)
    const std::string path = args.get("--loss-csv");
    std::ifstream old(path, std::ios::binary);
    std::ostringstream csv;
    if (args.has("--resume") && old.good()) csv << old.rdbuf();
    else csv << "step,loss,lr,val_loss,val_tau,seconds\n";
    for (const auto& r : hist)
      csv << r.step << ',' << r.loss << ',' << r.lr << ',' << (r.val_loss >= 0 ? std::to_string(r.val_loss) : "") << ','
          << (r.val_tau >= 0 ? std::to_string(r.val_tau) : "") << ',' << r.seconds << '\n';
    gguf::write_file_atomically(path, csv.str());
  }
  if (args.has("--plot")) {
    std::vector<train::StepRecord> recs;
    for (const auto& r : hist) recs.push_back({.step = r.step, .loss = r.loss, .lr = r.lr, .val_loss = r.val_loss});
    train::write_loss_plot(args.get("--plot"), recs, "DFlash drafter: weighted block cross-entropy");
  }
  if (!hist.empty() && hist.back().val_tau >= 0)
    std::fprintf(stderr, "done: %lld steps in %.0f s, validation loss %.3f, acceptance estimate tau %.2f at block %lld\n",
                 static_cast<long long>(hist.back().step), hist.back().seconds, hist.back().val_loss, hist.back().val_tau,
                 static_cast<long long>(drafter.config().block_size));
  return 0;
}

}  // namespace

SQZ_COMMAND("train-drafter", "train a DFlash drafter for a target model on its own continuations", run_train_drafter);
