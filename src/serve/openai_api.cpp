// serve/openai_api.cpp — request checking and response objects (OpenAI's API reference
// for the shapes; llama-server's extras top_k, min_p, repeat_penalty).
#include "serve/openai_api.h"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>

#include "core/error.h"
#include "generate/content_literals.h"
#include "serve/data_url.h"
#include "serve/constrained_output.h"

namespace squeeze::serve {

using chat::Json;

namespace {

constexpr int kMaxStops = 16;
constexpr int kMaxTopLogprobs = 20;
constexpr int64_t kMaxChoices = 16;  // n: choices of one request

ApiError bad(const std::string& param, const std::string& message) { return ApiError(400, message, param); }

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += digits[rng() % 62];
  return id;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Optional typed fields: absent or null gives the default; a wrong type or range is a 400.
double number_field(const Json& body, const char* key, double def, double lo, double hi) {
  if (!body.contains(key) || body[key].is_null()) return def;
  const Json& v = body[key];
  if (!v.is_number()) throw bad(key, std::string("'") + key + "' must be a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    throw bad(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

int64_t int_field(const Json& body, const char* key, int64_t def, int64_t lo, int64_t hi) {
  if (!body.contains(key) || body[key].is_null()) return def;
  const Json& v = body[key];
  if (!v.is_number_integer()) throw bad(key, std::string("'") + key + "' must be an integer");
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
  if (x < lo || x > hi)
    throw bad(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                       std::to_string(x));
  return x;
}

bool bool_field(const Json& body, const char* key, bool def) {
  if (!body.contains(key) || body[key].is_null()) return def;
  if (!body[key].is_boolean()) throw bad(key, std::string("'") + key + "' must be a boolean");
  return body[key].get<bool>();
}

void check_model(const Json& body, const ApiContext& ctx) {
  if (!body.contains("model") || body["model"].is_null()) return;
  if (!body["model"].is_string()) throw bad("model", "'model' must be a string");
  const std::string m = body["model"].get<std::string>();
  if (m != ctx.model_id)
    throw ApiError(404, "the model '" + m + "' does not exist; this server serves '" + ctx.model_id + "'", "model",
                   "model_not_found");
}

bool present(const Json& body, const char* key) { return body.contains(key) && !body[key].is_null(); }

// Fields of OpenAI's and llama-server's APIs that would change the answer in a way squeeze
// does not implement: a 400 naming them rather than an answer that silently ignores them
// (docs/server.md lists every field). Each is refused only away from its neutral value.
void refuse_unsupported_fields(const Json& body) {
  const auto number_above = [&](const char* key, double neutral) {
    return present(body, key) && (!body[key].is_number() || body[key].get<double>() > neutral);
  };
  if (present(body, "echo") && body["echo"] != false) throw bad("echo", "'echo' is not supported");
  if (present(body, "suffix") && body["suffix"] != "") throw bad("suffix", "'suffix' (insertion) is not supported");
  if (number_above("best_of", 1)) throw bad("best_of", "'best_of' is not supported; 'n' gives independent samples");
  for (const char* key : {"functions", "function_call"})
    if (present(body, key)) throw bad(key, std::string("'") + key + "' (deprecated) is not supported; use 'tools' and 'tool_choice'");
  if (present(body, "audio")) throw bad("audio", "audio output is not supported");
  if (present(body, "web_search_options")) throw bad("web_search_options", "web search is not supported");
  if (present(body, "modalities") && body["modalities"] != Json::array({"text"}))
    throw bad("modalities", "only the \"text\" modality is supported");
  if (present(body, "grammar")) throw bad("grammar", "GBNF 'grammar' is not supported; use response_format json_schema");
  if (present(body, "samplers")) throw bad("samplers", "a custom sampler order is not supported");
  if (present(body, "n_probs")) throw bad("n_probs", "'n_probs' is not supported; use logprobs / top_logprobs");
  if (present(body, "typical_p") && (!body["typical_p"].is_number() || body["typical_p"].get<double>() < 1))
    throw bad("typical_p", "typical sampling is not supported");
  for (const char* key : {"mirostat", "dynatemp_range", "xtc_probability", "dry_multiplier", "top_n_sigma"})
    if (number_above(key, 0)) throw bad(key, std::string("'") + key + "' is not supported");
}

// The fields chat and completions share: sampling, stops, limits, streaming.
void common_fields(const Json& body, const ApiContext& ctx, PreparedRequest& r) {
  check_model(body, ctx);
  refuse_unsupported_fields(body);
  r.n = static_cast<int>(int_field(body, "n", 1, 1, kMaxChoices));
  text::SamplerParams& s = r.gen.sampling;
  s.temperature = static_cast<float>(number_field(body, "temperature", 0.8, 0.0, 2.0));
  s.top_p = static_cast<float>(number_field(body, "top_p", 0.95, 0.0, 1.0));
  s.top_k = static_cast<int32_t>(int_field(body, "top_k", 40, 0, 1 << 30));
  s.min_p = static_cast<float>(number_field(body, "min_p", 0.05, 0.0, 1.0));
  s.presence_penalty = static_cast<float>(number_field(body, "presence_penalty", 0.0, -2.0, 2.0));
  s.frequency_penalty = static_cast<float>(number_field(body, "frequency_penalty", 0.0, -2.0, 2.0));
  s.repeat_penalty = static_cast<float>(number_field(body, "repeat_penalty", 1.0, 0.01, 10.0));
  // OpenAI's penalties count every generated token so far; llama-server's repeat_last_n a window.
  s.penalty_last_n = static_cast<int32_t>(int_field(body, "repeat_last_n", -1, -1, 1 << 30));
  if (body.contains("seed") && !body["seed"].is_null()) {
    if (!body["seed"].is_number_integer()) throw bad("seed", "'seed' must be an integer");
    s.seed = body["seed"].is_number_unsigned() ? body["seed"].get<uint64_t>() : static_cast<uint64_t>(body["seed"].get<int64_t>());
  } else {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    s.seed = rng();
  }
  if (body.contains("stop") && !body["stop"].is_null()) {
    const Json& st = body["stop"];
    std::vector<std::string> stops;
    if (st.is_string()) {
      stops.push_back(st.get<std::string>());
    } else if (st.is_array()) {
      if (st.size() > kMaxStops) throw bad("stop", "at most " + std::to_string(kMaxStops) + " stop strings");
      for (const Json& x : st) {
        if (!x.is_string()) throw bad("stop", "'stop' must be a string or a list of strings");
        stops.push_back(x.get<std::string>());
      }
    } else {
      throw bad("stop", "'stop' must be a string or a list of strings");
    }
    for (const auto& x : stops)
      if (x.empty()) throw bad("stop", "stop strings must not be empty");
    r.gen.stop_strings = std::move(stops);
  }
  if (body.contains("logit_bias") && !body["logit_bias"].is_null()) {
    const Json& lb = body["logit_bias"];
    if (!lb.is_object()) throw bad("logit_bias", "'logit_bias' must be an object of token id -> bias");
    const int64_t n_vocab = ctx.model->tokenizer().n_vocab();
    for (auto it = lb.begin(); it != lb.end(); ++it) {
      char* end = nullptr;
      const long long id = std::strtoll(it.key().c_str(), &end, 10);
      if (it.key().empty() || *end != '\0' || id < 0 || id >= n_vocab)
        throw bad("logit_bias", "'logit_bias' keys must be token ids in [0, " + std::to_string(n_vocab) + ")");
      if (!it.value().is_number() || it.value().get<double>() < -100.0 || it.value().get<double>() > 100.0)
        throw bad("logit_bias", "'logit_bias' values must be numbers in [-100, 100]");
      r.gen.logit_bias.emplace_back(static_cast<int32_t>(id), it.value().get<float>());
    }
  }
  r.stream = bool_field(body, "stream", false);
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    if (!body["stream_options"].is_object()) throw bad("stream_options", "'stream_options' must be an object");
    r.include_usage = bool_field(body["stream_options"], "include_usage", false);
  }
  const int64_t room = ctx.n_ctx - static_cast<int64_t>(r.gen.prompt.size());
  if (room < 0)
    throw bad(r.endpoint == Endpoint::chat ? "messages" : "prompt", "the prompt is " + std::to_string(r.gen.prompt.size()) + " tokens, " + std::to_string(-room) +
                              " more than the context of " + std::to_string(ctx.n_ctx) + " tokens");
  const char* key = present(body, "max_completion_tokens") ? "max_completion_tokens"
                    : present(body, "max_tokens") || !present(body, "n_predict") ? "max_tokens"
                                                                                  : "n_predict";  // llama-server's
  if (key == std::string("n_predict") && body["n_predict"] == -1) key = "max_tokens";  // -1: unlimited, as unset
  const int64_t asked = int_field(body, key, -1, 1, ctx.max_tokens_limit);
  // Unset: up to the context's end (finish_reason "length" there); the context bounds any value.
  r.gen.max_tokens = asked > 0 ? asked : ctx.max_tokens_limit;
}

using ImageList = std::vector<std::shared_ptr<const vision::ImageFeatures>>;

// An image part's data, with what its header says it will cost, not yet decoded.
struct PendingImage {
  std::vector<uint8_t> bytes;
  std::string where;
  int64_t tokens = 0;
};
using PendingImages = std::vector<PendingImage>;

// An image part's data: URL, checked and sized from its header (into *pending when given).
void take_image(const Json& part, const std::string& type, const std::string& where, const ApiContext& ctx,
                PendingImages* pending) {
  if (!ctx.images)
    throw bad(where, where + ": this server takes no images (start it with --mmproj PROJECTOR.gguf)");
  // Chat Completions: {"type": "image_url", "image_url": {"url": ...}}; also the url as a string,
  // and the Responses API's {"type": "input_image", "image_url": "..."}.
  const Json* url = nullptr;
  if (part.contains("image_url")) {
    const Json& u = part["image_url"];
    url = u.is_object() && u.contains("url") ? &u["url"] : &u;
  }
  if (url == nullptr || !url->is_string())
    throw bad(where, where + ": an " + type + " part needs image_url.url (a data: URL)");
  std::string why;
  auto data = parse_data_url(url->get<std::string>(), &why);
  if (!data) throw bad(where, where + ": " + why);
  if (!pending) return;
  // What the image will cost, from its header: a small file can declare 8192 x 8192
  // pixels (seconds and hundreds of MB to decode and resize).
  const auto size = vision::declared_image_size(data->bytes.data(), data->bytes.size());
  if (!size || size->width <= 0 || size->height <= 0) throw bad(where, where + ": the image is not a PNG or JPEG");
  if (size->width > ctx.max_image_pixels / size->height)  // w * h may overflow (PNG: up to 2^32 - 1 each)
    throw bad(where, where + ": an image of " + std::to_string(size->width) + " x " + std::to_string(size->height) +
                         " pixels is past the server's limit of " + std::to_string(ctx.max_image_pixels) +
                         " pixels (--max-image-pixels)");
  pending->push_back({std::move(data->bytes), where, ctx.images->tokens_for(size->width, size->height)});
}

// The request's images decoded and encoded (or found in the cache), once their tokens
// together are known to fit the context.
void encode_images(PendingImages& pending, const ApiContext& ctx, ImageList& images) {
  int64_t tokens = 0;
  for (const PendingImage& p : pending) tokens += p.tokens;
  if (tokens > ctx.n_ctx)
    throw bad("messages", "the request's images need " + std::to_string(tokens) + " image tokens, more than the context of " +
                              std::to_string(ctx.n_ctx) + " tokens");
  for (PendingImage& p : pending) {
    try {
      images.push_back(ctx.images->get(p.bytes, p.where + " image", ctx.image_pool));
    } catch (const Error& e) {
      throw bad(p.where, e.what());
    }
  }
}

// A message's content as the template reads it: a string, or (with images) parts of
// {"type": "text", "text"} and {"type": "image"} in their order.
Json template_content(const Json& content, const std::string& where, const ApiContext& ctx, PendingImages* images,
                      generate::ContentLiterals* literals) {
  const auto text_of = [&](const Json& s) {
    return literals ? literals->protect(s.get<std::string>()) : s.get<std::string>();
  };
  if (content.is_null()) return std::string();
  if (content.is_string()) return text_of(content);
  if (!content.is_array()) throw bad(where, where + ": content must be a string or a list of parts");
  std::string text;
  Json parts = Json::array();
  bool has_image = false;
  for (const Json& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      throw bad(where, where + ": each content part needs a 'type'");
    const std::string type = part["type"].get<std::string>();
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string()) throw bad(where, where + ": a text part needs 'text'");
      const std::string t = text_of(part["text"]);
      text += t;
      parts.push_back({{"type", "text"}, {"text", t}});
    } else if (type == "image_url" || type == "input_image" || type == "image") {
      take_image(part, type, where, ctx, images);
      parts.push_back({{"type", "image"}});
      has_image = true;
    } else {
      throw bad(where, where + ": content parts of type '" + type + "' are not supported");
    }
  }
  return has_image ? parts : Json(text);
}

// OpenAI messages → what the template reads: content flattened to text, tool-call
// arguments (JSON strings on the wire) decoded to objects, reasoning_content kept (under
// harmony also as `thinking`, what gpt-oss's template reads). Content of user, tool and
// assistant messages goes through `literals` (when given): the control-token texts it spells
// stay text. System messages are the operator's.
Json template_messages(const Json& body, const ApiContext& ctx, PendingImages* images, generate::ContentLiterals* literals) {
  if (!body.contains("messages")) throw bad("messages", "'messages' is required");
  const Json& in = body["messages"];
  if (!in.is_array() || in.empty()) throw bad("messages", "'messages' must be a non-empty list");
  Json out = Json::array();
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const Json& m = in[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) throw bad(where, where + " needs a string 'role'");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      throw bad(where, where + ": unknown role '" + role + "'");
    generate::ContentLiterals* lit = role == "system" ? nullptr : literals;
    Json t = {{"role", role}, {"content", template_content(m.contains("content") ? m["content"] : Json(), where, ctx, images, lit)}};
    if (role == "assistant") {
      if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
        t["reasoning_content"] = lit ? lit->protect(m["reasoning_content"].get<std::string>()) : m["reasoning_content"].get<std::string>();
      if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
        if (!m["tool_calls"].is_array()) throw bad(where, where + ": 'tool_calls' must be a list");
        Json calls = Json::array();
        for (const Json& c : m["tool_calls"]) {
          if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
              !c["function"]["name"].is_string())
            throw bad(where, where + ": each tool call needs function.name");
          Json args = Json::object();
          if (c["function"].contains("arguments")) {
            const Json& a = c["function"]["arguments"];
            if (a.is_string()) {
              BoundedJson<Json> parsed = parse_json_bounded<Json>(a.get<std::string>(), ctx.json_limits);
              if (!parsed.error.empty()) throw bad(where, where + ": tool call arguments: " + parsed.error);
              if (!parsed.value.is_object())
                throw bad(where, where + ": tool call arguments must be a JSON object (as a string)");
              args = std::move(parsed.value);
            } else if (a.is_object()) {
              args = a;
            }
          }
          Json call = {{"type", "function"}, {"function", {{"name", c["function"]["name"]}, {"arguments", args}}}};
          if (c.contains("id") && c["id"].is_string()) call["id"] = c["id"];
          calls.push_back(call);
        }
        t["tool_calls"] = calls;
      }
      // gpt-oss's template reads the reasoning as `thinking`; beside a call it takes the
      // thinking or the content, never both (the content, when there is one, stays).
      if (ctx.chat && ctx.chat->framing() == generate::OutputFraming::harmony && t.contains("reasoning_content") &&
          !(t.contains("tool_calls") && t["content"].is_string() && !t["content"].get<std::string>().empty()))
        t["thinking"] = t["reasoning_content"];
    }
    if (role == "tool") {
      if (m.contains("tool_call_id") && m["tool_call_id"].is_string()) t["tool_call_id"] = m["tool_call_id"];
      if (m.contains("name") && m["name"].is_string()) t["name"] = m["name"];
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace

ApiError::ApiError(int status_, std::string message, std::string param_, std::string type_)
    : std::runtime_error(std::move(message)), status(status_), param(std::move(param_)), type(std::move(type_)) {
  if (type.empty()) {
    type = status == 401 ? "authentication_error"
           : status == 404 ? "not_found_error"
           : status == 503 ? "unavailable_error"
           : status >= 500 ? "server_error"
                           : "invalid_request_error";
  }
}

Json ApiError::to_json() const {
  return {{"error", {{"message", what()}, {"type", type}, {"param", param.empty() ? Json() : Json(param)}, {"code", status}}}};
}

Json parse_body(const std::string& body, const JsonLimits& limits) {
  BoundedJson<Json> j = parse_json_bounded<Json>(body, limits);
  if (!j.error.empty()) throw ApiError(400, "the request body: " + j.error);
  if (!j.value.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return std::move(j.value);
}

// The request's reasoning level: reasoning_effort (generate::reasoning_level), else the
// server's default.
std::string reasoning_level(const Json& body, const ApiContext& ctx) {
  if (!body.contains("reasoning_effort") || body["reasoning_effort"].is_null()) return ctx.default_reasoning_effort;
  if (!body["reasoning_effort"].is_string()) throw bad("reasoning_effort", "'reasoning_effort' must be a string");
  const auto level = generate::reasoning_level(body["reasoning_effort"].get<std::string>());
  if (!level) throw bad("reasoning_effort", "'reasoning_effort' must be none, minimal, low, medium, high or xhigh");
  return *level;
}

std::string render_chat_prompt(const Json& body, const ApiContext& ctx, bool* has_tools, ImageList* images,
                               std::vector<std::pair<size_t, size_t>>* literal_ranges, bool* tools_unseen) {
  if (!ctx.chat) throw ApiError(400, "this model has no chat template (tokenizer.chat_template); use /v1/completions");
  PendingImages pending;
  std::optional<generate::ContentLiterals> literals;
  if (!ctx.parse_special_in_content) literals.emplace(ctx.chat->control_texts());
  const Json messages = template_messages(body, ctx, images ? &pending : nullptr, literals ? &*literals : nullptr);
  if (images) encode_images(pending, ctx, *images);
  Json tools = nullptr;
  const std::string choice = parse_tool_choice(body).mode;
  if (body.contains("tools") && !body["tools"].is_null()) {
    if (!body["tools"].is_array()) throw bad("tools", "'tools' must be a list");
    for (const Json& t : body["tools"])
      if (!t.is_object() || !t.contains("function") || !t["function"].is_object() || !t["function"].contains("name") ||
          !t["function"]["name"].is_string())
        throw bad("tools", "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    if (!body["tools"].empty() && choice != "none") {
      // OpenAI makes description and parameters optional; templates print both.
      tools = body["tools"];
      for (Json& t : tools) {
        Json& fn = t["function"];
        if (!fn.contains("description") || !fn["description"].is_string()) fn["description"] = "";
        if (!fn.contains("parameters") || !fn["parameters"].is_object())
          fn["parameters"] = {{"type", "object"}, {"properties", Json::object()}};
      }
    }
  }
  if (has_tools) *has_tools = !tools.is_null();
  const std::string effort = reasoning_level(body, ctx);
  Json extra = {{"reasoning_strength", effort}, {"reasoning_effort", effort}};
  // `none` switches thinking off where the template can (Qwen3's enable_thinking).
  if (body.contains("reasoning_effort") && body["reasoning_effort"] == "none") extra["enable_thinking"] = false;
  std::string rendered;
  try {
    rendered = ctx.chat->render(messages, true, tools, extra);
    // A template that ignores `tools` renders the same without them: the model never sees them.
    if (tools_unseen && !tools.is_null()) *tools_unseen = rendered == ctx.chat->render(messages, true, nullptr, extra);
  } catch (const std::exception& e) {
    throw bad("messages", std::string("the chat template refused the messages: ") + e.what());
  }
  return literals ? literals->restore(rendered, literal_ranges) : rendered;
}

PreparedRequest prepare_chat(const Json& body, const ApiContext& ctx) {
  PreparedRequest r;
  r.endpoint = Endpoint::chat;
  bool has_tools = false;
  ImageList images;
  std::vector<std::pair<size_t, size_t>> literal_ranges;
  bool tools_unseen = false;
  r.prompt_text = render_chat_prompt(body, ctx, &has_tools, &images, &literal_ranges, &tools_unseen);
  if (tools_unseen)
    r.warnings.push_back("the model's chat template does not show 'tools' to the model: they were dropped");
  else if (has_tools && !ctx.chat->calls_tools())
    r.warnings.push_back("the model's chat format has no tool calls: 'tools' reach the model, but a call stays text");
  r.gen.prompt = ctx.chat->tokenize(r.prompt_text, std::move(literal_ranges));
  if (ctx.images) {
    vision::PromptRows rows;
    try {
      rows = vision::expand_images(r.gen.prompt, images, ctx.image_tokens, ctx.model->config().n_embd);
    } catch (const Error& e) {  // e.g. a text part spelling <|patch|>
      throw bad("messages", e.what());
    }
    r.gen.prompt = std::move(rows.ids);
    r.gen.embeddings = std::move(rows.embeddings);
    r.gen.keys = std::move(rows.keys);
    r.gen.images = std::move(rows.images);
  }
  if (auto grammar = response_format_grammar(body)) {
    if (ctx.chat->renders_control())
      throw bad("response_format", "response_format needs a model whose answer is plain text; this model frames its "
                                   "answer with control tokens");
    if (has_tools)
      throw bad("response_format", "response_format with tools is not supported (a tool call is not the schema's JSON)");
    r.gen.grammar = std::move(grammar);
    r.gen.vocab_trie = ctx.vocab_trie;
  }
  if (auto forced = tool_choice_grammar(parse_tool_choice(body), has_tools ? body["tools"] : Json(), ctx.chat->framing())) {
    if (r.gen.grammar) throw bad("tool_choice", "a forced tool call with a response_format is not supported");
    if (tools_unseen) throw bad("tool_choice", "the model's chat template does not show 'tools' to the model");
    r.gen.grammar = std::move(forced);
    r.gen.vocab_trie = ctx.vocab_trie;
  }
  common_fields(body, ctx, r);
  r.logprobs = bool_field(body, "logprobs", false);
  const int64_t top = int_field(body, "top_logprobs", -1, 0, kMaxTopLogprobs);
  if (top >= 0 && !r.logprobs) throw bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  r.gen.top_logprobs = r.logprobs ? static_cast<int>(std::max<int64_t>(top, 0)) : -1;
  r.gen.stop_ids = ctx.chat->turn_stop_ids();
  r.gen.render_control = ctx.chat->renders_control();
  if (has_tools && ctx.chat->calls_tools()) r.tools = chat::ToolParams::from_json(body["tools"]);
  if (ctx.chat->thinks()) {
    // The level's budget, or the request's own `thinking_budget` (0: no thinking).
    const int64_t own = int_field(body, "thinking_budget", -1, 0, int64_t{1} << 30);
    r.gen.thinking_budget = own >= 0 ? own : ctx.reasoning_budgets.for_level(reasoning_level(body, ctx));
    r.gen.thinking_started = ctx.chat->prompt_opens_thinking(r.prompt_text);
  } else if (body.contains("thinking_budget") && !body["thinking_budget"].is_null()) {
    throw bad("thinking_budget", "'thinking_budget' needs a model that thinks apart from its answer; this one does not");
  }
  return r;
}

PreparedRequest prepare_completion(const Json& body, const ApiContext& ctx) {
  PreparedRequest r;
  r.endpoint = Endpoint::completion;
  if (!body.contains("prompt")) throw bad("prompt", "'prompt' is required");
  const Json& p = body["prompt"];
  const text::Tokenizer& tok = ctx.model->tokenizer();
  const auto encode = [&](const std::string& s) { return tok.encode(s, {.add_special = true, .parse_special = true}); };
  if (p.is_string()) {
    r.gen.prompt = encode(p.get<std::string>());
  } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    r.gen.prompt = encode(p[0].get<std::string>());
  } else if (p.is_array() && !p.empty() && std::all_of(p.begin(), p.end(), [](const Json& x) { return x.is_number_integer(); })) {
    for (const Json& x : p) {
      const int64_t id = x.get<int64_t>();
      if (id < 0 || id >= tok.n_vocab())
        throw bad("prompt", "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(tok.n_vocab()) + ")");
      r.gen.prompt.push_back(static_cast<int32_t>(id));
    }
  } else {
    throw bad("prompt", "'prompt' must be a string, a list of one string, or a list of token ids");
  }
  if (r.gen.prompt.empty()) throw bad("prompt", "the prompt is empty");
  common_fields(body, ctx, r);
  if (body.contains("logprobs") && !body["logprobs"].is_null()) {
    r.gen.top_logprobs = static_cast<int>(int_field(body, "logprobs", 0, 0, 5));
    r.logprobs = true;
  }
  if (tok.eos_id() >= 0) r.gen.stop_ids.push_back(tok.eos_id());
  if (bool_field(body, "ignore_eos", false)) r.gen.stop_ids.clear();
  if (auto grammar = response_format_grammar(body)) {  // llama-server's json_schema on completions too
    r.gen.grammar = std::move(grammar);
    r.gen.vocab_trie = ctx.vocab_trie;
  }
  return r;
}

ResponseBuilder::ResponseBuilder(const PreparedRequest& req, const ApiContext& ctx)
    : req_(req),
      ctx_(ctx),
      id_(random_id(req.endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-")),
      created_(unix_now()) {
  if (req.endpoint == Endpoint::chat) parser_ = ctx.chat->output_parser(req.tools, req.prompt_text);
}

chat::ParsedOutput ResponseBuilder::take(const Update& u) {
  chat::ParsedOutput out;
  if (parser_) {
    out = parser_->feed(u.text);
    if (u.finish != FinishReason::none) out.append(parser_->finish());
  } else {
    out.content = u.text;
  }
  if (u.finish != FinishReason::none) {
    finish_ = u.finish;
    error_ = u.error;
    prompt_tokens_ = u.prompt_tokens;
    cached_tokens_ = u.cached_tokens;
    completion_tokens_ = u.completion_tokens;
  }
  whole_.append(out);
  text_ += u.text;
  logprobs_.insert(logprobs_.end(), u.logprobs.begin(), u.logprobs.end());
  return out;
}

std::string ResponseBuilder::finish_reason_text() const {
  if (finish_ == FinishReason::length) return "length";
  if (!whole_.tool_calls.empty()) return "tool_calls";
  return "stop";
}

Json ResponseBuilder::tool_calls_json(const std::vector<chat::ToolCall>& calls, size_t first_index) const {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i)
    out.push_back({{"index", first_index + i},
                   {"id", random_id("call_")},
                   {"type", "function"},
                   {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}});
  return out;
}

Json ResponseBuilder::logprobs_json(const std::vector<TokenLogprob>& lp, size_t first_offset) const {
  const text::Tokenizer& tok = ctx_.model->tokenizer();
  const auto piece = [&](int32_t id) { return tok.token_to_piece(id, {.render_control = req_.gen.render_control}); };
  const auto bytes = [](const std::string& s) {
    Json b = Json::array();
    for (unsigned char c : s) b.push_back(c);
    return b;
  };
  // Token text may split a UTF-8 sequence; JSON needs valid UTF-8, so such bytes are
  // replaced in "token" (the exact bytes are in "bytes", as OpenAI does).
  const auto text_of = [](const std::string& s) { return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace); };
  if (req_.endpoint == Endpoint::chat) {
    Json content = Json::array();
    for (const TokenLogprob& t : lp) {
      const std::string p = piece(t.id);
      Json top = Json::array();
      for (const TopLogprob& a : t.top) {
        const std::string ap = piece(a.id);
        top.push_back({{"token", Json::parse(text_of(ap))}, {"logprob", a.logprob}, {"bytes", bytes(ap)}});
      }
      content.push_back({{"token", Json::parse(text_of(p))}, {"logprob", t.logprob}, {"bytes", bytes(p)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  Json tokens = Json::array(), token_lp = Json::array(), tops = Json::array(), offsets = Json::array();
  size_t offset = first_offset;
  for (const TokenLogprob& t : lp) {
    const std::string p = piece(t.id);
    tokens.push_back(Json::parse(text_of(p)));
    token_lp.push_back(t.logprob);
    Json top = Json::object();
    for (const TopLogprob& a : t.top) top[Json::parse(text_of(piece(a.id))).get<std::string>()] = a.logprob;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += p.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lp}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

// One prompt, counted once (its cached tokens are the first choice's, which ran it); the
// completions of every choice summed, as OpenAI counts n > 1.
Json ResponseBuilder::usage_json(const std::vector<const ResponseBuilder*>& choices) {
  const ResponseBuilder& first = *choices.front();
  int64_t completion = 0, reasoning_tokens = 0;
  for (const ResponseBuilder* b : choices) {
    completion += b->completion_tokens_;
    if (!b->whole_.reasoning.empty())
      reasoning_tokens +=
          static_cast<int64_t>(b->ctx_.model->tokenizer().encode(b->whole_.reasoning, {.add_special = false}).size());
  }
  return {{"prompt_tokens", first.prompt_tokens_},
          {"completion_tokens", completion},
          {"total_tokens", first.prompt_tokens_ + completion},
          {"prompt_tokens_details", {{"cached_tokens", first.cached_tokens_}}},
          {"completion_tokens_details", {{"reasoning_tokens", reasoning_tokens}}}};
}

void ResponseBuilder::add(const Update& u) { take(u); }

void ResponseBuilder::as_choice(size_t index, const ResponseBuilder& first) {
  index_ = index;
  id_ = first.id_;
  created_ = first.created_;
}

Json ResponseBuilder::choice_json() const {
  const bool chat = req_.endpoint == Endpoint::chat;
  Json choice = {{"index", index_}};
  if (chat) {
    Json msg = {{"role", "assistant"}};
    msg["content"] = whole_.content.empty() && !whole_.tool_calls.empty() ? Json() : Json(whole_.content);
    if (!whole_.reasoning.empty()) msg["reasoning_content"] = whole_.reasoning;
    if (!whole_.tool_calls.empty()) msg["tool_calls"] = tool_calls_json(whole_.tool_calls, 0);
    choice["message"] = msg;
  } else {
    choice["text"] = text_;
  }
  choice["logprobs"] = req_.logprobs ? logprobs_json(logprobs_, 0) : Json();
  choice["finish_reason"] = finish_reason_text();
  return choice;
}

Json ResponseBuilder::final_object() const { return final_object({this}); }

Json ResponseBuilder::final_object(const std::vector<const ResponseBuilder*>& choices) {
  const ResponseBuilder& first = *choices.front();
  Json list = Json::array();
  for (const ResponseBuilder* b : choices) list.push_back(b->choice_json());
  Json out = {{"id", first.id_},
              {"object", first.req_.endpoint == Endpoint::chat ? "chat.completion" : "text_completion"},
              {"created", first.created_},
              {"model", first.ctx_.model_id},
              {"system_fingerprint", "squeeze"},
              {"choices", std::move(list)},
              {"usage", usage_json(choices)}};
  if (!first.req_.warnings.empty()) out["warnings"] = first.req_.warnings;
  return out;
}

Json ResponseBuilder::usage_chunk(const std::vector<const ResponseBuilder*>& choices) {
  const ResponseBuilder& first = *choices.front();
  return {{"id", first.id_},
          {"object", first.req_.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
          {"created", first.created_},
          {"model", first.ctx_.model_id},
          {"system_fingerprint", "squeeze"},
          {"choices", Json::array()},
          {"usage", usage_json(choices)}};
}

std::vector<Json> ResponseBuilder::chunks(const Update& u) {
  const bool chat = req_.endpoint == Endpoint::chat;
  const size_t calls_before = whole_.tool_calls.size(), text_before = text_.size();
  const chat::ParsedOutput delta = take(u);
  std::vector<Json> out;
  const auto chunk = [&](Json choice) {
    return Json{{"id", id_},
                {"object", chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created_},
                {"model", ctx_.model_id},
                {"system_fingerprint", "squeeze"},
                {"choices", Json::array({std::move(choice)})}};
  };
  if (chat && !role_sent_) {
    out.push_back(chunk({{"index", index_}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
    if (!req_.warnings.empty() && index_ == 0) out.back()["warnings"] = req_.warnings;
    role_sent_ = true;
  }
  const bool has_lp = req_.logprobs && !u.logprobs.empty();
  if (chat) {
    Json d = Json::object();
    if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
    if (!delta.content.empty()) d["content"] = delta.content;
    if (!delta.tool_calls.empty()) d["tool_calls"] = tool_calls_json(delta.tool_calls, calls_before);
    if (!d.empty() || has_lp)
      out.push_back(chunk({{"index", index_}, {"delta", d}, {"logprobs", has_lp ? logprobs_json(u.logprobs, 0) : Json()}, {"finish_reason", nullptr}}));
  } else if (!u.text.empty() || has_lp) {
    out.push_back(chunk({{"index", index_}, {"text", u.text}, {"logprobs", has_lp ? logprobs_json(u.logprobs, text_before) : Json()},
                         {"finish_reason", nullptr}}));
  }
  if (u.finish != FinishReason::none && u.finish != FinishReason::error && u.finish != FinishReason::cancelled) {
    Json fin = {{"index", index_}, {"logprobs", nullptr}, {"finish_reason", finish_reason_text()}};
    if (chat) {
      fin["delta"] = Json::object();
    } else {
      fin["text"] = "";
    }
    out.push_back(chunk(fin));
    if (req_.include_usage && req_.n == 1) out.push_back(usage_chunk({this}));
  }
  return out;
}

}  // namespace squeeze::serve
