// core/tensor.h — a non-owning, strided view of up to 4-D data of one dtype.
//
// Shapes are listed outermost first (rows, cols): shape = {n_rows, n_cols} is a
// row-major matrix with strides = {n_cols, 1}. Strides count elements, not bytes.
// Block-quantized weights are not TensorViews; they are views over rows of blocks
// described by quant/ (see quant/types.h).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "core/dtype.h"
#include "core/error.h"

namespace squeeze {

struct TensorView {
  static constexpr int kMaxDims = 4;

  void* data = nullptr;
  DType dtype = DType::F32;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<int64_t, kMaxDims> strides{};

  TensorView() = default;
  // A contiguous row-major view.
  TensorView(void* data, DType dtype, std::initializer_list<int64_t> dims);

  int64_t dim(int i) const { return shape.at(static_cast<size_t>(i)); }
  int64_t numel() const;
  bool is_contiguous() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }

  template <typename T>
  T* as() const { return static_cast<T*>(data); }
  // Element offset of index (i0, i1, ...); fewer indices than ndim address a sub-block.
  int64_t offset(std::initializer_list<int64_t> index) const;

  // Row r of a 2-D view as a span (contiguous rows only).
  template <typename T>
  std::span<T> row(int64_t r) const {
    SQZ_CHECK(ndim == 2 && strides[1] == 1, "row() needs a 2-D view with contiguous rows");
    return {static_cast<T*>(data) + r * strides[0], static_cast<size_t>(shape[1])};
  }
};

}  // namespace squeeze
