// train/reasoning_problems.cpp — the problem families and their traces.
#include "train/reasoning_problems.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace squeeze::train {

namespace {

// Digits or letters per step, by Effort. A model this small executes only one-digit steps
// reliably, so each level spells out one more family digit by digit: medium does sums by
// single columns (products still in pairs), high does products too.
constexpr std::array<int64_t, 4> kAdditionChunk = {3, 1, 1, 1};
constexpr std::array<int64_t, 4> kMultiplicationChunk = {3, 2, 1, 1};
constexpr std::array<int64_t, 4> kCountingChunk = {4, 3, 1, 1};

int64_t uniform_int(text::Rng& rng, int64_t lo, int64_t hi) {  // [lo, hi]
  return lo + static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(hi - lo + 1));
}

int64_t pow10(int64_t n) {
  int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

std::string padded(int64_t v, int64_t width) {
  std::string s = std::to_string(v);
  if (static_cast<int64_t>(s.size()) < width) s.insert(0, static_cast<size_t>(width - static_cast<int64_t>(s.size())), '0');
  return s;
}

// A number of exactly `digits` digits.
int64_t random_number(text::Rng& rng, int64_t digits) { return uniform_int(rng, pow10(digits - 1), pow10(digits) - 1); }

// Splits the digits of `v` into chunks of `c` from the right: chunk 0 is the lowest.
std::vector<std::string> chunks_from_right(const std::string& digits, int64_t c) {
  std::vector<std::string> out;
  for (int64_t end = static_cast<int64_t>(digits.size()); end > 0; end -= c) {
    const int64_t begin = std::max<int64_t>(0, end - c);
    out.push_back(digits.substr(static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
  }
  return out;
}

// Column arithmetic in chunks of c digits of `a` (with `b`'s chunk for an addition, times
// the digit `b` for a multiplication): one sentence per chunk, lowest first.
std::string column_steps(int64_t a, int64_t b, bool multiply, int64_t c) {
  const auto ca = chunks_from_right(std::to_string(a), c);
  const auto cb = multiply ? std::vector<std::string>{} : chunks_from_right(std::to_string(b), c);
  const char* op = multiply ? " x " : " + ";
  std::string out;
  int64_t carry = 0;
  std::vector<std::string> written;
  for (size_t i = 0; i < std::max(ca.size(), cb.size()); ++i) {
    const bool last = i + 1 == std::max(ca.size(), cb.size());
    std::string lhs;
    int64_t s = 0;
    if (multiply) {
      lhs = ca[i] + op + std::to_string(b);
      s = std::stoll(ca[i]) * b;
    } else {
      const bool has_a = i < ca.size(), has_b = i < cb.size();
      lhs = has_a && has_b ? ca[i] + op + cb[i] : has_a ? ca[i] : cb[i];
      s = (has_a ? std::stoll(ca[i]) : 0) + (has_b ? std::stoll(cb[i]) : 0);
    }
    if (carry > 0) lhs += " + " + std::to_string(carry);
    s += carry;
    const int64_t width = static_cast<int64_t>((i < ca.size() ? ca[i] : cb[i]).size());
    if (!out.empty()) out += ' ';
    if (last) {
      out += lhs + " = " + std::to_string(s) + ", write " + std::to_string(s) + ".";
      written.push_back(std::to_string(s));
    } else {
      const int64_t low = s % pow10(width);
      carry = s / pow10(width);
      out += lhs + " = " + std::to_string(s) + ", write " + padded(low, width) + ", carry " + std::to_string(carry) + ".";
      written.push_back(padded(low, width));
    }
  }
  std::string reading;
  for (auto it = written.rbegin(); it != written.rend(); ++it) reading += (reading.empty() ? "" : " ") + *it;
  out += " Written from the last: " + reading + ".";
  return out;
}

ReasoningProblem arithmetic(text::Rng& rng, int difficulty, bool multiply) {
  ReasoningProblem p;
  p.family = multiply ? "multiplication" : "addition";
  p.difficulty = difficulty;
  const int64_t n = difficulty + 1;
  const int64_t a = random_number(rng, n);
  const int64_t b = multiply ? uniform_int(rng, 2, 9) : random_number(rng, rng.uniform() < 0.6 ? n : n - 1);
  const int64_t result = multiply ? a * b : a + b;
  const std::string sa = std::to_string(a), sb = std::to_string(b), op = multiply ? " x " : " + ";
  const auto digits = [](const std::string& s) { return std::to_string(s.size()) + (s.size() == 1 ? " digit" : " digits"); };
  p.question = "What is " + sa + op + sb + "?";
  p.answer = std::to_string(result);
  for (size_t e = 0; e < 4; ++e) {
    std::string t = column_steps(a, b, multiply, multiply ? kMultiplicationChunk[e] : kAdditionChunk[e]);
    if (e == static_cast<size_t>(Effort::xhigh)) {
      t = sa + " has " + digits(sa) +
          (multiply ? "; one digit at a time from the right." : ", " + sb + " has " + digits(sb) +
                                                                    "; one column at a time from the right.") +
          " " + t + " Check: " + sa + op + sb + " = " + p.answer + ". Yes.";
    }
    t += " So " + sa + op + sb + " = " + p.answer + ".";
    p.traces[e] = t;
  }
  return p;
}

// A pronounceable made-up word of `letters` letters (consonant-vowel syllables), so the
// counting family has more distinct questions than any word list.
std::string made_up_word(text::Rng& rng, int64_t letters) {
  static constexpr std::string_view kConsonants = "bcdfghklmnprstvz", kVowels = "aeiou";
  std::string w;
  while (static_cast<int64_t>(w.size()) < letters) {
    const bool vowel = w.empty() ? rng.uniform() < 0.3 : std::string_view(kVowels).find(w.back()) == std::string_view::npos
                                                              ? rng.uniform() < 0.85
                                                              : rng.uniform() < 0.15;
    const std::string_view set = vowel ? kVowels : kConsonants;
    w += set[static_cast<size_t>(rng.next_u64() % set.size())];
  }
  return w;
}

ReasoningProblem counting(text::Rng& rng, int difficulty) {
  ReasoningProblem p;
  p.family = "counting";
  p.difficulty = difficulty;
  const int64_t length = uniform_int(rng, 2 + 3 * difficulty, 4 + 3 * difficulty);  // 5..16
  const std::string word = made_up_word(rng, length);
  char letter = 0;
  if (rng.uniform() < 0.8) {
    letter = word[static_cast<size_t>(rng.next_u64() % word.size())];
  } else {
    do letter = static_cast<char>('a' + rng.next_u64() % 26);
    while (word.find(letter) != std::string::npos);
  }
  const int64_t total = std::count(word.begin(), word.end(), letter);
  const std::string l(1, letter);
  // The word is given spelled out: counting, not spelling a made-up word from its
  // tokens, is the task.
  std::string spelled;
  for (char ch : word) spelled += std::string(spelled.empty() ? "" : " ") + ch;
  p.question = "How many times does the letter \"" + l + "\" appear in " + spelled + "?";
  p.answer = std::to_string(total);
  for (size_t e = 0; e < 4; ++e) {
    const int64_t c = kCountingChunk[e];
    std::string t;
    int64_t running = 0;
    if (e == static_cast<size_t>(Effort::xhigh)) {
      t = std::to_string(word.size()) + " letters. Count \"" + l + "\" letter by letter.";
    }
    for (size_t i = 0; i < word.size(); i += static_cast<size_t>(c)) {
      const std::string piece = word.substr(i, static_cast<size_t>(c));
      running += std::count(piece.begin(), piece.end(), letter);
      if (c == 1) {
        t += (t.empty() ? "" : t.back() == '.' ? " " : ", ") + piece + " " + std::to_string(running);
      } else {
        t += (t.empty() ? "" : " ") + piece + ": " + std::to_string(std::count(piece.begin(), piece.end(), letter)) +
             ", total " + std::to_string(running) + ".";
      }
    }
    if (c == 1) t += ".";
    if (e == static_cast<size_t>(Effort::xhigh)) {
      std::string where;
      for (size_t i = 0; i < word.size(); ++i)
        if (word[i] == letter) where += (where.empty() ? "" : ", ") + std::to_string(i + 1);
      t += where.empty() ? " Check: \"" + l + "\" is nowhere in the word." : " Check: \"" + l + "\" is letter " + where + ".";
    }
    t += " So the count is " + p.answer + ".";
    p.traces[e] = t;
  }
  return p;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

ReasoningProblem sorting(text::Rng& rng, int difficulty) {
  ReasoningProblem p;
  p.family = "sorting";
  p.difficulty = difficulty;
  const size_t n = static_cast<size_t>(difficulty) + 2;  // 3..6 numbers
  std::vector<int64_t> v;
  while (v.size() < n) {
    const int64_t x = uniform_int(rng, 10, 99);
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  }
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  p.question = "Sort " + join(v) + " from smallest to largest.";
  p.answer = join(sorted);
  // low: the order at once; medium: one pick per step; high / xhigh: each pick from what is left.
  p.traces[0] = "Smallest " + std::to_string(sorted.front()) + ", largest " + std::to_string(sorted.back()) + ".";
  std::string medium;
  for (size_t i = 0; i < n; ++i) medium += (i == 0 ? "" : i + 1 == n ? ", last " : ", then ") + std::to_string(sorted[i]);
  p.traces[1] = "First " + medium + ".";
  std::string high;
  std::vector<int64_t> left = v;
  while (left.size() > 1) {
    const auto it = std::min_element(left.begin(), left.end());
    high += (high.empty() ? "" : " ") + std::string("From ") + join(left) + " the smallest is " + std::to_string(*it) + ".";
    left.erase(it);
  }
  high += " Left: " + std::to_string(left.front()) + ".";
  p.traces[2] = high;
  std::string check;
  for (size_t i = 0; i < n; ++i) check += (i == 0 ? "" : " < ") + std::to_string(sorted[i]);
  p.traces[3] = std::to_string(n) + " numbers; take the smallest of what is left each time. " + high + " Check: " + check + ". Yes.";
  for (auto& t : p.traces) t += " So the order is " + p.answer + ".";
  return p;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

}  // namespace

Split split_of(std::string_view question) {
  const uint64_t bucket = fnv1a(question) % 100;
  return bucket < 90 ? Split::train : bucket < 95 ? Split::valid : Split::test;
}

std::optional<Split> split_from_name(std::string_view name) {
  if (name == "train") return Split::train;
  if (name == "valid") return Split::valid;
  if (name == "test") return Split::test;
  return std::nullopt;
}

ReasoningProblem make_reasoning_problem(text::Rng& rng, size_t family, int difficulty) {
  SQZ_CHECK(difficulty >= 1 && difficulty <= 4, "reasoning problems: difficulty ", difficulty, " is not in 1..4");
  switch (family) {
    case 0: return arithmetic(rng, difficulty, false);
    case 1: return arithmetic(rng, difficulty, true);
    case 2: return counting(rng, difficulty);
    case 3: return sorting(rng, difficulty);
    default: fail("reasoning problems: no family ", family);
  }
}

std::vector<ReasoningProblem> make_reasoning_problems(Split split, int64_t count, uint64_t seed) {
  SQZ_CHECK(count >= 0, "reasoning problems: count ", count, " is negative");
  text::Rng rng(seed);
  std::vector<ReasoningProblem> out;
  std::set<std::string> seen;
  // Generous: a split holds at least 5% of the questions and repeats are rare.
  const int64_t max_draws = 200 * count + 1000;
  for (int64_t draws = 0; static_cast<int64_t>(out.size()) < count; ++draws) {
    SQZ_CHECK(draws < max_draws, "reasoning problems: could not draw ", count, " distinct problems of the split");
    const size_t family = static_cast<size_t>(rng.next_u64() % kProblemFamilies.size());
    const int difficulty = 1 + static_cast<int>(rng.next_u64() % 4);
    ReasoningProblem p = make_reasoning_problem(rng, family, difficulty);
    if (split_of(p.question) != split || !seen.insert(p.question).second) continue;
    out.push_back(std::move(p));
  }
  return out;
}

int64_t count_words(std::string_view trace) {
  int64_t n = 0;
  bool in_word = false;
  for (char ch : trace) {
    const bool space = ch == ' ' || ch == '\n' || ch == '\t';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

std::string first_words(std::string_view trace, int64_t words) {
  int64_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < trace.size(); ++i) {
    const bool space = trace[i] == ' ' || trace[i] == '\n' || trace[i] == '\t';
    if (!space && !in_word && n++ == words) {
      std::string head(trace.substr(0, i));
      while (!head.empty() && (head.back() == ' ' || head.back() == '\n' || head.back() == '\t')) head.pop_back();
      return head;
    }
    in_word = !space;
  }
  return std::string(trace);
}

}  // namespace squeeze::train
