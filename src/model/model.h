// model/model.h — a loaded model: the mapped GGUF file, its config, weights bound to
// the file, and its tokenizer. Immutable once loaded; sessions (model/session.h) hold
// the per-sequence state.
#pragma once

#include <memory>
#include <string>

#include "gguf/reader.h"
#include "model/config.h"
#include "model/weights.h"
#include "text/tokenizer.h"

namespace squeeze::model {

class Model {
 public:
  // Maps, validates and binds `path`. Errors are one line naming the file and the problem.
  static std::unique_ptr<Model> load(const std::string& path);

  const gguf::File& file() const { return file_; }
  const ModelConfig& config() const { return config_; }
  const Weights& weights() const { return weights_; }
  const text::Tokenizer& tokenizer() const { return tokenizer_; }
  // Bytes of all weight tensors in the file.
  uint64_t weight_bytes() const;

 private:
  Model(gguf::File file, ModelConfig config, text::Tokenizer tokenizer);
  gguf::File file_;
  ModelConfig config_;
  text::Tokenizer tokenizer_;
  Weights weights_;
};

}  // namespace squeeze::model
