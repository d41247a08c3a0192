// core/tensor.cpp — TensorView construction and index arithmetic.
#include "core/tensor.h"

namespace squeeze {

TensorView::TensorView(void* d, DType t, std::initializer_list<int64_t> dims) : data(d), dtype(t) {
  SQZ_CHECK(dims.size() >= 1 && dims.size() <= kMaxDims, "tensor rank ", dims.size(), " not in 1..4");
  ndim = static_cast<int>(dims.size());
  int i = 0;
  for (int64_t n : dims) {
    SQZ_CHECK(n >= 0, "negative tensor dimension ", n);
    shape[static_cast<size_t>(i++)] = n;
  }
  int64_t stride = 1;
  for (int k = ndim - 1; k >= 0; --k) {
    strides[static_cast<size_t>(k)] = stride;
    stride *= shape[static_cast<size_t>(k)];
  }
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int k = 0; k < ndim; ++k) n *= shape[static_cast<size_t>(k)];
  return ndim == 0 ? 0 : n;
}

bool TensorView::is_contiguous() const {
  int64_t stride = 1;
  for (int k = ndim - 1; k >= 0; --k) {
    if (shape[static_cast<size_t>(k)] != 1 && strides[static_cast<size_t>(k)] != stride) return false;
    stride *= shape[static_cast<size_t>(k)];
  }
  return true;
}

int64_t TensorView::offset(std::initializer_list<int64_t> index) const {
  SQZ_CHECK(static_cast<int>(index.size()) <= ndim, "index of rank ", index.size(), " into a rank-", ndim, " view");
  int64_t off = 0;
  size_t k = 0;
  for (int64_t i : index) {
    SQZ_CHECK(i >= 0 && i < shape[k], "index ", i, " out of range for dim ", k, " of size ", shape[k]);
    off += i * strides[k++];
  }
  return off;
}

}  // namespace squeeze
