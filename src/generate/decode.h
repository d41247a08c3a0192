// generate/decode.h — one sequence generated over a model::Session: runs what the
// Sequence feeds (with drafts, when a Speculator is given), applies what each step keeps and
// takes back, and streams the released text. `squeeze generate`, `squeeze chat`, the
// reasoning evaluation and spec-bench decode through it; the server's engine drives
// Sequences inside its own batched steps instead.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "generate/sequence.h"
#include "model/session.h"
#include "model/speculative.h"

namespace squeeze::generate {

struct DecodeResult {
  int64_t generated = 0;      // tokens released to the output
  bool context_full = false;  // ended because the cache had no room for the next token
  bool interrupted = false;   // ended because *interrupt became true
};

struct DecodeParams {
  // Checked before each step; when it reads true the answer ends there (Ctrl-C).
  const std::atomic<bool>* interrupt = nullptr;
  // Every token left in the session's cache is appended here (and taken back with it).
  std::vector<int32_t>* forwarded = nullptr;
  // Speculative decoding around the session (null: one token per step). The output is the
  // same either way (generate/sequence.h: the verify-walk).
  model::Speculator* speculator = nullptr;
};

// Drives `seq` (started at the session's position) over the session: `logits` are those of
// the last cached position; runs what the sequence feeds (with drafts when a speculator is
// given), applies what each step keeps and takes back, and streams the released text to
// `emit` until the sequence finishes or *interrupt; the held text is emitted in every case.
DecodeResult decode(model::Session& session, generate::Sequence& seq, std::span<const float> logits,
                    const DecodeParams& params, const std::function<void(const std::string&)>& emit);

}  // namespace squeeze::generate
