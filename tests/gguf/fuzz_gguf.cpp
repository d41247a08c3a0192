// tests/gguf/fuzz_gguf.cpp — libFuzzer target for the GGUF reader: any input must be
// accepted or rejected with a squeeze::Error; sanitizers catch everything else. If it
// is accepted, touch every tensor byte and metadata value so bad spans would show.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "gguf/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto f = squeeze::gguf::File::parse({data, size}, "fuzz.gguf");
    volatile uint8_t sink = 0;
    for (const auto& t : f.tensors())
      for (uint8_t b : t.data) sink = static_cast<uint8_t>(sink + b);
    for (const auto& kv : f.metadata().entries()) (void)kv.value.to_display();
  } catch (const squeeze::Error&) {
  }
  return 0;
}
