// generate/decode.cpp — a Sequence driven over a Session (and a Speculator).
#include "generate/decode.h"

#include "core/error.h"

namespace squeeze::generate {

DecodeResult decode(model::Session& session, Sequence& seq, std::span<const float> logits,
                    const DecodeParams& params, const std::function<void(const std::string&)>& emit) {
  SQZ_CHECK(seq.position() == session.position(), "decode: the sequence is out of step with its session");
  DecodeResult r;
  model::Speculator* const spec = params.speculator;
  std::vector<int32_t> run, drafts;
  if (!seq.finished()) emit(seq.advance(logits, {}).text);
  while (!seq.finished()) {
    if (params.interrupt && params.interrupt->load()) {
      r.interrupted = true;
      break;
    }
    run = seq.feed();
    drafts.clear();
    std::span<const float> rows;
    const bool verifying = spec && run.size() == 1;
    if (verifying) {
      drafts = spec->draft(run[0], seq.draft_room());
      rows = spec->verify(run[0], drafts);
    } else {
      rows = spec ? spec->prefill(run) : session.forward(run);
    }
    const Sequence::Step step = seq.advance(rows, drafts);
    if (verifying) spec->commit(step.keep);
    if (params.forwarded) {
      run.insert(run.end(), drafts.begin(), drafts.end());
      params.forwarded->insert(params.forwarded->end(), run.begin(), run.begin() + step.keep);
    }
    if (step.take_back > 0) {  // a forced close: the unfinished word leaves the cache
      const int64_t pos = session.position() - step.take_back;
      if (spec) SQZ_CHECK(spec->rewind(pos), "thinking budget: cannot take ", step.take_back, " tokens back");
      else session.truncate(pos);
      if (params.forwarded) params.forwarded->resize(params.forwarded->size() - static_cast<size_t>(step.take_back));
    }
    emit(step.text);
  }
  emit(seq.flush());
  r.generated = seq.n_tokens();
  r.context_full = seq.finish_reason() == Finish::context_full;
  return r;
}

}  // namespace squeeze::generate
