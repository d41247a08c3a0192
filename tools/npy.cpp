// tools/npy.cpp
#include "npy.h"

#include <cstring>

#include "core/error.h"
#include "gguf/atomic_file.h"

namespace squeeze::cli {

void write_npy(const std::string& path, const float* data, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to 64 bytes, ending in \n
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  gguf::AtomicFile f(path);  // refuses the command's inputs; whole file or nothing
  const uint16_t hlen = static_cast<uint16_t>(header.size());
  const unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(hlen & 0xff),
                                      static_cast<unsigned char>(hlen >> 8)};
  const size_t n = static_cast<size_t>(rows * cols);
  f.write({preamble, 10});
  f.write(header);
  f.write({reinterpret_cast<const uint8_t*>(data), n * sizeof(float)});
  f.commit();
}

}  // namespace squeeze::cli
