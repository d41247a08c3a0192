// tools/cmd_train.cpp — `squeeze train` (a built-in config from scratch on a text file,
// next-token cross-entropy) and `squeeze distill` (logit distillation from a teacher
// GGUF): one loop, checkpoints and exact resume; the result is a GGUF that
// `squeeze generate` loads.
#include <malloc.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "args.h"
#include "chat/template.h"
#include "command.h"
#include "config_options.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "gguf/atomic_file.h"
#include "model/gguf_config.h"
#include "model/model.h"
#include "train/corpus.h"
#include "train/distill.h"
#include "train/loss_plot.h"
#include "train/muse_specials.h"
#include "train/on_policy.h"
#include "train/teacher_cache.h"
#include "train/trainer.h"
#include "model/tensor_table.h"

namespace {

using namespace squeeze;

std::string loss_kind(const cli::Args& args) {
  return args.has("--loss") ? args.get("--loss") : args.has("--on-policy") ? "reverse-kl" : "kl";
}

// The steps of this invocation; a resumed run appends to the file of the run it continues.
// The append is a copy: old rows + new rows into a temporary renamed over the file, so
// an interrupted write leaves the old file whole and a refused path is never touched.
void write_loss_csv(const cli::Args& args, const train::Trainer& trainer) {
  if (!args.has("--loss-csv")) return;
  const std::string path = args.get("--loss-csv");
  std::ifstream old(path, std::ios::binary);
  const bool append = args.has("--resume") && old.good();
  std::ostringstream csv;
  if (append) csv << old.rdbuf();
  else csv << "step,loss,lr,grad_norm,val_loss\n";
  for (const auto& r : trainer.history())
    csv << r.step << ',' << r.loss << ',' << r.lr << ',' << r.grad_norm << ',' << (r.val_loss >= 0 ? std::to_string(r.val_loss) : "") << '\n';
  gguf::write_file_atomically(path, csv.str());
}

// The run's whole loss history for the plot: the loss CSV when there is one (it holds the
// steps before a --resume too), else this invocation's steps.
std::vector<train::StepRecord> plot_history(const cli::Args& args, const train::Trainer& trainer) {
  if (!args.has("--loss-csv")) return trainer.history();
  std::vector<train::StepRecord> out;
  std::ifstream csv(args.get("--loss-csv"));
  std::string line;
  std::getline(csv, line);  // header
  while (std::getline(csv, line)) {
    train::StepRecord r;
    long long step = 0;
    float val = -1;
    const int n = std::sscanf(line.c_str(), "%lld,%f,%f,%lf,%f", &step, &r.loss, &r.lr, &r.grad_norm, &val);
    if (n < 4) continue;
    r.step = step, r.val_loss = n == 5 ? val : -1;
    out.push_back(r);
  }
  return out;
}

void write_plot(const cli::Args& args, const train::Trainer& trainer, const std::string& title) {
  if (!args.has("--plot")) return;
  train::write_loss_plot(args.get("--plot"), plot_history(args, trainer), title);
  std::fprintf(stderr, "wrote the loss plot %s\n", args.get("--plot").c_str());
}

// `train` and `distill` share everything but the objective and where the tokenizer and
// the student's shape come from.
int run(int argc, char** argv, bool distill) {
  cli::Args args(distill ? "distill" : "train",
                 distill ? "distill --teacher T.gguf --config NAME --data FILE.txt --steps N --out S.gguf [options]"
                         : "train --config NAME --data FILE.txt --steps N --out MODEL.gguf [options]",
                 distill ? "Logit distillation: train a student of a built-in config (with the teacher's\n"
                           "tokenizer) to match the frozen teacher's next-token distributions on a text file:\n"
                           "KL at a temperature (loss scaled by T^2), over the full vocabulary or the\n"
                           "teacher's top-k (the rest as one tail event). Checkpoints and --resume as in train.\n"
                           "--on-policy: the student (usually --init from a logit-distilled one) continues\n"
                           "prompts taken from --data by sampling, and learns the per-token reverse KL to the\n"
                           "teacher on the positions it generated (defaults then: reverse-kl, temperature 1)."
                         : "Train a model from scratch on a text file. The tokenizer is learned from the data\n"
                           "(byte-level BPE, the config's vocabulary size) unless --tokenizer gives a GGUF to take\n"
                           "it from. The last --val-fraction of the tokens is the validation stream.\n"
                           "--resume continues a run from a checkpoint written by --checkpoint (same data and\n"
                           "options): the result is bit-identical to an uninterrupted run.");
  if (distill) {
    args.group("distillation")
        .option({"--teacher"}, "FILE", "teacher GGUF (frozen; its tokenizer is used)").reads()
        .option({"--loss"}, "KIND", "kl (forward KL(teacher||student)) or reverse-kl (default: kl; on-policy: reverse-kl)")
        .real_option({"--temperature"}, "T", "distillation temperature (default: 2; on-policy: 1)",
                     {.min = 0, .max = 1000, .min_open = true})
        .int_option({"--topk"}, "K", "use only the teacher's top-k log-probs (0: full vocabulary)", {0, 1 << 24}, "0")
        .option({"--teacher-cache"}, "FILE", "--topk: read the teacher's top-k per window from FILE, running the teacher "
                                             "only on windows it lacks and appending them (created when absent)")
        .real_option({"--hard-label-weight"}, "A", "mix (1-A)*KL + A*cross-entropy on the data's next tokens",
                     {.min = 0, .max = 1}, "0")
        .option({"--init"}, "FILE", "start the student from this GGUF (its shape; default: fresh weights)").reads()
        .flag({"--on-policy"}, "on-policy distillation: train on the student's own continuations of --data prompts")
        .int_option({"--prompt-len"}, "N", "on-policy: prompt tokens per sequence (the rest of --seq-len is sampled)",
                    {1, cli::kMaxTokens}, "32")
        .real_option({"--sample-temperature"}, "T", "on-policy: the student's sampling temperature", {.min = 0}, "1");
  }
  cli::add_config_options(args, "glimmer-tiny");  // distill: the student's shape (vocabulary: the teacher's)
  args.group("data")
      .option({"--data"}, "FILE", "training text (UTF-8)").reads()
      .option({"--val-data"}, "FILE", "validation text (default: the last --val-fraction of --data)").reads()
      .real_option({"--val-fraction"}, "X", "share of the tokens held out for validation when there is no --val-data",
                   {.min = 0, .max = 1, .max_open = true}, "0.05")
      .option({"--order"}, "ORDER", "shuffled (windows in a new random order each epoch) or sequential", "shuffled")
      .flag({"--parse-special"}, "special token texts in the data (e.g. <|start|>) are their tokens, not plain text\n"
                                 "(chat-formatted training data)")
      .option({"--tokenizer"}, "GGUF", "take the tokenizer from this model instead of learning one").reads()
      .int_option({"--tokenizer-sample"}, "BYTES", "learn the tokenizer from the first BYTES of the data",
                  {1, int64_t{1} << 40}, "1000000")
      .int_option({"--seq-len"}, "N", "tokens per sequence", {1, cli::kMaxTokens}, "64")
      .int_option({"--batch"}, "N", "sequences per micro-batch", {1, cli::kMaxBatch}, "8");
  args.group("optimiser")
      .int_option({"--steps"}, "N", "optimiser steps", {1, int64_t{1} << 40}, "100")
      .int_option({"--accum"}, "N", "micro-batches per step (gradient accumulation)", {1, cli::kMaxBatch}, "1")
      .real_option({"--lr"}, "X", "peak learning rate", {.min = 0, .max = 1e6, .min_open = true}, "1e-3")
      .real_option({"--min-lr"}, "X", "final learning rate of the cosine (at most --lr)", {.min = 0, .max = 1e6}, "1e-4")
      .int_option({"--warmup"}, "N", "linear warm-up steps", {0, int64_t{1} << 40}, "10")
      .real_option({"--wd"}, "X", "AdamW decoupled weight decay", {.min = 0, .max = 1e6}, "0.1")
      .real_option({"--clip"}, "X", "gradient-norm clip (0: off)", {.min = 0}, "1.0")
      .int_option({"--seed"}, "N", "seed for the initial weights and the data order", {0, cli::kMaxSeed}, "1");
  args.group("evaluation")
      .int_option({"--eval-every"}, "N", "steps between validation losses (0: at the end)", {0, int64_t{1} << 40}, "0")
      .int_option({"--eval-sequences"}, "N", "validation sequences per evaluation", {1, cli::kMaxBatch}, "16");
  args.group("output and checkpoints")
      .option({"-o", "--out"}, "FILE", "output GGUF (F32 weights)").writes()
      .option({"--name"}, "TEXT", "general.name of the output (default: the config's name, command and seed)")
      .option({"--chat-template"}, "FILE", "a Jinja chat template to store in the exported model (tokenizer.chat_template)")
      .reads()
      .option({"--specials"}, "muse-glimmer",
              "name the vocabulary's 8 special tokens as Muse Glimmer's (<|begin_of_text|> <|eot|> <|eom|> <|start|>\n"
              "<|message|> <|image_start|> <|image_end|> <|mask|>) and append <|patch|> to the exported model")
      .option({"--checkpoint"}, "FILE", "checkpoint path (written every --checkpoint-every steps and at the end)")
      .writes("--resume")
      .int_option({"--checkpoint-every"}, "N", "steps between checkpoints (0: at the end)", {0, int64_t{1} << 40}, "0")
      .option({"--resume"}, "CKPT", "resume from this checkpoint").reads()
      .int_option({"--stop-after"}, "N", "stop after this step (an interrupted run: checkpoint, then --resume)",
                  {0, int64_t{1} << 40}, "0")
      .option({"--loss-csv"}, "FILE", "write step,loss,lr,grad_norm,val_loss per step").writes()
      .option({"--plot"}, "FILE.png", "draw the loss curve (training and validation) at the end").writes();
  args.group("run")
      .threads_option()
      .flag({"--no-progress"}, "no progress bar");
  if (!args.parse(argc, argv)) return 0;
  // Every step allocates and frees the same tape buffers: keep them in the heap instead
  // of returning them to the kernel, whose fresh zero pages cost ~10% of a step.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  SQZ_CHECK(!args.get("--data").empty(), "missing --data FILE.txt");
  SQZ_CHECK(!args.get("--out").empty(), "missing --out MODEL.gguf");
  // parse() has refused any output that is an input (--checkpoint may be the --resume
  // checkpoint: the documented in-place update, atomic) and two outputs on one path.
  set_default_thread_count(args.get_int32("--threads"));
  const auto seed = static_cast<uint64_t>(args.get_int("--seed"));
  const double val_fraction = args.get_double("--val-fraction");
  const int64_t sample = args.get_int("--tokenizer-sample");

  train::TrainOptions opt{
      .steps = args.get_int("--steps"), .batch = args.get_int("--batch"), .seq_len = args.get_int("--seq-len"),
      .accum = args.get_int("--accum"), .lr = static_cast<float>(args.get_double("--lr")),
      .min_lr = static_cast<float>(args.get_double("--min-lr")), .warmup = args.get_int("--warmup"),
      .adamw = {.weight_decay = static_cast<float>(args.get_double("--wd"))}, .clip = args.get_double("--clip"),
      .eval_every = args.get_int("--eval-every"), .eval_sequences = args.get_int("--eval-sequences"),
      .checkpoint_every = args.get_int("--checkpoint-every"), .checkpoint_path = args.get("--checkpoint"),
      .resume_path = args.get("--resume"),
      .seed = seed, .progress = !args.has("--no-progress")};
  SQZ_CHECK(args.get("--order") == "shuffled" || args.get("--order") == "sequential", "--order must be shuffled or sequential");
  if (args.get("--order") == "sequential") opt.order = train::TrainOptions::Order::sequential;
  if (opt.checkpoint_every == 0 && !opt.checkpoint_path.empty()) opt.checkpoint_every = opt.steps;
  opt.validate();  // before the (slow) tokenizer training
  if (args.has("--plot")) {
    const auto dir = std::filesystem::absolute(args.get("--plot")).parent_path();
    SQZ_CHECK(std::filesystem::is_directory(dir), args.get("--plot"), ": no directory ", dir.string(), " for the plot");
  }
  const int64_t stop_after = args.get_int("--stop-after");
  SQZ_CHECK(!args.has("--specials") || args.get("--specials") == "muse-glimmer", "--specials must be muse-glimmer (got '",
            args.get("--specials"), "')");
  const bool muse_specials = args.has("--specials");
  std::string chat_template;
  if (args.has("--chat-template")) {  // read and parsed now, not after hours of training
    chat_template = read_whole_file(args.get("--chat-template"));
    SQZ_CHECK(!chat_template.empty(), args.get("--chat-template"), ": the chat template is empty");
    const chat::Template check(chat_template, {});
  }
  const std::string text = train::read_text_file(args.get("--data"));
  model::ModelConfig config = cli::config_from_args(args);
  std::optional<train::GlimmerModel> teacher;
  std::optional<train::TeacherTopKCache> teacher_cache;
  if (distill) {
    SQZ_CHECK(!args.get("--teacher").empty(), "missing --teacher T.gguf");
    SQZ_CHECK(!args.has("--tokenizer"), "distill takes the tokenizer from the teacher (no --tokenizer)");
    const std::string kind = loss_kind(args);
    SQZ_CHECK(kind == "kl" || kind == "reverse-kl", "--loss must be kl or reverse-kl");
    SQZ_CHECK(!(args.has("--on-policy") && args.get_int("--topk") > 0), "--on-policy scores the full vocabulary (no --topk)");
    SQZ_CHECK(!args.has("--teacher-cache") || args.get_int("--topk") > 0, "--teacher-cache stores top-k log-probs: give --topk K");
    const double hard = args.get_double("--hard-label-weight");
    SQZ_CHECK(!(args.has("--on-policy") && hard != 0),
              "--on-policy has no data labels to mix in (no --hard-label-weight)");
    teacher.emplace(train::GlimmerModel::load(args.get("--teacher")));
    config.n_vocab = teacher->config().n_vocab;
  }
  // The model: from the checkpoint when resuming (its weights are replaced by
  // load_checkpoint below anyway, but config and tokenizer must be the checkpoint's).
  std::optional<train::GlimmerModel> model;
  if (args.has("--resume")) {
    model.emplace(train::GlimmerModel::load(args.get("--resume")));
  } else if (distill && args.has("--init")) {
    model.emplace(train::GlimmerModel::load(args.get("--init")));
    SQZ_CHECK(model->config().n_vocab == teacher->config().n_vocab, args.get("--init"), ": a vocabulary of ",
              model->config().n_vocab, " tokens, the teacher has ", teacher->config().n_vocab);
    text::TokenizerData want = teacher->tokenizer();
    if (muse_specials) train::rename_to_muse_glimmer_specials(want);
    for (int32_t id = 0; id < model->config().n_vocab; ++id)
      SQZ_CHECK(model->tokenizer().tokens[static_cast<size_t>(id)] == want.tokens[static_cast<size_t>(id)],
                args.get("--init"), ": its tokenizer differs from the teacher's (token ", id, ")");
  } else {
    text::TokenizerData tok;
    if (distill) {
      tok = teacher->tokenizer();
    } else if (args.has("--tokenizer")) {
      const gguf::File f(args.get("--tokenizer"));
      tok = model::tokenizer_data_from_gguf(f.metadata());
      config.n_vocab = static_cast<int64_t>(tok.tokens.size());
    } else {
      tok = train::train_tokenizer(std::string_view(text).substr(0, static_cast<size_t>(sample)), config.n_vocab);
    }
    if (muse_specials) train::rename_to_muse_glimmer_specials(tok);
    model.emplace(train::GlimmerModel::init(config, std::move(tok), {.seed = seed}));
  }
  const text::Tokenizer tokenizer(model->tokenizer());
  const bool parse_special = args.has("--parse-special");
  const std::vector<int32_t> tokens = tokenizer.encode(text, {.add_special = false, .parse_special = parse_special});
  const std::vector<int32_t> val_file_tokens =
      args.has("--val-data") ? tokenizer.encode(train::read_text_file(args.get("--val-data")),
                                                {.add_special = false, .parse_special = parse_special})
                             : std::vector<int32_t>{};
  const size_t n_val = args.has("--val-data") ? 0 : static_cast<size_t>(static_cast<double>(tokens.size()) * val_fraction);
  const std::span<const int32_t> all(tokens);
  const auto train_tokens = all.first(tokens.size() - n_val);
  const auto val_tokens = args.has("--val-data") ? std::span<const int32_t>(val_file_tokens) : all.last(n_val);

  train::LossFn loss = train::cross_entropy_loss();
  train::BatchFn batches;
  const std::string scratch = args.get("--out") + ".sampler.tmp";
  if (distill) {
    const bool on_policy = args.has("--on-policy");
    const train::KlParams kl{.direction = loss_kind(args) == "kl" ? train::KlDirection::forward : train::KlDirection::reverse,
                             .temperature = static_cast<float>(args.has("--temperature") ? args.get_double("--temperature")
                                                                                       : on_policy ? 1.0 : 2.0),
                             .scale = 0.0f};
    if (args.has("--teacher-cache"))
      teacher_cache.emplace(args.get("--teacher-cache"),
                            train::TeacherCacheKey{.vocab = teacher->config().n_vocab, .k = args.get_int("--topk"),
                                                   .seq_len = opt.seq_len, .temperature = kl.temperature,
                                                   .teacher = train::teacher_fingerprint(*teacher)});
    loss = train::distillation_loss(*teacher, {.kl = kl, .topk = args.get_int("--topk"),
                                               .cache = teacher_cache ? &*teacher_cache : nullptr,
                                               .hard_label_weight = args.get_double("--hard-label-weight")});
    if (on_policy)
      batches = train::on_policy_batches(*model, train_tokens,
                                         {.prompt_len = args.get_int("--prompt-len"),
                                          .temperature = static_cast<float>(args.get_double("--sample-temperature")),
                                          .scratch_path = scratch},
                                         opt.batch, opt.seq_len);
  }
  train::Trainer trainer(*model, train_tokens, val_tokens, opt, std::move(loss), std::move(batches));
  const auto params = model::count_params(model->config());
  std::fprintf(stderr, "train: %s, %.2fM parameters, %zu training / %zu validation tokens, %d threads\n",
               model->config().name.c_str(), params.total / 1e6, train_tokens.size(), val_tokens.size(),
               default_thread_pool().size());
  if (args.has("--resume")) trainer.load_checkpoint(args.get("--resume"));
  const std::string run_name = args.has("--name") ? args.get("--name")
                                                 : model->config().name + (distill ? " (squeeze distill" : " (squeeze train") +
                                                       ", seed " + std::to_string(seed) + ")";
  if (stop_after > 0 && stop_after < opt.steps) {
    trainer.run(stop_after);
    std::remove(scratch.c_str());
    write_loss_csv(args, trainer);
    if (!opt.checkpoint_path.empty()) trainer.save_checkpoint(opt.checkpoint_path);
    write_plot(args, trainer, run_name);
    std::printf("stopped after step %lld%s\n", static_cast<long long>(stop_after),
                opt.checkpoint_path.empty() ? "" : (", checkpoint " + opt.checkpoint_path).c_str());
    return 0;
  }
  trainer.run();
  std::remove(scratch.c_str());
  write_loss_csv(args, trainer);
  if (teacher_cache)
    std::fprintf(stderr, "teacher cache %s: %lld windows; this run read %lld, computed %lld\n",
                 teacher_cache->path().c_str(), static_cast<long long>(teacher_cache->entries()),
                 static_cast<long long>(teacher_cache->hits()), static_cast<long long>(teacher_cache->misses()));
  if (muse_specials) train::append_muse_patch_token(*model);  // the exported file only; checkpoints keep the training vocabulary
  model->export_gguf(args.get("--out"), run_name, chat_template);
  write_plot(args, trainer, run_name);  // after the model: a plot that fails loses nothing

  const auto& h = trainer.history();
  if (!h.empty())
    std::printf("wrote %s: step %lld, train loss %.4f, validation loss %.4f\n", args.get("--out").c_str(),
                static_cast<long long>(h.back().step), h.back().loss, h.back().val_loss);
  return 0;
}

int run_train(int argc, char** argv) { return run(argc, argv, false); }
int run_distill(int argc, char** argv) { return run(argc, argv, true); }

}  // namespace

SQZ_COMMAND("train", "train a model from scratch on a text file (CPU, f32)", run_train);
SQZ_COMMAND("distill", "logit distillation of a student from a teacher GGUF (KL, temperature, top-k)", run_distill);
