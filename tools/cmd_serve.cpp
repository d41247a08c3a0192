// tools/cmd_serve.cpp — `squeeze serve`: the OpenAI-compatible server (src/serve/).
#include <cstdlib>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/attention.h"
#include "serve/http_server.h"
#include "image_inputs.h"
#include "speculation.h"

namespace {

int run_serve(int argc, char** argv) {
  using namespace squeeze::cli;
  Args args("serve", "serve -m MODEL.gguf [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N] [--api-key KEY]",
            "An OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions, /v1/models,\n"
            "/health, /metrics, /tokenize, /detokenize, /apply-template. --parallel sequences are\n"
            "decoded together (continuous batching); a prompt that shares a prefix with a slot's\n"
            "cache prefills only the rest. SIGTERM / Ctrl-C: running requests finish, then it exits.\n"
            "docs/server.md has every field and limit.");
  args.option({"-m", "--model"}, "FILE", "GGUF model")
      .option({"--alias"}, "NAME", "the model id clients name (default: the file's name)")
      .option({"--host"}, "ADDR", "address to bind (127.0.0.1: this machine only)", "127.0.0.1")
      .int_option({"--port"}, "N", "TCP port (0: any free port, printed)", {0, 65535}, "8080")
      .int_option({"-np", "--parallel"}, "N", "sequences decoded together (slots)", {1, 256}, "4")
      .int_option({"-c", "--ctx"}, "N", "context per slot (0: the model's, at most 4096)", {0, kMaxTokens}, "0")
      .int_option({"--batch"}, "N", "prompt tokens per chunk (one step's prefill budget)", {1, 4096}, "64")
      .int_option({"--max-queue"}, "N", "requests waiting for a slot before 503", {0, 1 << 20}, "256")
      .int_option({"--max-tokens"}, "N", "largest max_tokens a request may ask (0: the context)", {0, kMaxTokens}, "0")
      .int_option({"--max-connections"}, "N", "HTTP worker threads = connections served at once", {1, 4096}, "64")
      .int_option({"--max-body"}, "BYTES", "largest request body (413 beyond)", {1024, int64_t{1} << 30}, "8388608")
      .int_option({"--timeout"}, "S", "idle connection / read timeout in seconds", {1, 3600}, "30")
      .option({"--api-key"}, "KEY", "require Authorization: Bearer KEY (or set SQUEEZE_API_KEY)")
      .option({"--reasoning-effort"}, "LEVEL", "default reasoning effort: low, medium, high or xhigh", "high")
      .option({"--kv"}, "TYPE", "KV cache type: f16, bf16, f32 or q8_0 (8.5 bits per value; needs head_dim % 32 == 0)", "f16")
      .threads_option();
  add_speculation_options(args);
  add_image_options(args);
  if (!args.parse(argc, argv)) return 0;
  squeeze::serve::ServerParams p;
  p.model_path = args.get("--model");
  SQZ_CHECK(!p.model_path.empty(), "missing -m MODEL.gguf");
  p.model_alias = args.get("--alias");
  p.host = args.get("--host");
  p.port = args.get_int32("--port");
  p.parallel = args.get_int("--parallel");
  p.n_ctx = args.get_int("--ctx");
  p.chunk = args.get_int("--batch");
  p.max_queue = args.get_int("--max-queue");
  p.max_tokens = args.get_int("--max-tokens");
  p.max_connections = args.get_int32("--max-connections");
  p.max_body_bytes = static_cast<size_t>(args.get_int("--max-body"));
  p.idle_timeout_s = args.get_int32("--timeout");
  p.api_key = args.get("--api-key");
  if (p.api_key.empty())
    if (const char* env = std::getenv("SQUEEZE_API_KEY")) p.api_key = env;
  p.reasoning_effort = args.get("--reasoning-effort");
  SQZ_CHECK(p.reasoning_effort == "low" || p.reasoning_effort == "medium" || p.reasoning_effort == "high" ||
                p.reasoning_effort == "xhigh",
            "--reasoning-effort must be low, medium, high or xhigh (got '", p.reasoning_effort, "')");
  p.kv_type = squeeze::kernels::cpu::kv_type_from_name(args.get("--kv"), "--kv");
  check_speculation_options(args);
  p.draft_path = args.get("--draft");
  p.lookup = args.has("--lookup");
  p.draft_block = args.get_int("--draft-block");
  p.draft_fixed = args.has("--draft-fixed");
  p.mmproj_path = args.get("--mmproj");
  SQZ_CHECK(args.has("--mmproj") || (!args.has("--max-image-tokens") && !args.has("--resample")),
            "--max-image-tokens and --resample need --mmproj");
  p.max_image_tokens = args.get_int32("--max-image-tokens");
  p.resample = args.get("--resample");
  squeeze::set_default_thread_count(args.get_int32("--threads"));
  return squeeze::serve::run_server(p);
}

}  // namespace

SQZ_COMMAND("serve", "OpenAI-compatible HTTP server with continuous batching and prefix reuse", run_serve);
