// quant/imatrix.h — the importance matrix: for each weight matrix (by GGUF tensor name),
// the per-input-column sums of squared activations seen over calibration text and how
// many activation rows (tokens) they cover. The quantizers take the per-column mean x²
// as importance (QuantizeParams::importance).
//
// File format: llama.cpp's GGUF imatrix layout (tools/imatrix, the default since it
// moved off the legacy .dat format), so files are exchangeable with llama-imatrix:
//   general.type = "imatrix", imatrix.datasets ([string]), imatrix.chunk_count (u32),
//   imatrix.chunk_size (u32);
//   "<weight name>.in_sum2": F32 [n_cols, n_mat]   Σ x² per column (per matrix)
//   "<weight name>.counts":  F32 [1, n_mat]        activation rows accumulated
// n_mat > 1 only for stacked expert tensors; squeeze collects n_mat = 1.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace squeeze::quant {

class ImportanceMatrix {
 public:
  struct Entry {
    int64_t n_cols = 0;
    int64_t n_mat = 1;
    std::vector<double> sum2;    // [n_mat, n_cols]
    std::vector<double> counts;  // [n_mat]
  };

  // Accumulates x[rows, cols] as inputs of matrix `mat` of weight `name` (creating the
  // entry on first use). Throws if cols or mat disagree with an existing entry.
  void add(std::string_view name, const float* x, int64_t rows, int64_t cols, int64_t mat = 0, int64_t n_mat = 1);
  // Adds another matrix's sums and counts (same column counts where names overlap),
  // chunk counts, and its datasets.
  void merge(const ImportanceMatrix& other);

  const Entry* find(std::string_view name) const;
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

  // Per-column mean x² of `name` (Σx²/count pooled over its matrices, or of one matrix
  // when mat ≥ 0); nullopt when the entry is missing or has no samples.
  std::optional<std::vector<float>> mean_sq(std::string_view name, int64_t mat = -1) const;

  // Bookkeeping written to / read from the file.
  std::vector<std::string> datasets;
  int64_t chunk_count = 0;
  int64_t chunk_size = 0;

  // Writes the GGUF file atomically (never replacing any of `inputs`).
  void save(const std::string& path, const std::vector<std::string>& inputs = {}) const;
  // Reads and validates a GGUF imatrix; one-line errors name the file and the problem.
  static ImportanceMatrix load(const std::string& path);

 private:
  Entry& entry(std::string_view name, int64_t cols, int64_t n_mat);
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace squeeze::quant
