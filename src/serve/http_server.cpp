// serve/http_server.cpp — routes, keys, limits, SSE, metrics text, lifecycle.
#include "serve/http_server.h"

#include <httplib.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "generate/chat_format.h"
#include "serve/chat_page.h"
#include "serve/connection_guard.h"
#include "serve/embeddings_api.h"
#include "serve/engine.h"
#include "serve/openai_api.h"
#include "vision/encoder.h"

namespace squeeze::serve {

using chat::Json;

namespace {

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(dump(e.to_json()), "application/json");
}

// Equal keys compare in time that depends only on the lengths, never on where they differ.
bool keys_equal(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

// The loaded model and everything built from it; published once loading has finished.
struct Loaded {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<model::Drafter> drafter;  // before the engine, which uses it
  std::optional<generate::ChatFormat> chat;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<vision::VisionEncoder> encoder;  // with --mmproj
  std::unique_ptr<vision::FeatureCache> images;
  std::unique_ptr<ThreadPool> image_pool;
  ApiContext ctx;
};

// The routes squeeze answers; any other path is counted as "other", so a client can
// neither add series nor put text of its own into /metrics.
constexpr const char* kRoutes[] = {"/", "/health", "/v1/health", "/v1/models", "/models", "/metrics",
                                   "/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions",
                                   "/v1/embeddings", "/embeddings",
                                   "/tokenize", "/detokenize", "/apply-template"};

const char* route_label(const std::string& path) {
  for (const char* r : kRoutes)
    if (path == r) return r;
  return "other";
}

class HttpCounters {
 public:
  void count(const std::string& path, int status) {
    std::lock_guard lock(mu_);
    ++by_path_status_[{route_label(path), status}];
  }
  std::string prometheus() const {
    std::lock_guard lock(mu_);
    std::ostringstream o;
    o << "# HELP squeeze_http_requests_total HTTP requests answered, by route and status.\n"
      << "# TYPE squeeze_http_requests_total counter\n";
    for (const auto& [k, n] : by_path_status_)
      o << "squeeze_http_requests_total{path=\"" << k.first << "\",status=\"" << k.second << "\"} " << n << "\n";
    return o.str();
  }

 private:
  mutable std::mutex mu_;
  std::map<std::pair<const char*, int>, int64_t> by_path_status_;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The name in a Host header: "localhost:8080" -> "localhost", "[::1]:80" -> "::1".
std::string host_name(const std::string& host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return lower(host.substr(1, close == std::string::npos ? std::string::npos : close - 1));
  }
  return lower(host.substr(0, host.find(':')));
}

bool is_loopback_name(const std::string& name) {
  return name == "localhost" || name == "::1" || name.rfind("127.", 0) == 0;
}

// The media type of a Content-Type header, lower case, without parameters.
std::string media_type(const std::string& content_type) {
  std::string t = lower(content_type.substr(0, content_type.find(';')));
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }), t.end());
  return t;
}

std::string engine_metrics(const EngineStats& s) {
  std::ostringstream o;
  const auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << value << "\n";
  };
  metric("squeeze_slots_total", "gauge", "Sequences decoded together (--parallel).", s.slots);
  metric("squeeze_slots_busy", "gauge", "Slots running a request.", s.slots_busy);
  metric("squeeze_queue_length", "gauge", "Requests waiting for a slot.", s.queue_length);
  metric("squeeze_requests_finished_total", "counter", "Generation requests that ran to their end.", s.requests_finished);
  metric("squeeze_requests_cancelled_total", "counter", "Generation requests cancelled (client gone, shutdown).", s.requests_cancelled);
  metric("squeeze_prompt_tokens_total", "counter", "Prompt tokens of started requests.", s.prompt_tokens);
  metric("squeeze_prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache.", s.prompt_tokens_cached);
  metric("squeeze_generated_tokens_total", "counter", "Tokens sampled.", s.generated_tokens);
  metric("squeeze_steps_total", "counter", "Forward steps run.", s.steps);
  metric("squeeze_kv_cache_bytes", "gauge", "K/V storage held by all slots.", s.kv_bytes_held);
  metric("squeeze_spec_verify_steps_total", "counter", "Slot steps that verified drafts (speculative decoding).", s.spec_verify_steps);
  metric("squeeze_spec_draft_tokens_total", "counter", "Draft tokens verified.", s.spec_drafted);
  metric("squeeze_spec_accepted_tokens_total", "counter", "Draft tokens kept (the target picked them itself).", s.spec_accepted);
  o << "# HELP squeeze_time_to_first_token_seconds From queueing to the first token.\n"
    << "# TYPE squeeze_time_to_first_token_seconds summary\n"
    << "squeeze_time_to_first_token_seconds_sum " << s.ttft_sum_s << "\n"
    << "squeeze_time_to_first_token_seconds_count " << s.ttft_count << "\n"
    << "# HELP squeeze_inter_token_seconds Between consecutive tokens of a request.\n"
    << "# TYPE squeeze_inter_token_seconds summary\n"
    << "squeeze_inter_token_seconds_sum " << s.inter_token_sum_s << "\n"
    << "squeeze_inter_token_seconds_count " << s.inter_token_count << "\n";
  return o.str();
}

