// train/draft_data.h — the DFlash drafter's training data: the target's own continuations
// of prompts, each stored once with the target's tapped hidden states, one file per prompt
// (so generation resumes where it stopped: existing files are kept).
//
// File (little-endian): "SQDD" u32 version=1, u32 n_tokens, u32 n_prompt, u32 width
// (n_taps · E), i32 tokens[n_tokens], bf16 taps[n_tokens][width] (the tapped rows of every
// token, the last one included).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace squeeze::train {

struct DraftSample {
  std::vector<int32_t> tokens;
  int64_t n_prompt = 0;
  int64_t width = 0;
  std::vector<uint16_t> taps;  // bf16 [tokens.size(), width] (the range of a residual stream, as the reference trains)
};

void write_draft_sample(const std::string& path, const DraftSample& s);  // atomically
// Throws naming the file when it is not a sample of `width` values per row.
DraftSample read_draft_sample(const std::string& path, int64_t width);

struct DraftDataParams {
  int64_t gen_tokens = 128;       // continuation length at most
  float temperature = 0;          // 0: greedy, as the target decodes by default
  uint64_t seed = 1;
  std::vector<int32_t> stop_ids = {};  // end of turn / sequence: the continuation ends after it
};

// For each prompt i without a file yet, runs the target on it, decodes its continuation
// and writes dir/sample_<i>.sqdd with the taps of `tap_layers`. Returns every sample's path,
// in prompt order. Progress on stderr.
std::vector<std::string> generate_draft_data(const model::Model& target, const std::vector<int64_t>& tap_layers,
                                             const std::vector<std::vector<int32_t>>& prompts, const std::string& dir,
                                             const DraftDataParams& params);

}  // namespace squeeze::train
