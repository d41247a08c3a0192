// train/reasoning_problems.h — synthetic problems with checkable answers and worked
// solutions at four granularities, the data of the reasoning-effort model.
//
// Four families, each at difficulty 1..4: column addition (2..5 digits), multiplication of
// a 2..5-digit number by one digit, counting a letter in a made-up word given letter by letter (5..16 letters) and sorting
// 3..6 two-digit numbers. Every level's trace reaches the answer; they differ in how much
// is done per written step, so a small model gets more right the finer its steps:
//   low     few big steps (columns in chunks of 3 digits, letters in chunks of 4, ...)
//   medium  sums column by column, products in pairs of digits, letters in threes
//   high    every step (one digit, one letter, one selection)
//   xhigh   every step, announced, and a check at the end
// Questions are assigned to the train / valid / test split by a hash of their text, so no
// question is in two splits whatever seeds the splits are drawn with.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/rng.h"

namespace squeeze::train {

enum class Effort { low = 0, medium = 1, high = 2, xhigh = 3 };
inline constexpr std::array<std::string_view, 4> kEffortNames = {"low", "medium", "high", "xhigh"};
inline std::string_view effort_name(Effort e) { return kEffortNames[static_cast<size_t>(e)]; }

inline constexpr std::array<std::string_view, 4> kProblemFamilies = {"addition", "multiplication", "counting", "sorting"};

struct ReasoningProblem {
  std::string family;                 // one of kProblemFamilies
  int difficulty = 1;                 // 1..4
  std::string question;               // the user's message
  std::string answer;                 // the exact expected answer ("8788", "3", "17, 33, 52, 86")
  std::array<std::string, 4> traces;  // the thinking at each Effort
};

enum class Split { train, valid, test };
// 90% / 5% / 5% of questions by an FNV-1a hash of the question text.
Split split_of(std::string_view question);
std::optional<Split> split_from_name(std::string_view name);

// One problem of `family` (index into kProblemFamilies) at `difficulty` (1..4).
ReasoningProblem make_reasoning_problem(text::Rng& rng, size_t family, int difficulty);

// `count` distinct problems of `split`, families and difficulties uniform, drawn from
// `seed` (problems of other splits are skipped). Fails when the split cannot supply them.
std::vector<ReasoningProblem> make_reasoning_problems(Split split, int64_t count, uint64_t seed);

// The trace cut to its first `words` words (whitespace-separated), for examples that teach
// answering after a thinking cut short.
std::string first_words(std::string_view trace, int64_t words);
int64_t count_words(std::string_view trace);

}  // namespace squeeze::train