std::string model_id_for(const ServerParams& p) {
  if (!p.model_alias.empty()) return p.model_alias;
  return std::filesystem::path(p.model_path).filename().string();
}

class Server {
 public:
  explicit Server(const ServerParams& p) : p_(p), http_(connection_limits(p)) {}
  int run();

 private:
  void routes();
  void load();
  Loaded& loaded();  // throws ApiError 503 while loading
  void generate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  Json models_json() const;
  JsonLimits json_limits() const { return {.max_depth = p_.max_json_depth, .max_object_keys = p_.max_json_keys}; }
  // Runs a handler, turning ApiErrors and other exceptions into OpenAI error objects.
  httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> f);

  static ConnectionLimits connection_limits(const ServerParams& p);
  // Answers what must not reach a route: a foreign Host or Origin, a missing key, a body
  // too large or not JSON, anything while shutting down; true when it answered.
  bool refuse_before_body(const httplib::Request& req, httplib::Response& res);

  const ServerParams& p_;
  GuardedHttpServer http_;
  std::unique_ptr<Loaded> loaded_holder_;
  std::atomic<Loaded*> loaded_{nullptr};
  std::atomic<bool> draining_{false};
  std::atomic<int> responding_{0};  // generation responses not yet fully sent
  HttpCounters counters_;
};

httplib::Server::Handler Server::guarded(std::function<void(const httplib::Request&, httplib::Response&)> f) {
  return [f = std::move(f)](const httplib::Request& req, httplib::Response& res) {
    try {
      f(req, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, e.what()));
    }
  };
}

ConnectionLimits Server::connection_limits(const ServerParams& p) {
  // Every slot's stream, the waiting clients, and room for /health and /metrics.
  const int workers = std::max<int>(p.max_connections, static_cast<int>(2 * p.parallel) + 4);
  return {.workers = workers, .head_timeout_s = p.head_timeout_s, .body_timeout_s = p.body_timeout_s,
          .idle_timeout_s = p.idle_timeout_s, .max_body_bytes = p.max_body_bytes};
}

