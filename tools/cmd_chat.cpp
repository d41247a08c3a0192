// tools/cmd_chat.cpp — `squeeze chat`: a multi-turn chat in the terminal (or over a pipe).
//
// Each turn re-renders the whole conversation through the model's chat template and
// reuses the KV cache up to the first token that differs from what it holds
// (tools/chat_cache.h), so a turn prefills only its new tokens. Answers are kept as text:
// templates rewrite history (and a re-tokenized answer can differ from the sampled ids),
// which is exactly what the prefix comparison absorbs.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <list>
#include <cstring>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "args.h"
#include "chat_cache.h"
#include "generate/conversation.h"
#include "reasoning.h"
#include "generate/chat_format.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "generate/decode.h"
#include "sampling_options.h"
#include "image_inputs.h"
#include "speculation.h"
#include "gguf/atomic_file.h"
#include "gguf/file_identity.h"
#include "model/model.h"
#include "model/session.h"
#include "wall_clock.h"

namespace {

using namespace squeeze::cli;
using namespace squeeze::generate;
using squeeze::cli::Clock;
using squeeze::cli::seconds_since;

std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
extern "C" void on_sigint(int) { g_interrupt.store(true); }

// Lines from stdin through read(2), so that Ctrl-C at the prompt is seen at once: the
// handler is installed without SA_RESTART, and a read interrupted by it returns EINTR.
class LineReader {
 public:
  enum class Status { line, eof, interrupted };
  Status next(std::string& line) {
    for (;;) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return Status::line;
      }
      if (eof_) {
        if (buffer_.empty()) return Status::eof;
        line = std::move(buffer_);  // a last line without its newline
        buffer_.clear();
        return Status::line;
      }
      if (g_interrupt.load()) return Status::interrupted;
      char chunk[4096];
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;  // the flag decides, above
      if (n < 0) squeeze::fail("reading stdin: ", std::strerror(errno));
      if (n == 0) eof_ = true;
      buffer_.append(chunk, static_cast<size_t>(n > 0 ? n : 0));
    }
  }

 private:
  std::string buffer_;
  bool eof_ = false;
};

void note(const std::string& text) { std::fprintf(stderr, "%s\n", text.c_str()); }

const char* kCommandHelp =
    "commands: /reset (forget the conversation; the system message stays), /system TEXT (set the\n"
    "system message, from the next turn; /system alone removes it), /save FILE (the conversation\n"
    "as a JSON list of messages), /image FILE (with --mmproj: a PNG or JPEG shown with the next\n"
    "message), /help, /exit. Ctrl-C stops an answer; at the prompt it exits, as does Ctrl-D.";

