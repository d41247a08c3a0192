// tools/cmd_reasoning_data.cpp — `squeeze reasoning-data`: the reasoning-effort model's
// problems, as training text rendered through a chat template or as JSON lines.
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "chat/template.h"
#include "command.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/atomic_file.h"
#include "train/corpus.h"
#include "train/reasoning_problems.h"

namespace {

using namespace squeeze;
using chat::Json;

// A date in 2026..2028 as the template's "Current date" line shows it.
std::string random_date(text::Rng& rng) {
  const int year = 2026 + static_cast<int>(rng.next_u64() % 3), month = 1 + static_cast<int>(rng.next_u64() % 12),
            day = 1 + static_cast<int>(rng.next_u64() % 28);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", year, month, day);
  return buf;
}

Json problem_json(const train::ReasoningProblem& p, int64_t id) {
  Json traces = Json::object();
  for (size_t e = 0; e < 4; ++e) traces[std::string(train::kEffortNames[e])] = p.traces[e];
  return {{"id", id}, {"family", p.family}, {"difficulty", p.difficulty}, {"question", p.question},
          {"answer", p.answer}, {"traces", traces}};
}

// Consecutive lines of the KJV text from a random place, about `bytes` long.
std::string kjv_passage(const std::string& kjv, text::Rng& rng, size_t bytes) {
  size_t at = static_cast<size_t>(rng.next_u64() % kjv.size());
  at = kjv.find('\n', at);
  at = at == std::string::npos ? 0 : at + 1;
  if (at >= kjv.size()) at = 0;
  size_t end = kjv.find('\n', std::min(kjv.size(), at + bytes));
  end = end == std::string::npos ? kjv.size() : end + 1;
  return kjv.substr(at, end - at);
}

int run_reasoning_data(int argc, char** argv) {
  cli::Args args("reasoning-data", "reasoning-data --split SPLIT --count N --out FILE [options]",
                 "Write synthetic problems with checkable answers (addition, multiplication by one digit,\n"
                 "counting a letter, sorting; difficulty 1..4) and their worked solutions at the four\n"
                 "reasoning levels. Questions fall into train / valid / test by a hash of their text,\n"
                 "so no two splits share one whatever the seeds.\n"
                 "--format jsonl: one JSON object per line (id, family, difficulty, question, answer,\n"
                 "traces by level). --format chat: training text, each problem a conversation rendered\n"
                 "through --template at a random level (the thinking to `self` at that level, then\n"
                 "the answer); --truncated-share of them have the thinking cut after a random number\n"
                 "of words (none: no thinking message), and --kjv adds passages of plain text.");
  args.option({"--split"}, "SPLIT", "train, valid or test")
      .int_option({"--count"}, "N", "problems", {1, int64_t{1} << 32}, "1000")
      .int_option({"--seed"}, "N", "seed of the draw", {0, cli::kMaxSeed}, "1")
      .option({"-o", "--out"}, "FILE", "output file")
      .option({"--format"}, "FORMAT", "jsonl or chat", "jsonl")
      .option({"--template"}, "FILE", "chat: the Jinja chat template (Muse Glimmer's)")
      .option({"--bos"}, "TEXT", "chat: the template's bos_token", "<|begin_of_text|>")
      .real_option({"--truncated-share"}, "X", "chat: share of conversations whose thinking is cut short",
                   {.min = 0, .max = 1}, "0.1")
      .option({"--kjv"}, "FILE", "chat: plain text mixed in between conversations")
      .real_option({"--kjv-share"}, "X", "chat: passages of --kjv per conversation", {.min = 0, .max = 10}, "0.15");
  if (!args.parse(argc, argv)) return 0;
  const auto split = train::split_from_name(args.get("--split"));
  SQZ_CHECK(split, "--split must be train, valid or test (got '", args.get("--split"), "')");
  SQZ_CHECK(!args.get("--out").empty(), "missing --out FILE");
  const std::string format = args.get("--format");
  SQZ_CHECK(format == "jsonl" || format == "chat", "--format must be jsonl or chat (got '", format, "')");
  SQZ_CHECK(format == "chat" || (!args.has("--template") && !args.has("--kjv")), "--template and --kjv need --format chat");
  SQZ_CHECK(format == "jsonl" || args.has("--template"), "--format chat needs --template FILE");
  const gguf::DeclaredInputs inputs({args.get("--template"), args.get("--kjv")});
  gguf::check_output_path(args.get("--out"));

  const uint64_t seed = static_cast<uint64_t>(args.get_int("--seed"));
  const auto problems = train::make_reasoning_problems(*split, args.get_int("--count"), seed);
  std::string out;
  if (format == "jsonl") {
    for (size_t i = 0; i < problems.size(); ++i) out += problem_json(problems[i], static_cast<int64_t>(i)).dump() + "\n";
  } else {
    const std::string source = read_whole_file(args.get("--template"));
    const chat::Template tmpl(source, {.name = args.get("--template")});
    const std::string kjv = args.has("--kjv") ? train::read_text_file(args.get("--kjv")) : std::string();
    const double truncated = args.get_double("--truncated-share"), kjv_share = args.get_double("--kjv-share");
    text::Rng rng(seed ^ 0x5eed5eed5eedull);  // the rendering's own draws: the problems stay those of --seed
    double kjv_due = 0;
    for (const auto& p : problems) {
      const auto level = static_cast<size_t>(rng.next_u64() % 4);
      std::string trace = p.traces[level];
      if (rng.uniform() < truncated) {
        const int64_t words = train::count_words(trace);
        trace = train::first_words(trace, static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(words)));
      }
      Json assistant = {{"role", "assistant"}, {"content", p.answer}};
      if (!trace.empty()) assistant["reasoning_content"] = trace;
      const Json messages = Json::array({Json{{"role", "user"}, {"content", p.question}}, assistant});
      const Json extra = {{"reasoning_strength", std::string(train::kEffortNames[level])},
                          {"current_date", random_date(rng)}};
      out += chat::render_chat(tmpl, messages, false, args.get("--bos"), "", nullptr, extra);
      for (kjv_due += kjv.empty() ? 0 : kjv_share; kjv_due >= 1; kjv_due -= 1)
        out += kjv_passage(kjv, rng, 64 + rng.next_u64() % 448);
    }
  }
  gguf::write_file_atomically(args.get("--out"), out);
  std::fprintf(stderr, "wrote %s: %zu problems (%s split, seed %llu, %s)\n", args.get("--out").c_str(),
               problems.size(), args.get("--split").c_str(), static_cast<unsigned long long>(seed), format.c_str());
  return 0;
}

}  // namespace

SQZ_COMMAND("reasoning-data", "write synthetic reasoning problems: training conversations or a JSON-lines test set",
            run_reasoning_data);
