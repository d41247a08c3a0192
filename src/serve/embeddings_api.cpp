// serve/embeddings_api.cpp — /v1/embeddings' request and response, and the pooling.
#include "serve/embeddings_api.h"

#include <cmath>
#include <cstring>

namespace squeeze::serve {

using chat::Json;

namespace {

ApiError bad_field(const std::string& field, const std::string& message) { return ApiError(400, message, field); }

std::vector<int32_t> token_list(const Json& ids, int64_t n_vocab) {
  std::vector<int32_t> out;
  for (const Json& t : ids) {
    if (!t.is_number_integer()) throw bad_field("input", "'input' token lists hold integers only");
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id >= n_vocab)
      throw bad_field("input", "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

std::string base64_of(const std::vector<float>& v) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // x86: little-endian already
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t b0 = static_cast<uint8_t>(bytes[i]);
    const uint32_t b1 = i + 1 < bytes.size() ? static_cast<uint8_t>(bytes[i + 1]) : 0;
    const uint32_t b2 = i + 2 < bytes.size() ? static_cast<uint8_t>(bytes[i + 2]) : 0;
    const uint32_t w = (b0 << 16) | (b1 << 8) | b2;
    out += digits[(w >> 18) & 63];
    out += digits[(w >> 12) & 63];
    out += i + 1 < bytes.size() ? digits[(w >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? digits[w & 63] : '=';
  }
  return out;
}

}  // namespace

EmbeddingRequest prepare_embeddings(const Json& body, const ApiContext& ctx) {
  EmbeddingRequest r;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) throw bad_field("model", "'model' must be a string");
    if (body["model"].get<std::string>() != ctx.model_id)
      throw ApiError(404, "the model '" + body["model"].get<std::string>() + "' does not exist; this server serves '" +
                              ctx.model_id + "'", "model", "model_not_found");
  }
  if (!body.contains("input")) throw bad_field("input", "'input' is required");
  const Json& in = body["input"];
  const text::Tokenizer& tok = ctx.model->tokenizer();
  const auto add_text = [&](const Json& s) {
    r.inputs.push_back(tok.encode(s.get<std::string>(), {.add_special = true}));
  };
  if (in.is_string()) {
    add_text(in);
  } else if (in.is_array() && !in.empty() && in[0].is_number_integer()) {
    r.inputs.push_back(token_list(in, tok.n_vocab()));
  } else if (in.is_array() && !in.empty()) {
    if (in.size() > kMaxEmbeddingInputs)
      throw bad_field("input", "at most " + std::to_string(kMaxEmbeddingInputs) + " inputs per request");
    for (const Json& x : in) {
      if (x.is_string()) add_text(x);
      else if (x.is_array()) r.inputs.push_back(token_list(x, tok.n_vocab()));
      else throw bad_field("input", "'input' must be a string, a list of strings, or token lists");
    }
  } else {
    throw bad_field("input", "'input' must be a non-empty string, list of strings, or token lists");
  }
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const auto n = static_cast<int64_t>(r.inputs[i].size());
    if (n == 0) throw bad_field("input", "input " + std::to_string(i) + " has no tokens");
    if (n > ctx.n_ctx)
      throw bad_field("input", "input " + std::to_string(i) + " is " + std::to_string(n) + " tokens, more than the context of " +
                                   std::to_string(ctx.n_ctx) + " tokens");
  }
  if (body.contains("pooling") && !body["pooling"].is_null()) {
    const Json& p = body["pooling"];
    const std::string name = p.is_string() ? p.get<std::string>() : "";
    if (name == "mean") r.pooling = Pooling::mean;
    else if (name == "last") r.pooling = Pooling::last;
    else if (name == "cls") r.pooling = Pooling::cls;
    else throw bad_field("pooling", "'pooling' must be \"mean\", \"last\" or \"cls\"");
  }
  if (body.contains("normalize") && !body["normalize"].is_null()) {
    if (!body["normalize"].is_boolean()) throw bad_field("normalize", "'normalize' must be true or false");
    r.normalize = body["normalize"].get<bool>();
  }
  if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
    const Json& f = body["encoding_format"];
    if (f == "base64") r.base64 = true;
    else if (f != "float") throw bad_field("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
  }
  if (body.contains("dimensions") && !body["dimensions"].is_null()) {
    const int64_t width = ctx.model->config().n_embd;
    if (!body["dimensions"].is_number_integer() || body["dimensions"].get<int64_t>() != width)
      throw bad_field("dimensions", "'dimensions' must be the model's width, " + std::to_string(width) + " (no truncation)");
  }
  return r;
}

std::vector<float> pool_hidden_states(const std::vector<float>& hidden, int64_t n_embd, Pooling pooling, bool normalize) {
  const auto E = static_cast<size_t>(n_embd);
  const size_t n = hidden.size() / E;
  std::vector<float> out(E, 0.0f);
  if (pooling == Pooling::mean) {
    std::vector<double> sum(E, 0.0);
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i < E; ++i) sum[i] += hidden[t * E + i];
    for (size_t i = 0; i < E; ++i) out[i] = static_cast<float>(sum[i] / static_cast<double>(n));
  } else {
    const size_t t = pooling == Pooling::last ? n - 1 : 0;
    std::copy_n(hidden.begin() + static_cast<ptrdiff_t>(t * E), E, out.begin());
  }
  if (normalize) {
    double norm = 0;
    for (float x : out) norm += static_cast<double>(x) * x;
    norm = std::sqrt(norm);
    if (norm > 0)
      for (float& x : out) x = static_cast<float>(x / norm);
  }
  return out;
}

Json embeddings_response(const EmbeddingRequest& req, const std::vector<std::vector<float>>& vectors, const ApiContext& ctx) {
  Json data = Json::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < vectors.size(); ++i) {
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", req.base64 ? Json(base64_of(vectors[i])) : Json(vectors[i])}});
    tokens += static_cast<int64_t>(req.inputs[i].size());
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", ctx.model_id},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

}  // namespace squeeze::serve