int run_chat(int argc, char** argv) {
  Args args("chat", "chat -m MODEL.gguf [--system TEXT] [options]",
            "Chat with an instruct model: each line read from stdin is a user message, rendered with\n"
            "the model's chat template (tokenizer.chat_template) together with the conversation so far;\n"
            "answers stream to stdout, each followed by a newline, and a stats line per answer goes to stderr\n"
            "(prompt tokens reused from the KV cache and prefilled, answer tokens/s). Prompts (\"> \")\n"
            "are shown only when stdin is a terminal, so the command works over a pipe too.\n"
            "Context: when the conversation plus room for an answer (-n tokens, at most a quarter of\n"
            "the context) no longer fits --ctx, the oldest turns are dropped (the system message\n"
            "stays) and stderr says so; a message that does not fit even alone is refused (/reset\n"
            "starts over). An answer that fills the context stops there.\n" +
                std::string(kCommandHelp));
  args.group("model and answers")
      .option({"-m", "--model"}, "FILE", "GGUF model with a chat template")
      .option({"--system"}, "TEXT", "the system message")
      .int_option({"-n", "--n-predict"}, "N", "tokens per answer at most", {1, kMaxTokens}, "1024")
      .flag({"--ignore-eos"}, "answers end only at -n or Ctrl-C, not at EOS / end-of-turn (tests, benchmarks)");
  args.group("context and speed")
      .threads_option()
      .int_option({"--ctx"}, "N", "context length (0: the model's)", {0, kMaxTokens}, "0")
      .int_option({"--batch"}, "N", "prefill batch size", {1, kMaxBatch}, "64")
      .flag({"--batch-invariant"}, "run every product as `squeeze serve` does (docs/development.md: the determinism\n"
                                   "rule): the tokens equal the server's for the same prompt, seed and options; the\n"
                                   "prompt runs slower")
      .option({"--kv"}, "TYPE", "KV cache type: f16, bf16, f32 or q8_0 (8.5 bits per value; needs head_dim % 32 == 0)", "f16");
  add_image_options(args);
  add_sampling_options(args);
  add_speculation_options(args);
  add_reasoning_options(args);
  if (!args.parse(argc, argv)) return 0;
  const std::string path = args.get("--model");
  SQZ_CHECK(!path.empty(), "missing -m MODEL.gguf");
  if (!args.positional().empty()) squeeze::fail("unexpected argument '", args.positional()[0], "'");
  std::vector<std::string> input_files{path};
  if (args.has("--mmproj")) input_files.push_back(args.get("--mmproj"));
  const squeeze::gguf::DeclaredInputs inputs(input_files);  // /save never replaces the model or projector

  // SIGINT must reach the main thread (it interrupts the read at the prompt and is
  // checked between tokens): block it while the worker threads are created, which
  // inherit the mask, and unblock it here afterwards.
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigint, nullptr);
  squeeze::set_default_thread_count(args.get_int32("--threads"));
  pthread_sigmask(SIG_UNBLOCK, &sigint, nullptr);

  const auto model = squeeze::model::Model::load(path);
  const squeeze::generate::ChatFormat format(*model);  // no tokenizer.chat_template: a one-line error
  const auto kv_type = squeeze::kernels::cpu::kv_type_from_name(args.get("--kv"), "--kv");
  squeeze::model::Session session(*model, {.n_ctx = args.get_int("--ctx"), .batch = args.get_int("--batch"),
                                           .kv_type = kv_type, .batch_invariant = args.has("--batch-invariant")});
  const Speculation speculation = make_speculation(args, *model, session);
  const auto image_inputs = ImageInputs::from_args(args, *model);
  SQZ_CHECK(!image_inputs || !speculation.speculator, "images with speculative decoding are not supported yet");
  PromptCache cache(session, speculation.speculator.get());
  const auto& tok = model->tokenizer();
  squeeze::text::Sampler sampler(sampler_params(args));
  const std::vector<int32_t> banned = squeeze::generate::unused_tokens(tok);
  const int64_t n_predict = args.get_int("--n-predict");
  const int64_t n_ctx = session.n_ctx();
  const int64_t budget = n_ctx - std::min(n_predict, n_ctx / 4);  // prompt tokens at most
  const ReasoningSettings reasoning = reasoning_settings(args, *model);
  // With images, each rendering is widened to the images' tokens (so the context budget
  // counts them) and kept: the rendering fit_prompt accepts is its last one.
  squeeze::vision::PromptRows rows;
  // An image is read and encoded once, when attached: later turns re-render it from these
  // features even if the file changes or goes away.
  std::map<std::string, std::shared_ptr<const squeeze::vision::ImageFeatures>> attached;
  std::string rendering;  // the last one: the turn's prompt once fit_prompt accepts it
  const EncodeFn encode = [&](const squeeze::chat::Json& m) {
    rendering = format.render(m, true, nullptr, reasoning.template_variables());
    std::vector<int32_t> ids = format.tokenize(rendering);
    if (!image_inputs) return ids;
    std::vector<std::shared_ptr<const squeeze::vision::ImageFeatures>> images;
    for (const std::string& f : image_paths(m)) images.push_back(attached.at(f));
    rows = image_inputs->expand(ids, images);
    return rows.ids;
  };
  std::vector<std::string> pending_images;  // /image files for the next message
  std::list<squeeze::gguf::DeclaredInputs> image_files;  // every /image file, an input from then on
  const std::vector<int32_t>& stop_ids = format.turn_stop_ids();

  Conversation conversation;
  conversation.set_system(args.get("--system"));

  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: see LineReader
  sigaction(SIGINT, &sa, nullptr);

  const bool tty = ::isatty(STDIN_FILENO);
  if (tty) note("chat with " + path + " (/help for commands, Ctrl-D to exit)");
  LineReader reader;
  std::string line;
  for (;;) {
    if (tty) std::fputs("> ", stderr);
    const auto status = reader.next(line);
    if (status != LineReader::Status::line) {
      if (tty) std::fputc('\n', stderr);
      return 0;  // Ctrl-D, end of the pipe, or Ctrl-C at the prompt
    }
    if (line.empty()) continue;

    if (line[0] == '/') {
      const size_t space = line.find(' ');
      const std::string cmd = line.substr(0, space);
      const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
      if (cmd == "/exit" || cmd == "/quit") return 0;
      if (cmd == "/help") {
        note(kCommandHelp);
      } else if (cmd == "/reset") {
        conversation.clear();
        cache.reset();
        note("[conversation cleared]");
      } else if (cmd == "/system") {
        conversation.set_system(rest);
        note(rest.empty() ? "[system message removed]" : "[system message set; it applies from the next turn]");
      } else if (cmd == "/save") {
        if (rest.empty()) {
          note("[usage: /save FILE]");
          continue;
        }
        try {
          // Atomic, and refused when FILE is the model (check_output_path). An answer can
          // hold invalid UTF-8 (a byte token, or one cut mid-character by Ctrl-C): JSON
          // cannot, so such bytes are written as U+FFFD.
          const std::string json =
              conversation.to_json().dump(2, ' ', false, squeeze::chat::Json::error_handler_t::replace);
          squeeze::gguf::write_file_atomically(rest, json + "\n");
          note("[saved " + std::to_string(conversation.to_json().size()) + " messages to " + rest + "]");
        } catch (const std::exception& e) {
          note(std::string("[save failed: ") + e.what() + "]");
        }
      } else if (cmd == "/image") {
        if (!image_inputs) {
          note("[/image needs --mmproj PROJECTOR.gguf]");
        } else if (rest.empty()) {
          note("[usage: /image FILE]");
        } else {
          try {  // encoded now: a bad image is refused before the message is written
            const int64_t hits = image_inputs->cache().hits();
            const auto f = image_inputs->file(rest);
            image_files.emplace_back(std::vector<std::string>{rest});  // /save never replaces it
            attached[rest] = f;  // attached again: the new content from here on
            pending_images.push_back(rest);
            note("[" + describe_image(rest, *f, image_inputs->cache().hits() > hits) + "; shown with the next message]");
          } catch (const std::exception& e) {
            note(std::string("[image refused: ") + e.what() + "]");
          }
        }
      } else {
        note("[unknown command " + cmd + "; /help lists them]");
      }
      continue;
    }

    conversation.add("user", line, {}, pending_images);
    pending_images.clear();
    auto fitted = fit_prompt(conversation, encode, budget);
    if (!fitted) {
      conversation.pop_back();
      note("[the message does not fit the context of " + std::to_string(n_ctx) +
           " tokens with room for an answer; shorten it, or /reset to start over]");
      continue;
    }
    if (fitted->dropped_turns > 0) {
      conversation.drop_oldest_turns(fitted->dropped_turns);
      note("[context of " + std::to_string(n_ctx) + " tokens is full: dropped the oldest " +
           std::to_string(fitted->dropped_turns) + " turn(s)]");
    }

    const auto t0 = Clock::now();
    const auto prefill = image_inputs ? cache.prefill(rows) : cache.prefill(fitted->ids);
    const double prompt_s = seconds_since(t0);

    std::string answer;
    // The thinking (as the model's framing separates it) goes to stderr, the answer to stdout.
    ThinkingPrinter printer(format.output_parser({}, rendering), [](const std::string& t) { std::fputs(t.c_str(), stderr); },
                            [&answer](const std::string& t) {
                              answer += t;
                              emit_stdout(t);
                            });
    // The sampler carries over from turn to turn (its seed's stream, its penalty history).
    squeeze::generate::Sequence seq(
        tok, std::move(sampler),
        {.stop = {.eos_ids = args.has("--ignore-eos") ? std::vector<int32_t>{} : stop_ids, .max_tokens = n_predict},
         .n_ctx = n_ctx,
         .render_control = format.renders_control()},
        reasoning.new_turn(format.prompt_opens_thinking(rendering)), banned);
    seq.start(session.position(), std::span<const int32_t>(fitted->ids).subspan(prefill.reused));
    const auto t1 = Clock::now();
    g_interrupt.store(false);  // a Ctrl-C from here on interrupts the answer, not the next prompt
    const squeeze::generate::DecodeResult r = squeeze::generate::decode(session, seq, prefill.logits,
                                  {.interrupt = &g_interrupt, .forwarded = &cache.ids(),
                                   .speculator = speculation.speculator.get()},
                                  [&printer](const std::string& text) { printer.feed(text); });
    sampler = std::move(seq.sampler());
    printer.finish();
    g_interrupt.store(false);  // consumed by the answer: the prompt waits afresh
    const double gen_s = seconds_since(t1);
    emit_stdout("\n");
    // An interrupted answer is kept as far as it went: it is what the user saw.
    conversation.add("assistant", answer, printer.all().reasoning);
    if (r.interrupted) note("[interrupted]");
    if (const auto* thinking = seq.thinking())
      note("[thinking: " + std::to_string(thinking->thinking_tokens()) + " tokens of a budget of " +
           std::to_string(thinking->budget()) + (thinking->forced_close() ? ", closed by the budget]" : "]"));
    if (r.context_full) note("[context of " + std::to_string(n_ctx) + " tokens is full: the answer stops here]");
    std::fprintf(stderr,
                 "[prompt: %zu tokens (%zu reused, %zu prefilled) in %.3f s | answer: %lld tokens in %.3f s "
                 "(%.1f t/s)]\n",
                 fitted->ids.size(), prefill.reused, prefill.prefilled, prompt_s, static_cast<long long>(r.generated),
                 gen_s, r.generated / std::max(gen_s, 1e-9));
    if (speculation.speculator) std::fprintf(stderr, "[%s]\n", speculation_summary(speculation).c_str());
  }
}

}  // namespace

SQZ_COMMAND("chat", "chat with an instruct model in the terminal (multi-turn, KV cache reused)", run_chat);
