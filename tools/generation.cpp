// tools/generation.cpp — the sampling options and decode loop of generate and chat.
#include "generation.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "core/error.h"

namespace squeeze::cli {

void add_sampling_options(Args& args) {
  args.real_option({"--temp"}, "T", "temperature (0: greedy)", {.min = 0}, "0.8")
      .int_option({"--top-k"}, "K", "top-k (0: off)", {0, std::numeric_limits<int32_t>::max()}, "40")
      .real_option({"--top-p"}, "P", "top-p (1: off)", {.min = 0, .max = 1, .min_open = true}, "0.95")
      .real_option({"--min-p"}, "P", "min-p (0: off)", {.min = 0, .max = 1}, "0.05")
      .real_option({"--repeat-penalty"}, "X", "repetition penalty (1: off)", {.min = 0, .min_open = true}, "1.0")
      .int_option({"--seed"}, "N", "sampling seed", {0, kMaxSeed}, "0");
}

text::SamplerParams sampler_params(const Args& args) {
  return {.temperature = static_cast<float>(args.get_double("--temp")),
          .top_k = args.get_int32("--top-k"),
          .top_p = static_cast<float>(args.get_double("--top-p")),
          .min_p = static_cast<float>(args.get_double("--min-p")),
          .repeat_penalty = static_cast<float>(args.get_double("--repeat-penalty")),
          .seed = static_cast<uint64_t>(args.get_int("--seed"))};
}

void emit_stdout(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

DecodeResult decode(model::Session& session, const text::Tokenizer& tok, text::Sampler& sampler,
                    text::StopChecker& checker, std::span<const float> logits, const DecodeParams& params,
                    const std::function<void(const std::string&)>& emit) {
  // Tokens marked unused in the vocabulary are never generated (padding of a vocabulary).
  std::vector<int32_t> banned;
  for (int32_t id = 0; id < tok.n_vocab(); ++id)
    if (tok.token_type(id) == text::TokenType::unused) banned.push_back(id);
  std::vector<float> masked;
  generate::ThinkingBudget* const thinking = params.thinking;
  auto allowed = [&](std::span<const float> l) -> std::span<const float> {
    if (banned.empty() && !(thinking && thinking->restricts())) return l;
    masked.assign(l.begin(), l.end());
    for (int32_t id : banned) masked[static_cast<size_t>(id)] = -INFINITY;
    if (thinking) thinking->mask(masked);
    return masked;
  };

  DecodeResult r;
  model::Speculator* const spec = params.speculator;
  // One token released to the output: sampler history, stop checks, streaming. False when
  // generation ends.
  const auto emit_token = [&](int32_t token) {
    const auto step = checker.push(token, tok.token_to_piece(token, {.render_control = params.render_control}));
    emit(step.text);
    return !step.stopped();
  };
  const auto emit_all = [&](const std::vector<int32_t>& tokens) {
    for (int32_t t : tokens)
      if (!emit_token(t)) return false;
    return true;
  };
  // A sampled token goes to the budget (when there is one), which may hold it back (the
  // word is unfinished) or close the thinking. Returns false when generation ends;
  // *closed tells that the caller must not run `token` (the close ran what replaces it).
  std::span<const float> close_logits;
  std::function<void()> settle;  // a speculative walk's kept rows, committed before a close rewinds
  const auto take = [&](int32_t token, bool* closed) {
    sampler.accept(token);
    ++r.generated;
    *closed = false;
    if (!thinking) return emit_token(token);
    generate::ThinkingBudget::Step step = thinking->push(token);
    if (!emit_all(step.emit)) return false;
    if (!step.close) return true;
    *closed = true;
    if (settle) settle();
    r.generated -= step.take_back + 1;  // the unfinished word and the sampled token are gone
    const int64_t pos = session.position() - step.take_back;
    if (spec) SQZ_CHECK(spec->rewind(pos), "thinking budget: cannot take ", step.take_back, " tokens back");
    else session.truncate(pos);
    if (params.forwarded) params.forwarded->resize(params.forwarded->size() - static_cast<size_t>(step.take_back));
    r.generated += static_cast<int64_t>(step.force.size());
    for (int32_t t : step.force) sampler.accept(t);
    if (!emit_all(step.force)) return false;
    SQZ_CHECK(session.position() + static_cast<int64_t>(step.force.size()) <= session.n_ctx(),
              "thinking budget: no room in the context to close the thinking");
    close_logits = spec ? spec->prefill(step.force) : session.forward(step.force);
    if (params.forwarded) params.forwarded->insert(params.forwarded->end(), step.force.begin(), step.force.end());
    return true;
  };
  std::optional<int32_t> next_sampled;  // the target's pick from the last verified row
  while (r.generated < params.n_predict) {
    if (params.interrupt && params.interrupt->load()) {
      r.interrupted = true;
      break;
    }
    const int32_t next = next_sampled ? *next_sampled : sampler.sample(allowed(logits));
    next_sampled.reset();
    bool closed = false;
    if (!take(next, &closed)) break;
    if (closed) {
      logits = close_logits;
      continue;
    }
    // `next` came from the logits of the last cached position; it can be run only while
    // the cache has room, so generation ends with the context exactly full (n_ctx
    // positions cached, plus this last token sampled from them).
    if (session.position() >= session.n_ctx()) {
      r.context_full = true;
      break;
    }
    if (!spec) {
      logits = session.forward(std::span<const int32_t>(&next, 1));
      if (params.forwarded) params.forwarded->push_back(next);
      continue;
    }
    // Draft, verify [next, drafts…] in one step, and walk the rows: row i is the target's
    // distribution after next, d_1 … d_i; draft d_{i+1} stays while the sampler picks it.
    const int64_t room = std::min(params.n_predict - r.generated, session.n_ctx() - session.position() - 1);
    const std::vector<int32_t> drafts = spec->draft(next, room);
    const auto rows = spec->verify(next, drafts);
    const size_t V = static_cast<size_t>(tok.n_vocab());
    int64_t kept = 1;  // rows whose tokens stay in the cache: next and the drafts kept
    bool going = true, settled = false;
    const auto commit_walk = [&] {
      spec->commit(kept);
      if (params.forwarded) {
        params.forwarded->push_back(next);
        params.forwarded->insert(params.forwarded->end(), drafts.begin(), drafts.begin() + (kept - 1));
      }
      settled = true;
    };
    if (thinking) settle = commit_walk;  // only a budget's close rewinds mid-walk
    for (size_t i = 0; i <= drafts.size(); ++i) {
      const int32_t y = sampler.sample(allowed(rows.subspan(i * V, V)));
      if (i == drafts.size() || y != drafts[i]) {  // the target's own token: sampled, not yet run
        next_sampled = y;
        break;
      }
      if (r.generated >= params.n_predict) {
        going = false;
        break;
      }
      if (params.interrupt && params.interrupt->load()) {
        r.interrupted = true;
        going = false;
        break;
      }
      bool closed_here = false;
      going = take(y, &closed_here);  // false: a stop, sampled, not run, as in a plain step
      if (closed_here) {  // the walk's rows were settled, the close ran its tokens
        logits = close_logits;
        break;
      }
      if (!going) break;
      ++kept;
    }
    settle = nullptr;
    if (!settled) commit_walk();
    if (!going) break;
  }
  if (thinking && checker.reason() == text::StopReason::none) emit_all(thinking->finish());  // a word cut by -n
  if (checker.reason() == text::StopReason::none) emit(checker.finish());
  return r;
}

}  // namespace squeeze::cli
