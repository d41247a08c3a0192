// model/model.cpp
#include "model/model.h"

#include "core/error.h"
#include "model/forward.h"
#include "model/gguf_config.h"

namespace squeeze::model {

Model::Model(gguf::File file, ModelConfig config, text::Tokenizer tokenizer)
    : file_(std::move(file)), config_(std::move(config)), tokenizer_(std::move(tokenizer)) {
  weights_ = bind_weights(file_, config_);
}

std::unique_ptr<Model> Model::load(const std::string& path) {
  gguf::File file(path);
  ModelConfig config = config_from_gguf(file);
  if (const std::string missing = forward_support_error(config); !missing.empty()) fail(path, ": ", missing);
  text::Tokenizer tokenizer = [&] {
    try {
      return text::Tokenizer(tokenizer_data_from_gguf(file.metadata()));
    } catch (const Error& e) {
      throw e.with_context(path + ": tokenizer");
    }
  }();
  if (tokenizer.n_vocab() != config.n_vocab)
    fail(path, ": tokenizer has ", tokenizer.n_vocab(), " tokens but the model's vocabulary is ", config.n_vocab);
  return std::unique_ptr<Model>(new Model(std::move(file), std::move(config), std::move(tokenizer)));
}

uint64_t Model::weight_bytes() const {
  uint64_t n = 0;
  for (const auto& t : file_.tensors()) n += t.n_bytes;
  return n;
}

}  // namespace squeeze::model
