// gguf/json.h — metadata values and file summaries as JSON (`squeeze inspect --json`,
// and the test tool that builds GGUF files from a JSON description).
//
// A value is {"type": "u32", "value": 7}; an array is
// {"type": "array", "element_type": "i16", "value": [1, 2]}, and an array of arrays
// holds such array objects as its items. Floats that JSON cannot represent are the
// strings "nan", "inf", "-inf". Types are kept exactly, so JSON → Value → JSON is lossless.
#pragma once

#include <nlohmann/json.hpp>

#include "gguf/reader.h"
#include "gguf/value.h"

namespace squeeze::gguf {

using Json = nlohmann::ordered_json;

Json value_to_json(const Value& v);
// Throws squeeze::Error naming what is wrong (unknown type, value out of range, ...).
Value value_from_json(const Json& j);

// The whole file: version, alignment, offsets, metadata (full arrays) and tensor table.
Json file_to_json(const File& file);

}  // namespace squeeze::gguf
