// serve/http_server.h — `squeeze serve`'s HTTP side on cpp-httplib: the OpenAI routes
// (/v1/chat/completions, /v1/completions, /v1/models), /health, /metrics, /tokenize,
// /detokenize, /apply-template; Bearer keys; browser safety (Host, Origin, JSON content
// type, CORS); body, JSON, deadline and connection limits (serve/connection_guard.h);
// SSE streaming with cancel-on-disconnect. The model loads after the socket is bound, so
// /health answers 503 while it loads. docs/security.md has the threat model and limits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "model/kv_cache.h"

namespace squeeze::serve {

struct ServerParams {
  std::string model_path;
  std::string model_alias;        // the id clients name; empty: the file's name
  std::string host = "127.0.0.1";
  int port = 8080;
  int64_t parallel = 4;
  int64_t n_ctx = 0;              // per slot; 0: the model's, at most 4096
  int64_t chunk = 64;
  int64_t max_queue = 256;
  int64_t max_tokens = 0;         // largest max_tokens; 0: the context
  int max_connections = 128;      // HTTP worker threads (each holds one connection)
  size_t max_body_bytes = 8u << 20;
  int max_json_depth = 64;
  int64_t max_json_keys = 4096;   // keys in one JSON object
  int idle_timeout_s = 30;        // keep-alive wait, and each read or write
  int head_timeout_s = 10;        // a request's line and headers, in all
  int body_timeout_s = 60;        // a request's body, in all
  std::string api_key;            // empty: no key required
  bool parse_special_in_content = false;  // typed control-token texts become tokens (role spoofing)
  std::string cors_origin;        // an origin (scheme://host[:port]) whose pages may call the API; empty: none
  std::string reasoning_effort = "high";
  model::KvType kv_type = model::KvType::F16;
  std::string draft_path;         // a DFlash drafter for the model (speculative decoding)
  bool lookup = false;            // prompt-lookup speculative decoding
  int64_t draft_block = 0;        // tokens per verification, the anchor included; 0: the source's
  bool draft_fixed = false;       // always draft the whole block
  std::string mmproj_path;        // a vision projector: chat messages may carry images
  int max_image_tokens = 1024;    // image tokens per image at most
  int64_t max_image_pixels = int64_t{1} << 24;  // per image, from its header, before decoding
  std::string resample = "lanczos";
};

// Binds, loads the model, serves until SIGTERM / SIGINT (then drains: running requests
// finish, new ones get 503) and returns the exit code. Errors before serving (port in use,
// bad model) are one-line squeeze::Errors.
int run_server(const ServerParams& params);

}  // namespace squeeze::serve
