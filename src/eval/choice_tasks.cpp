// eval/choice_tasks.cpp — see choice_tasks.h.
#include "eval/choice_tasks.h"

#include <algorithm>

#include "core/error.h"
#include "eval/log_probs.h"
#include "model/session.h"
#include "text/rng.h"

namespace squeeze::eval {

namespace {

constexpr int kCandidates = 4;

struct Verse {
  std::string previous;            // the verse before it in the same book ("" at a book's start)
  std::vector<std::string> words;  // split on spaces
};

std::vector<Verse> read_verses(std::string_view text) {
  std::vector<Verse> out;
  std::string previous;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      previous.clear();  // a blank line separates documents
      continue;
    }
    Verse v{.previous = previous, .words = {}};
    size_t w = 0;
    while (w < line.size()) {
      const size_t e = std::min(line.find(' ', w), line.size());
      if (e > w) v.words.emplace_back(line.substr(w, e - w));
      w = e + 1;
    }
    out.push_back(std::move(v));
    previous = std::string(line);
  }
  return out;
}

std::string join(const std::vector<std::string>& words, size_t from, size_t to) {
  std::string s;
  for (size_t i = from; i < to; ++i) s += (i > from ? " " : "") + words[i];
  return s;
}

// The last word without its trailing punctuation ("earth." → "earth").
std::string last_word(const Verse& v) {
  std::string w = v.words.back();
  while (!w.empty() && std::string_view(".,;:?!'\")").find(w.back()) != std::string_view::npos) w.pop_back();
  return w;
}

std::string context_prefix(const Verse& v) { return v.previous.empty() ? std::string() : v.previous + "\n"; }

}  // namespace

const char* task_name(ChoiceTask task) { return task == ChoiceTask::next_word ? "next-word" : "verse-ending"; }

std::vector<ChoiceItem> make_choice_items(ChoiceTask task, std::string_view text, int64_t n, uint64_t seed) {
  SQZ_CHECK(n > 0, "choice tasks: the number of items must be positive");
  const size_t min_words = task == ChoiceTask::next_word ? 4 : 6;
  std::vector<Verse> verses;
  for (auto& v : read_verses(text))
    if (v.words.size() >= min_words && (task != ChoiceTask::next_word || !last_word(v).empty())) verses.push_back(std::move(v));
  SQZ_CHECK(verses.size() >= 2 * kCandidates, "choice tasks: the text has ", verses.size(), " lines of at least ",
            min_words, " words, too few for ", task_name(task), " items");
  text::Rng rng(seed);
  auto pick = [&](size_t bound) { return static_cast<size_t>(rng.next_u64() % bound); };
  // The items' verses: a seeded shuffle, first n.
  std::vector<size_t> order(verses.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[pick(i)]);
  order.resize(std::min(order.size(), static_cast<size_t>(n)));

  auto continuation = [task](const Verse& v) {
    return task == ChoiceTask::next_word ? " " + last_word(v) : " " + join(v.words, v.words.size() / 2, v.words.size());
  };
  std::vector<ChoiceItem> items;
  for (size_t idx : order) {
    const Verse& v = verses[idx];
    ChoiceItem item;
    item.context = context_prefix(v) +
                   (task == ChoiceTask::next_word ? join(v.words, 0, v.words.size() - 1) : join(v.words, 0, v.words.size() / 2));
    item.candidates.push_back(continuation(v));
    for (int guard = 0; static_cast<int>(item.candidates.size()) < kCandidates; ++guard) {
      SQZ_CHECK(guard < 10000, "choice tasks: cannot find ", kCandidates - 1, " distinct distractors");
      const std::string c = continuation(verses[pick(verses.size())]);
      if (std::find(item.candidates.begin(), item.candidates.end(), c) == item.candidates.end()) item.candidates.push_back(c);
    }
    item.answer = static_cast<int32_t>(pick(kCandidates));
    std::swap(item.candidates[0], item.candidates[static_cast<size_t>(item.answer)]);
    items.push_back(std::move(item));
  }
  return items;
}

ChoiceResult score_choice_items(const model::Model& model, ChoiceTask task, const std::vector<ChoiceItem>& items) {
  const int64_t n_ctx = model.config().n_ctx;
  model::Session session(model, {.n_ctx = n_ctx, .batch = std::min<int64_t>(n_ctx, 256)});
  const auto& tok = model.tokenizer();
  const int64_t V = model.config().n_vocab;
  ChoiceResult result;
  std::vector<double> lp;
  for (const ChoiceItem& item : items) {
    const std::vector<int32_t> ctx = tok.encode(item.context, {.add_special = false});
    double best = -INFINITY;
    int32_t chosen = -1;
    for (size_t c = 0; c < item.candidates.size(); ++c) {
      const std::vector<int32_t> cand = tok.encode(item.candidates[c], {.add_special = false});
      SQZ_CHECK(!cand.empty() && static_cast<int64_t>(cand.size()) < n_ctx, "choice tasks: a candidate of ", cand.size(),
                " tokens does not fit a context of ", n_ctx);
      // The context's tail that fits in front of the candidate (contexts are a verse and a
      // half: this only cuts into the previous verse).
      const size_t keep = std::min(ctx.size(), static_cast<size_t>(n_ctx) - cand.size());
      SQZ_CHECK(keep > 0, "choice tasks: an empty context");
      std::vector<int32_t> seq(ctx.end() - static_cast<ptrdiff_t>(keep), ctx.end());
      seq.insert(seq.end(), cand.begin(), cand.end());
      session.reset();
      const std::span<const float> logits = session.forward(seq, /*all_logits=*/true);
      double score = 0;
      for (size_t i = 0; i < cand.size(); ++i) {
        log_softmax(logits.subspan((keep - 1 + i) * static_cast<size_t>(V), static_cast<size_t>(V)), lp);
        score += lp[static_cast<size_t>(cand[i])];
      }
      if (task == ChoiceTask::verse_ending) score /= static_cast<double>(item.candidates[c].size());
      if (score > best) best = score, chosen = static_cast<int32_t>(c);
    }
    ++result.items;
    result.correct += chosen == item.answer;
  }
  return result;
}

}  // namespace squeeze::eval