bool Server::refuse_before_body(const httplib::Request& req, httplib::Response& res) {
  const auto refuse = [&](int status, const std::string& message) {
    send_error(res, ApiError(status, message));
    return true;
  };
  if (draining_) {
    GuardedHttpServer::close_after_response();
    return refuse(503, "the server is shutting down");
  }
  // DNS rebinding: a page of another site whose name now resolves to 127.0.0.1 reaches a
  // loopback server with its own name in Host.
  const std::string host = req.get_header_value("Host");
  if (is_loopback_name(host_name(p_.host)) && !host.empty() && !is_loopback_name(host_name(host)))
    return refuse(403, "Host '" + host + "' is not a name of this server (it listens on " + p_.host + ")");
  // Pages of other sites may not call the API, unless --cors-origin names theirs.
  const std::string origin = req.get_header_value("Origin");
  const bool cross_origin_allowed = !p_.cors_origin.empty() && origin == p_.cors_origin;
  if (!origin.empty() && origin != "http://" + host && !cross_origin_allowed)
    return refuse(403, "requests from pages of " + origin + " are not allowed (see --cors-origin)");
  if (cross_origin_allowed) {
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
  }
  if (req.method == "OPTIONS") {  // a CORS preflight
    if (!cross_origin_allowed) return refuse(403, "no cross-origin requests are allowed (see --cors-origin)");
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    res.set_header("Access-Control-Max-Age", "600");
    return true;
  }
  const bool is_public = req.path == "/health" || req.path == "/v1/health" || req.path == "/";
  if (!p_.api_key.empty() && !is_public) {
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    const std::string key = auth.rfind(prefix, 0) == 0 ? auth.substr(prefix.size()) : std::string();
    if (auth.empty() || !keys_equal(key, p_.api_key))
      return refuse(401, auth.empty() ? "missing API key (Authorization: Bearer KEY)" : "invalid API key");
  }
  if (req.method == "POST") {
    if (req.has_header("Content-Length") &&
        std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > p_.max_body_bytes)
      return refuse(413, "the request body is larger than the server's limit of " + std::to_string(p_.max_body_bytes) +
                             " bytes (--max-body)");
    // A page can send text/plain to any site without asking first; JSON needs a preflight.
    if (media_type(req.get_header_value("Content-Type")) != "application/json")
      return refuse(415, "the request body must be sent as Content-Type: application/json");
  }
  return false;
}

Loaded& Server::loaded() {
  Loaded* l = loaded_.load();
  if (!l) throw ApiError(503, "the model is loading");
  return *l;
}

Json Server::models_json() const {
  Json entry = {{"id", model_id_for(p_)}, {"object", "model"}, {"created", 0}, {"owned_by", "squeeze"}};
  if (const Loaded* l = loaded_.load()) {
    const model::ModelConfig& c = l->model->config();
    Json caps = Json::array({"completion"});
    if (l->chat) caps.push_back("chat");
    if (l->chat && l->chat->calls_tools()) caps.push_back("tools");
    if (l->chat && l->chat->reasons()) caps.push_back("reasoning");
    if (l->ctx.images) caps.push_back("multimodal");
    entry["capabilities"] = caps;
    entry["meta"] = {{"architecture", model::arch_name(c.arch)},
                     {"n_vocab", c.n_vocab},
                     {"n_ctx_train", c.n_ctx},
                     {"n_ctx_slot", l->ctx.n_ctx},
                     {"n_embd", c.n_embd},
                     {"n_layer", c.n_layer},
                     {"size_bytes", l->model->weight_bytes()},
                     {"parallel", l->engine->parallel()}};
  }
  return {{"object", "list"}, {"data", Json::array({entry})}};
}

