// serve/agent_context.cpp — see agent_context.h.
#include "serve/agent_context.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace squeeze::serve {

const char* agent_reuse_name(AgentReuse r) {
  switch (r) {
    case AgentReuse::none: return "none";
    case AgentReuse::prefix: return "prefix";
    case AgentReuse::snapshots: return "snapshots";
  }
  return "?";
}

int64_t evicted_screenshots(int64_t n, int64_t keep, int64_t batch) {
  SQZ_CHECK(keep >= 0 && batch >= 1, "screenshot retention: keep ", keep, ", batch ", batch);
  return std::max<int64_t>(0, n - keep) / batch * batch;
}

AgentContext::AgentContext(model::Session& session, const generate::ChatFormat& format, vision::ImageTokenIds tokens,
                           AgentParams params)
    : session_(session), format_(format), tokens_(tokens), params_(std::move(params)) {
  evicted_screenshots(0, params_.keep, params_.batch);  // checks the policy
  session_.reset();
}

void AgentContext::observe(std::shared_ptr<const vision::ImageFeatures> screenshot, std::string text) {
  SQZ_CHECK(screenshot != nullptr, "agent context: an observation without a screenshot");
  SQZ_CHECK(steps_.empty() || steps_.back().acted, "agent context: two observations without an action between them");
  steps_.push_back({std::move(screenshot), std::move(text), {}, false});
}

void AgentContext::act(std::string action) {
  SQZ_CHECK(!steps_.empty() && !steps_.back().acted, "agent context: an action without an observation before it");
  steps_.back().action = std::move(action);
  steps_.back().acted = true;
}

std::vector<int64_t> AgentContext::kept() const {
  const auto n = static_cast<int64_t>(steps_.size());
  std::vector<int64_t> out;
  for (int64_t i = evicted_screenshots(n, params_.keep, params_.batch); i < n; ++i) out.push_back(i);
  return out;
}

chat::Json AgentContext::messages() const {
  chat::Json out = chat::Json::array();
  if (!system_.empty()) out.push_back({{"role", "system"}, {"content", system_}});
  const int64_t evicted = evicted_screenshots(static_cast<int64_t>(steps_.size()), params_.keep, params_.batch);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    chat::Json parts = chat::Json::array();
    if (static_cast<int64_t>(i) < evicted) {
      parts.push_back({{"type", "text"}, {"text", params_.placeholder}});
    } else {
      parts.push_back({{"type", "image"}});
    }
    if (!s.text.empty()) parts.push_back({{"type", "text"}, {"text", (static_cast<int64_t>(i) < evicted ? "\n" : "") + s.text}});
    out.push_back({{"role", "user"}, {"content", parts}});
    if (s.acted) out.push_back({{"role", "assistant"}, {"content", s.action}});
  }
  return out;
}

AgentSync AgentContext::sync() {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = format_.tokenize(format_.render(messages(), true, nullptr, params_.template_variables));
  std::vector<std::shared_ptr<const vision::ImageFeatures>> images;
  for (const int64_t i : kept()) images.push_back(steps_[static_cast<size_t>(i)].screenshot);
  vision::PromptRows rows = vision::expand_images(ids, images, tokens_, session_.model().config().n_embd);
  const auto n = static_cast<int64_t>(rows.ids.size());
  SQZ_CHECK(n <= session_.n_ctx(), "agent context: ", n, " tokens do not fit the context of ", session_.n_ctx(),
            " (keep fewer screenshots, or fewer image tokens per screenshot)");
  SQZ_CHECK(static_cast<int64_t>(keys_.size()) == session_.position(), "agent context out of step with its session");

  AgentSync r;
  r.prompt_tokens = n;
  r.screenshots = static_cast<int64_t>(steps_.size());
  r.in_context = static_cast<int64_t>(images.size());
  // The last row always runs again: its logits are the step's answer.
  const int64_t p = std::min<int64_t>(static_cast<int64_t>(vision::common_prefix(keys_, rows.keys)), n - 1);
  const int64_t held = session_.position();
  r.first_change = p;
  int64_t start = 0;
  r.how = "from 0";
  if (params_.reuse != AgentReuse::none && p > 0) {
    if (p == held) {
      start = p;
      r.how = "extend";
    } else if (p >= session_.cache().min_truncate_position()) {
      session_.truncate(p);
      start = p;
      r.how = "rollback";
    } else if (params_.reuse == AgentReuse::snapshots) {
      const auto it = std::find_if(snapshots_.rbegin(), snapshots_.rend(),
                                   [p](const model::KvRingSnapshot& s) { return s.position > 0 && s.position <= p; });
      if (it != snapshots_.rend()) {
        session_.restore_rings(*it);
        start = it->position;
        r.how = "snapshot";
      }
    }
  }
  if (start == 0) session_.reset();
  std::erase_if(snapshots_, [start](const model::KvRingSnapshot& s) { return s.position > start; });
  keys_.resize(static_cast<size_t>(start));
  r.recompute_from = start;
  r.prefilled = n - start;

  // Prefill in segments that end at each screenshot's <|image_start|>, snapshotting the
  // rings there (an eviction later edits the context from exactly that position).
  try {
    int64_t pos = start;
    const auto run = [&](int64_t end) {
      const auto len = static_cast<size_t>(end - pos);
      const std::span<const float* const> embeddings =
          rows.embeddings.empty() ? std::span<const float* const>()
                                  : std::span<const float* const>(rows.embeddings).subspan(static_cast<size_t>(pos), len);
      logits_ = session_.forward(std::span<const int32_t>(rows.ids).subspan(static_cast<size_t>(pos), len), embeddings);
      pos = end;
    };
    if (params_.reuse == AgentReuse::snapshots)
      for (const int64_t s : rows.image_starts) {
        if (s < pos) continue;
        if (s > pos) run(s);
        if (snapshots_.empty() || snapshots_.back().position != s) snapshots_.push_back(session_.snapshot_rings());
      }
    run(n);
  } catch (...) {
    session_.reset();  // the cache's state is unknown: the next sync starts from 0
    keys_.clear();
    snapshots_.clear();
    throw;
  }
  // Only the kept screenshots' starts can be edited later: older snapshots are dropped.
  std::erase_if(snapshots_, [&rows](const model::KvRingSnapshot& s) {
    return std::find(rows.image_starts.begin(), rows.image_starts.end(), s.position) == rows.image_starts.end();
  });
  keys_ = std::move(rows.keys);
  held_ = std::move(rows.images);
  for (const auto& s : snapshots_) r.snapshot_bytes += s.bytes();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace squeeze::serve
