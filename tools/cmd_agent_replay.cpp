// tools/cmd_agent_replay.cpp — `squeeze agent-replay`: a recorded agent trajectory
// (screenshots and the actions taken) replayed through the model's context as an agent
// loop would build it, step by step, under each retention and reuse setting asked for, all
// in one run: tokens prefilled and wall time per step, and a check that every setting gives
// the logits of recomputing the whole context (serve/agent_context.h has the rules).
//
// Trajectory: JSON {"system": TEXT?, "steps": [{"screenshot": FILE, "text": TEXT?,
// "action": TEXT}, ...]}, screenshot paths relative to the file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "core/bounded_json.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "gguf/atomic_file.h"
#include "gguf/file_identity.h"
#include "image_inputs.h"
#include "model/model.h"
#include "model/session.h"
#include "serve/agent_context.h"
#include "generate/chat_format.h"

namespace {

using squeeze::chat::Json;
using squeeze::serve::AgentReuse;

struct TrajectoryStep {
  std::string screenshot, text, action;
};

struct Trajectory {
  std::string system;
  std::vector<TrajectoryStep> steps;
};

Trajectory read_trajectory(const std::string& path) {
  const Json j = squeeze::parse_json_or_throw<Json>(squeeze::read_whole_file(path), path);
  SQZ_CHECK(j.is_object(), path, ": not a JSON object");
  Trajectory t;
  if (j.contains("system")) {
    SQZ_CHECK(j["system"].is_string(), path, ": \"system\" must be a string");
    t.system = j["system"].get<std::string>();
  }
  SQZ_CHECK(j.contains("steps") && j["steps"].is_array() && !j["steps"].empty(), path,
            ": needs a non-empty \"steps\" list");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  for (size_t i = 0; i < j["steps"].size(); ++i) {
    const Json& s = j["steps"][i];
    const std::string where = path + ": steps[" + std::to_string(i) + "]";
    SQZ_CHECK(s.is_object() && s.contains("screenshot") && s["screenshot"].is_string(), where,
              " needs a \"screenshot\" file");
    SQZ_CHECK(s.contains("action") && s["action"].is_string(), where, " needs an \"action\" string");
    SQZ_CHECK(!s.contains("text") || s["text"].is_string(), where, ": \"text\" must be a string");
    t.steps.push_back({(dir / s["screenshot"].get<std::string>()).string(), s.value("text", std::string()),
                       s["action"].get<std::string>()});
  }
  return t;
}

AgentReuse reuse_from_name(const std::string& name) {
  for (const AgentReuse r : {AgentReuse::none, AgentReuse::prefix, AgentReuse::snapshots})
    if (name == squeeze::serve::agent_reuse_name(r)) return r;
  squeeze::fail("--reuse: '", name, "' is not none, prefix or snapshots");
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

int run_agent_replay(int argc, char** argv) {
  using namespace squeeze::cli;
  Args args("agent-replay", "agent-replay -m MODEL.gguf --mmproj PROJ.gguf TRAJECTORY.json [options]",
            "Replay a recorded agent trajectory (screenshots and actions) through the model's context,\n"
            "keeping the last --keep screenshots (older ones become a placeholder), under each reuse\n"
            "setting and eviction batch given, in one run. Per setting: tokens prefilled and wall time\n"
            "per step and in all; every setting's logits are checked against recomputing the whole\n"
            "context (bit for bit: the products run batch-invariant).");
  args.option({"-m", "--model"}, "FILE", "GGUF model with a chat template and image tokens").reads()
      .int_option({"--keep"}, "N", "screenshots kept in the context", {0, 1 << 20}, "3")
      .option({"--evict-batch"}, "B,...", "eviction batch sizes to compare (screenshots removed together)", "1")
      .option({"--reuse"}, "MODES", "reuse settings to compare: none (recompute the whole context each step),\n"
                                    "prefix (roll the cache back to the first change when the rings allow),\n"
                                    "snapshots (also ring snapshots at each screenshot)", "none,prefix,snapshots")
      .int_option({"--ctx"}, "N", "context length (0: the model's)", {0, kMaxTokens}, "0")
      .int_option({"--batch"}, "N", "prefill batch size", {1, kMaxBatch}, "64")
      .int_option({"--steps"}, "N", "replay only the first N steps (0: all)", {0, 1 << 20}, "0")
      .option({"--json"}, "OUT", "write every step's numbers as JSON").writes()
      .threads_option();
  add_image_options(args);
  if (!args.parse(argc, argv)) return 0;
  const std::string path = args.get("--model");
  SQZ_CHECK(!path.empty(), "missing -m MODEL.gguf");
  SQZ_CHECK(args.has("--mmproj"), "missing --mmproj PROJECTOR.gguf");
  const std::string trajectory_path = args.positional_at(0, "the TRAJECTORY.json");
  if (args.positional().size() > 1) squeeze::fail("unexpected extra argument '", args.positional()[1], "'");
  const squeeze::gguf::DeclaredInputs inputs({path, args.get("--mmproj"), trajectory_path});
  std::vector<int64_t> batches = parse_int_list("--evict-batch", args.get("--evict-batch"), {1, 1 << 20});
  std::vector<AgentReuse> modes;
  for (const std::string& m : split_commas(args.get("--reuse"))) modes.push_back(reuse_from_name(m));
  squeeze::set_default_thread_count(args.get_int32("--threads"));

  Trajectory trajectory = read_trajectory(trajectory_path);
  // The screenshots are inputs too: --json may not replace one, refused before the replay.
  std::vector<std::string> screenshots;
  for (const auto& step : trajectory.steps) screenshots.push_back(step.screenshot);
  const squeeze::gguf::DeclaredInputs screenshot_inputs(screenshots);
  if (args.has("--json")) squeeze::gguf::check_output_path(args.get("--json"));
  if (args.get_int("--steps") > 0 && size_t(args.get_int("--steps")) < trajectory.steps.size())
    trajectory.steps.resize(size_t(args.get_int("--steps")));
  const auto model = squeeze::model::Model::load(path);
  const squeeze::generate::ChatFormat format(*model);
  auto images = ImageInputs::from_args(args, *model);
  // Every screenshot encoded once up front (the feature cache): the replay measures the
  // language model's prefill, which is what retention and reuse change.
  std::vector<std::shared_ptr<const squeeze::vision::ImageFeatures>> shots;
  double encode_s = 0;
  for (const auto& s : trajectory.steps) {
    shots.push_back(images->file(s.screenshot));
    encode_s += shots.back()->encode_seconds;
  }
  std::fprintf(stderr, "%zu steps, %lld image tokens per screenshot (first), encoded in %.2f s in all\n",
               trajectory.steps.size(), static_cast<long long>(shots.front()->tokens), encode_s);

  const int64_t keep = args.get_int("--keep");
  Json report = {{"trajectory", trajectory_path}, {"keep", keep}, {"runs", Json::array()}};
  std::printf("| reuse | evict batch | tokens prefilled | of all prompt tokens | prefill s | mean s/step | max s/step | logits = full recompute |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const int64_t batch : batches) {
    // The full recompute of the same retention: each step's logits, to check the others.
    std::vector<std::vector<float>> reference;
    for (const AgentReuse mode : modes) {
      squeeze::model::Session session(*model, {.n_ctx = args.get_int("--ctx"), .batch = args.get_int("--batch"),
                                               .batch_invariant = true});
      squeeze::serve::AgentContext agent(session, format, images->tokens(),
                                         {.keep = keep, .batch = batch, .reuse = mode});
      agent.set_system(trajectory.system);
      int64_t prefilled = 0, total = 0;
      double seconds = 0, worst = 0;
      bool same = true;
      Json steps = Json::array();
      for (size_t i = 0; i < trajectory.steps.size(); ++i) {
        agent.observe(shots[i], trajectory.steps[i].text);
        const squeeze::serve::AgentSync s = agent.sync();
        const auto logits = agent.logits();
        if (mode == modes.front() && reference.size() <= i) reference.emplace_back(logits.begin(), logits.end());
        same = same && std::equal(logits.begin(), logits.end(), reference[i].begin(), reference[i].end());
        agent.act(trajectory.steps[i].action);
        prefilled += s.prefilled;
        total += s.prompt_tokens;
        seconds += s.seconds;
        worst = std::max(worst, s.seconds);
        steps.push_back({{"step", i + 1}, {"prompt_tokens", s.prompt_tokens}, {"first_change", s.first_change},
                         {"recompute_from", s.recompute_from}, {"prefilled", s.prefilled}, {"how", s.how},
                         {"screenshots_in_context", s.in_context}, {"snapshot_bytes", s.snapshot_bytes},
                         {"seconds", s.seconds}});
      }
      const char* name = squeeze::serve::agent_reuse_name(mode);
      std::printf("| %s | %lld | %lld | %.1f%% | %.2f | %.3f | %.3f | %s |\n", name, static_cast<long long>(batch),
                  static_cast<long long>(prefilled), 100.0 * double(prefilled) / double(total), seconds,
                  seconds / double(trajectory.steps.size()), worst,
                  mode == modes.front() ? "(the reference)" : same ? "yes, bit for bit" : "NO");
      std::fflush(stdout);
      report["runs"].push_back({{"reuse", name}, {"evict_batch", batch}, {"prefilled", prefilled},
                                {"prompt_tokens", total}, {"seconds", seconds}, {"identical_logits", same},
                                {"steps", steps}});
      SQZ_CHECK(same, "agent-replay: reuse '", name, "' gave other logits than '",
                squeeze::serve::agent_reuse_name(modes.front()), "' (a bug: please report it)");
    }
  }
  if (args.has("--json")) squeeze::gguf::write_file_atomically(args.get("--json"), report.dump(1) + "\n");
  return 0;
}

}  // namespace

SQZ_COMMAND("agent-replay", "replay an agent trajectory: screenshot retention and KV prefix reuse, measured",
            run_agent_replay);