void Server::generate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  Loaded& l = loaded();
  if (draining_) throw ApiError(503, "the server is shutting down");
  const Json body = parse_body(req.body, json_limits());
  auto prepared = std::make_shared<PreparedRequest>(endpoint == Endpoint::chat ? prepare_chat(body, l.ctx)
                                                                               : prepare_completion(body, l.ctx));
  // n choices: one request per choice, seeded seed, seed + 1, …, sharing one prefill.
  std::vector<GenerationRequest> requests(static_cast<size_t>(prepared->n), prepared->gen);
  for (size_t i = 0; i < requests.size(); ++i) requests[i].sampling.seed += i;
  auto streams = std::make_shared<std::vector<std::shared_ptr<RequestStream>>>(
      requests.size() == 1 ? std::vector<std::shared_ptr<RequestStream>>{l.engine->submit(std::move(requests[0]))}
                           : l.engine->submit_group(std::move(requests)));
  if (streams->empty() || !streams->front()) throw ApiError(503, "the request queue is full; retry later");
  auto builders = std::make_shared<std::vector<std::unique_ptr<ResponseBuilder>>>();
  for (size_t i = 0; i < streams->size(); ++i) {
    builders->push_back(std::make_unique<ResponseBuilder>(*prepared, l.ctx));
    if (i > 0) builders->back()->as_choice(i, *builders->front());
  }
  const auto cancel_all = [streams] {
    for (auto& s : *streams) s->cancel();
  };
  const auto all_of = [builders] {
    std::vector<const ResponseBuilder*> v;
    for (const auto& b : *builders) v.push_back(b.get());
    return v;
  };

  if (!prepared->stream) {
    ++responding_;
    struct Done {
      std::atomic<int>& n;
      ~Done() { --n; }
    } done{responding_};
    for (size_t i = 0; i < streams->size(); ++i) {
      ResponseBuilder& b = *(*builders)[i];
      while (!b.finished())
        if (auto u = (*streams)[i]->pop(std::chrono::milliseconds(1000))) b.add(*u);
      if (b.finish() == FinishReason::error) {
        cancel_all();
        throw ApiError(500, "generation failed: " + b.error());
      }
      if (b.finish() == FinishReason::cancelled) {
        cancel_all();
        throw ApiError(503, "the request was cancelled (server shutting down)");
      }
    }
    res.set_content(dump(ResponseBuilder::final_object(all_of())), "application/json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  ++responding_;  // until the releaser below runs
  res.set_chunked_content_provider(
      "text/event-stream",
      [prepared, streams, builders, cancel_all, all_of](size_t, httplib::DataSink& sink) {
        const auto send = [&](const std::string& data) {
          const std::string event = "data: " + data + "\n\n";
          return sink.write(event.data(), event.size());
        };
        // The choices' updates in the order they come (one wait shared between them).
        const auto wait = std::chrono::milliseconds(streams->size() == 1 ? 200 : 10);
        for (;;) {
          bool any = false, all_done = true;
          for (size_t i = 0; i < streams->size(); ++i) {
            ResponseBuilder& b = *(*builders)[i];
            if (b.finished()) continue;
            all_done = false;
            auto u = (*streams)[i]->pop(wait);
            if (!u) continue;
            any = true;
            for (const Json& c : b.chunks(*u))
              if (!send(dump(c))) {
                cancel_all();
                return false;
              }
            if (u->finish == FinishReason::error || u->finish == FinishReason::cancelled) {
              const ApiError e(u->finish == FinishReason::error ? 500 : 503,
                               u->finish == FinishReason::error ? "generation failed: " + u->error : "the request was cancelled");
              cancel_all();
              send(dump(e.to_json()));
              send("[DONE]");
              sink.done();
              return true;
            }
          }
          if (all_done) {
            if (prepared->include_usage && streams->size() > 1) send(dump(ResponseBuilder::usage_chunk(all_of())));
            send("[DONE]");
            sink.done();
            return true;
          }
          if (!any && !sink.is_writable()) {
            cancel_all();
            return false;
          }
        }
      },
      [this, cancel_all](bool success) {
        if (!success) cancel_all();
        --responding_;
      });
}

void Server::routes() {
  http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return refuse_before_body(req, res) ? httplib::Server::HandlerResponse::Handled
                                        : httplib::Server::HandlerResponse::Unhandled;
  });
  http_.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string msg = res.status == 404 ? "no route " + req.method + " " + req.path
                            : res.status == 413 ? "the request body is larger than the server's limit"
                                                : "HTTP error " + std::to_string(res.status);
    const int status = res.status;
    send_error(res, ApiError(status, msg));
  });
  http_.set_logger([this](const httplib::Request& req, const httplib::Response& res) { counters_.count(req.path, res.status); });

  const auto health = guarded([this](const httplib::Request&, httplib::Response& res) {
    if (!loaded_.load()) throw ApiError(503, "the model is loading");
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  http_.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(chat_page_html(), "text/html; charset=utf-8"); });
  http_.Get("/health", health);
  http_.Get("/v1/health", health);
  const auto models = guarded([this](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump(models_json()), "application/json");
  });
  http_.Get("/v1/models", models);
  http_.Get("/models", models);
  http_.Get("/metrics", guarded([this](const httplib::Request&, httplib::Response& res) {
    std::string text = counters_.prometheus();
    if (const Loaded* l = loaded_.load()) text += engine_metrics(l->engine->stats());
    res.set_content(text, "text/plain; version=0.0.4");
  }));
  for (const char* path : {"/v1/chat/completions", "/chat/completions"})
    http_.Post(path, guarded([this](const httplib::Request& req, httplib::Response& res) { generate(req, res, Endpoint::chat); }));
  for (const char* path : {"/v1/completions", "/completions"})
    http_.Post(path, guarded([this](const httplib::Request& req, httplib::Response& res) { generate(req, res, Endpoint::completion); }));
  for (const char* path : {"/v1/embeddings", "/embeddings"})
    http_.Post(path, guarded([this](const httplib::Request& req, httplib::Response& res) {
      Loaded& l = loaded();
      if (draining_) throw ApiError(503, "the server is shutting down");
      const EmbeddingRequest r = prepare_embeddings(parse_body(req.body, json_limits()), l.ctx);
      std::vector<std::vector<float>> vectors;
      for (const auto& tokens : r.inputs) {
        std::optional<std::vector<float>> hidden;
        try {
          hidden = l.engine->hidden_states(tokens);
        } catch (const EngineStopping&) {
          throw ApiError(503, "the server is shutting down");
        }
        if (!hidden) throw ApiError(503, "the request queue is full; retry later");
        vectors.push_back(pool_hidden_states(*hidden, l.model->config().n_embd, r.pooling, r.normalize));
      }
      res.set_content(dump(embeddings_response(r, vectors, l.ctx)), "application/json");
    }));
  http_.Post("/tokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
    Loaded& l = loaded();
    const Json body = parse_body(req.body, json_limits());
    if (!body.contains("content") || !body["content"].is_string()) throw ApiError(400, "'content' must be a string", "content");
    const auto flag = [&](const char* name) {
      if (!body.contains(name) || body[name].is_null()) return false;
      if (!body[name].is_boolean()) throw ApiError(400, std::string("'") + name + "' must be true or false", name);
      return body[name].get<bool>();
    };
    const bool add_special = flag("add_special"), with_pieces = flag("with_pieces");
    const text::Tokenizer& tok = l.model->tokenizer();
    const auto ids = tok.encode(body["content"].get<std::string>(), {.add_special = add_special, .parse_special = true});
    Json tokens = Json::array();
    for (int32_t id : ids) {
      if (with_pieces) {
        tokens.push_back({{"id", id}, {"piece", tok.token_to_piece(id)}});
      } else {
        tokens.push_back(id);
      }
    }
    res.set_content(dump({{"tokens", tokens}}), "application/json");
  }));
  http_.Post("/detokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
    Loaded& l = loaded();
    const Json body = parse_body(req.body, json_limits());
    if (!body.contains("tokens") || !body["tokens"].is_array()) throw ApiError(400, "'tokens' must be a list of token ids", "tokens");
    const text::Tokenizer& tok = l.model->tokenizer();
    std::vector<int32_t> ids;
    for (const Json& x : body["tokens"]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= tok.n_vocab())
        throw ApiError(400, "'tokens' must hold ids in [0, " + std::to_string(tok.n_vocab()) + ")", "tokens");
      ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
    }
    res.set_content(dump({{"content", tok.decode(ids)}}), "application/json");
  }));
  http_.Post("/apply-template", guarded([this](const httplib::Request& req, httplib::Response& res) {
    Loaded& l = loaded();
    const Json body = parse_body(req.body, json_limits());
    res.set_content(dump({{"prompt", render_chat_prompt(body, l.ctx)}}), "application/json");
  }));
}

