// model/gguf_config.h — ModelConfig and TokenizerData to and from GGUF metadata.
//
// Keys follow llama.cpp's conventions under the architecture prefix (`llama.` or
// `glimmer.`): block_count, embedding_length, attention.head_count(_kv),
// attention.key_length (head_dim), feed_forward_length, attention.layer_norm_rms_epsilon,
// rope.freq_base, context_length, vocab_size; glimmer adds the gemma3-style window keys
// attention.sliding_window, attention.sliding_window_pattern (a u32 period with the last
// layer of each period global, or a bool array per layer) and rope.freq_base_swa.
// gemma3 reads the keys llama.cpp reads (attention.sliding_window required; a period of 6
// and a local RoPE base of 10000 unless the pattern / freq_base_swa keys say otherwise);
// every arch honours attention.scale and final_logit_softcapping when present.
#pragma once

#include "gguf/metadata.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "model/tensor_table.h"
#include "text/tokenizer.h"

namespace squeeze::model {

// Reads the architecture and validates it against the file's tensors' shapes; errors
// name the key or the tensor ("m.gguf: metadata key 'llama.block_count' is missing").
ModelConfig config_from_gguf(const gguf::File& file);
// Throws naming the file and tensor when one of `want` is missing or has another shape
// (`who`: what needs it, for the message).
void check_tensor_shapes(const gguf::File& file, const std::vector<TensorShape>& want, const std::string& who);
// Writes `c` as metadata (general.architecture and the prefixed keys).
void write_config(gguf::Metadata& m, const ModelConfig& c);

// The tokenizer.ggml.* keys: byte-level BPE ("gpt2") and SentencePiece ("llama").
text::TokenizerData tokenizer_data_from_gguf(const gguf::Metadata& m);
void write_tokenizer(gguf::Metadata& m, const text::TokenizerData& t);

}  // namespace squeeze::model
