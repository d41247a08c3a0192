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
      .int_option({"--max-connections"}, "N",
                  "HTTP worker threads = connections served at once (when all are busy, the one idle longest is closed)",
                  {1, 4096}, "128")
      .int_option({"--max-body"}, "BYTES", "largest request body (413 beyond, before it is read)", {1024, int64_t{1} << 30},
                  "8388608")
      .int_option({"--max-json-depth"}, "N", "deepest JSON nesting in a request, also inside strings (400 beyond)", {2, 512},
                  "64")
      .int_option({"--max-json-keys"}, "N", "most keys in one JSON object of a request (400 beyond)", {16, 1 << 20}, "4096")
      .int_option({"--timeout"}, "S", "keep-alive wait between requests, and each read or write, in seconds", {1, 3600}, "30")
      .int_option({"--head-timeout"}, "S", "a request's line and headers must arrive within S seconds", {1, 3600}, "10")
      .int_option({"--body-timeout"}, "S", "a request's body must arrive within S seconds", {1, 3600}, "60")
      .option({"--api-key"}, "KEY", "require Authorization: Bearer KEY (or set SQUEEZE_API_KEY); must not be empty")
      .int_option({"--max-image-pixels"}, "N", "largest image a request may send, in pixels, checked before decoding",
                  {1, int64_t{1} << 26}, "16777216")
      .flag({"--parse-special-in-content"},
            "tokenize control-token texts typed in messages (e.g. <|im_end|>) as the tokens, as transformers and "
            "llama-server do (default: they stay text, so a user cannot speak as another role)")
      .option({"--cors-origin"}, "ORIGIN",
              "let pages of ORIGIN (e.g. https://app.example.com) call the API from a browser (default: none)")
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
  p.max_json_depth = args.get_int32("--max-json-depth");
  p.max_json_keys = args.get_int("--max-json-keys");
  p.idle_timeout_s = args.get_int32("--timeout");
  p.head_timeout_s = args.get_int32("--head-timeout");
  p.body_timeout_s = args.get_int32("--body-timeout");
  // An empty key would silently turn authentication off.
  if (args.has("--api-key")) {
    p.api_key = args.get("--api-key");
    SQZ_CHECK(!p.api_key.empty(), "--api-key must not be empty (leave it out to serve without a key)");
  } else if (const char* env = std::getenv("SQUEEZE_API_KEY")) {
    p.api_key = env;
    SQZ_CHECK(!p.api_key.empty(), "SQUEEZE_API_KEY is set but empty (unset it to serve without a key)");
  }
  p.parse_special_in_content = args.has("--parse-special-in-content");
  p.cors_origin = args.get("--cors-origin");
  SQZ_CHECK(p.cors_origin.empty() || ((p.cors_origin.rfind("http://", 0) == 0 || p.cors_origin.rfind("https://", 0) == 0) &&
                                      p.cors_origin.find('/', p.cors_origin.find("//") + 2) == std::string::npos),
            "--cors-origin must be an origin, scheme://host[:port] with no path (got '", p.cors_origin, "')");
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
  p.max_image_pixels = args.get_int("--max-image-pixels");
  p.resample = args.get("--resample");
  squeeze::set_default_thread_count(args.get_int32("--threads"));
  return squeeze::serve::run_server(p);
}

}  // namespace

SQZ_COMMAND("serve", "OpenAI-compatible HTTP server with continuous batching and prefix reuse", run_serve);
