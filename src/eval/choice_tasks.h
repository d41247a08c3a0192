// eval/choice_tasks.h — small multiple-choice tasks built from line-per-verse text (the
// KJV split of data/README.md, or any text with one sentence-like unit per line): the
// model scores each candidate continuation of a context by its log-likelihood and
// chooses the best; accuracy against chance (1 / candidates).
//
//   next-word:    the verse without its last word (after the previous verse) → the true
//                 last word or the last words of 3 other verses; score = summed log-prob
//                 (LAMBADA-style: single words, no length normalisation).
//   verse-ending: the previous verse and the first half of the verse's words → the true
//                 second half or the second halves of 3 other verses; score = log-prob
//                 per byte of the candidate (lm-eval's acc_norm), since the halves differ
//                 in length.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace squeeze::eval {

struct ChoiceItem {
  std::string context;
  std::vector<std::string> candidates;  // each begins with the space that joins it to the context
  int32_t answer = 0;                   // index of the true continuation
};

enum class ChoiceTask { next_word, verse_ending };
const char* task_name(ChoiceTask task);

// Up to `n` items of `task` from `text`, chosen and shuffled by `seed` (the same text and
// seed give the same items on every machine). Errors when the text has too few usable lines.
std::vector<ChoiceItem> make_choice_items(ChoiceTask task, std::string_view text, int64_t n, uint64_t seed);

struct ChoiceResult {
  int64_t items = 0;
  int64_t correct = 0;
  double accuracy() const { return items > 0 ? static_cast<double>(correct) / static_cast<double>(items) : 0.0; }
};

// Runs the model on every item (context, then each candidate after it).
ChoiceResult score_choice_items(const model::Model& model, ChoiceTask task, const std::vector<ChoiceItem>& items);

}  // namespace squeeze::eval