void Server::load() {
  auto l = std::make_unique<Loaded>();
  l->model = model::Model::load(p_.model_path);
  if (l->model->file().metadata().find("tokenizer.chat_template")) l->chat.emplace(*l->model);
  const model::ModelConfig& c = l->model->config();
  if (!p_.draft_path.empty()) l->drafter = model::Drafter::load(p_.draft_path, *l->model);
  const int64_t max_drafts = model::drafts_per_block(l->drafter.get(), p_.draft_block);
  l->engine = std::make_unique<Engine>(*l->model, EngineParams{.parallel = p_.parallel, .n_ctx = p_.n_ctx, .chunk = p_.chunk,
                                                               .max_queue = p_.max_queue, .kv_type = p_.kv_type,
                                                               .drafter = l->drafter.get(), .lookup = p_.lookup,
                                                               .max_drafts = max_drafts, .adaptive_drafts = !p_.draft_fixed});
  l->ctx.model = l->model.get();
  l->ctx.chat = l->chat ? &*l->chat : nullptr;
  l->ctx.model_id = model_id_for(p_);
  l->ctx.n_ctx = l->engine->n_ctx();
  l->ctx.max_tokens_limit = p_.max_tokens > 0 ? std::min(p_.max_tokens, l->ctx.n_ctx) : l->ctx.n_ctx;
  l->ctx.default_reasoning_effort = p_.reasoning_effort;
  l->ctx.json_limits = json_limits();
  l->ctx.parse_special_in_content = p_.parse_special_in_content;
  l->ctx.reasoning_budgets = generate::reasoning_budgets_from_metadata(l->model->file().metadata());
  l->ctx.vocab_trie = std::make_shared<const generate::VocabTrie>(l->model->tokenizer());
  if (!p_.mmproj_path.empty()) {
    l->ctx.image_tokens = vision::ImageTokenIds::of(l->model->tokenizer());
    l->encoder = std::make_unique<vision::VisionEncoder>(vision::load_projector_for(p_.mmproj_path, c.n_embd));
    const vision::PreprocessOptions opt =
        vision::preprocess_options_for(*l->encoder, p_.max_image_tokens, p_.resample);
    l->images = std::make_unique<vision::FeatureCache>(*l->encoder, opt);
    l->image_pool = std::make_unique<ThreadPool>();
    l->ctx.images = l->images.get();
    l->ctx.max_image_pixels = p_.max_image_pixels;
    l->ctx.image_pool = l->image_pool.get();
  }
  loaded_holder_ = std::move(l);
  loaded_ = loaded_holder_.get();
}

