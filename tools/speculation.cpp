// tools/speculation.cpp
#include "speculation.h"

#include <cstdio>

#include "core/error.h"

namespace squeeze::cli {

void add_speculation_options(Args& args) {
  args.group("speculative decoding")
      .option({"--draft"}, "FILE", "speculative decoding with this DFlash drafter (GGUF arch 'dflash', made for the model)")
      .flag({"--lookup"}, "speculative decoding with prompt lookup: drafts copy what followed the latest earlier\n"
                          "occurrence of the last few tokens (no drafter)")
      .int_option({"--draft-block"}, "B", "tokens per verification step, the anchor included (default: the drafter's\n"
                                          "block size; 16 for --lookup)", {0, 64}, "0")
      .flag({"--draft-fixed"}, "always draft the whole block (no run-time choice of the draft length)");
}

bool check_speculation_options(const Args& args) {
  const bool dflash = args.has("--draft"), lookup = args.has("--lookup");
  SQZ_CHECK(!(dflash && lookup), "--draft and --lookup are two draft sources: give one");
  SQZ_CHECK(dflash || lookup || (args.get_int("--draft-block") == 0 && !args.has("--draft-fixed")),
            "--draft-block and --draft-fixed need --draft or --lookup");
  return dflash || lookup;
}

Speculation make_speculation(const Args& args, const model::Model& target, model::Session& session) {
  Speculation s;
  if (!check_speculation_options(args)) return s;
  if (args.has("--draft")) s.drafter = model::Drafter::load(args.get("--draft"), target);
  const int64_t max_drafts = model::drafts_per_block(s.drafter.get(), args.get_int("--draft-block"));
  if (s.drafter) s.source = std::make_unique<model::DFlashSource>(*s.drafter);
  else s.source = std::make_unique<model::PromptLookupSource>(max_drafts);
  s.speculator = std::make_unique<model::Speculator>(
      session, *s.source, model::SpeculatorParams{.max_drafts = max_drafts, .adaptive = !args.has("--draft-fixed")});
  return s;
}

std::string speculation_summary(const Speculation& s) {
  if (!s.speculator) return {};
  const model::SpeculatorStats& st = s.speculator->stats();
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "speculative (%s): tau %.2f | %lld of %lld drafts kept in %lld verify steps, %lld plain | draft %.2f s, "
                "verify %.2f s",
                s.drafter ? "dflash" : "lookup", st.tau(), static_cast<long long>(st.accepted),
                static_cast<long long>(st.drafted), static_cast<long long>(st.verify_steps),
                static_cast<long long>(st.steps - st.verify_steps), st.draft_seconds, st.verify_seconds);
  return buf;
}

}  // namespace squeeze::cli
