// convert/convert.h — `squeeze convert`: a Hugging Face checkpoint (config.json,
// safetensors shards, tokenizer files) → the GGUF llama.cpp's converter writes for it
// (architectures in convert/hf_arch.h, vocabulary in convert/hf_tokenizer.h).
//
// Streams tensor by tensor from the memory-mapped shards: each tensor's rows are read
// (F32, F16 or BF16), permuted and shifted as hf_arch says, and encoded in the target
// type as the file is written, so memory stays at one chunk of rows whatever the model's
// size. The output is written atomically (gguf::Writer): a failure leaves no file and
// never replaces the checkpoint's files.
#pragma once

#include <string>
#include <vector>

#include "convert/hf_arch.h"
#include "gguf/ggml_type.h"

namespace squeeze::convert {

struct ConvertOptions {
  std::string hf_dir;
  std::string out_path;
  // "auto" (BF16 when the checkpoint's first matrix is BF16, else F16, as llama.cpp's
  // converter picks), a type (F32, F16, BF16, Q8_0, ...) or a quantize preset (Q4_K_M, ...).
  std::string type = "auto";
  bool progress = true;
};

struct ConvertResult {
  ConvertPlan plan;
  std::string type_name;              // what "auto" resolved to, or the preset's name
  uint64_t file_bytes = 0;
  std::vector<std::string> fallbacks; // "name: Q4_K → Q8_0 (row 96)" for rows that do not fit the type
  bool has_tokenizer = false;
};

ConvertResult convert_checkpoint(const ConvertOptions& options);

}  // namespace squeeze::convert