int Server::run() {
  // glibc gives each thread that allocates its own arena (up to 8 per core) and keeps what
  // a large request freed in it: RSS ratcheted from 186 MiB to 1.9 GiB under repeated
  // 3.5 MB requests over the worker threads. Two arenas keep it flat (docs/security.md).
  mallopt(M_ARENA_MAX, 2);
  // SIGTERM / SIGINT go to one waiting thread (blocked everywhere else, so the worker
  // threads created below inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  routes();

  // httplib's default sets SO_REUSEPORT, with which a second server binds a port another
  // already holds and the kernel splits the connections between them. SO_REUSEADDR alone
  // still lets a restarted server take its port back from connections in TIME_WAIT.
  http_.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  int port = p_.port;
  if (port == 0) {
    port = http_.bind_to_any_port(p_.host);
    SQZ_CHECK(port > 0, "serve: cannot listen on ", p_.host, " (any port)");
  } else {
    SQZ_CHECK(http_.bind_to_port(p_.host, port), "serve: cannot listen on ", p_.host, ":", port,
              " (in use, or not an address of this machine)");
  }
  std::atomic<bool> listener_returned{false};
  std::thread listener([&] {
    http_.listen_after_bind();
    listener_returned = true;
  });
  // httplib's stop() does nothing until the listener thread has entered its accept loop,
  // so a stop issued earlier (a model that fails to load at once) would leave it waiting.
  auto stop_listener = [&] {
    while (!http_.is_running() && !listener_returned) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    http_.shut_down();
    listener.join();
  };
  std::fprintf(stderr, "squeeze serve: loading %s\n", p_.model_path.c_str());

  std::atomic<bool> load_failed{false};
  std::string load_error;
  std::thread loader([&] {
    try {
      load();
      const Loaded& l = *loaded_.load();
      std::fprintf(stderr, "squeeze serve: listening on http://%s:%d  model %s  parallel %lld  ctx %lld per slot\n",
                   p_.host.c_str(), port, l.ctx.model_id.c_str(), static_cast<long long>(l.engine->parallel()),
                   static_cast<long long>(l.ctx.n_ctx));
    } catch (const std::exception& e) {
      load_error = e.what();
      load_failed = true;
      kill(getpid(), SIGTERM);
    }
  });

  int sig = 0;
  sigwait(&signals, &sig);
  loader.join();
  if (load_failed) {
    stop_listener();
    throw Error(load_error);
  }
  std::fprintf(stderr, "squeeze serve: %s, finishing running requests\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  draining_ = true;
  loaded_.load()->engine->drain();
  // The engine is idle; let the last responses reach their clients before closing.
  for (int i = 0; i < 100 && responding_ > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop_listener();
  std::fprintf(stderr, "squeeze serve: stopped\n");
  return 0;
}

}  // namespace

int run_server(const ServerParams& params) {
  Server s(params);
  return s.run();
}

}  // namespace squeeze::serve
