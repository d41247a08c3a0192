// mok/mpi_dispatch_alltoallv.cpp — the Alltoallv style of the Dispatcher: the layer users
// would otherwise write with MPI collectives (counts by MPI_Alltoall, rows and their
// metadata by MPI_Alltoallv, a local permute into the output contract's expert order, and
// the mirror image for combine), so that whole layers and training runs compare against it.
// Built only with MPI; ranks must be an MPI transport's.
#include <mpi.h>

#include <cstring>

#include "core/error.h"
#include "mok/dispatcher.h"
#include "mok/mpi_transport.h"

namespace squeeze::mok {
namespace {

void check_mpi(int rc, const char* what) { SQZ_CHECK(rc == MPI_SUCCESS, what, " failed (MPI error ", rc, ")"); }

// Per peer byte counts and displacements of rows grouped by peer; rows_of(p) rows of `unit` bytes.
template <typename F>
void layout(int R, size_t unit, F rows_of, std::vector<int>& counts, std::vector<int>& displs) {
  counts.assign(size_t(R), 0);
  displs.assign(size_t(R), 0);
  size_t at = 0;
  for (int p = 0; p < R; ++p) {
    const size_t bytes = size_t(rows_of(p)) * unit;
    SQZ_CHECK(bytes < (size_t(1) << 31) && at < (size_t(1) << 31), "alltoallv: more than 2 GiB to one rank");
    counts[size_t(p)] = int(bytes);
    displs[size_t(p)] = int(at);
    at += bytes;
  }
}

}  // namespace

// Rows to rank d, in send order (d, local expert, token): h.send_rows[send_begin[d·EL] ...].
void Dispatcher::alltoallv_rows(const DispatchHandle& h, const std::byte* send, std::byte* recv, size_t unit) {
  const MPI_Comm comm = communicator_of(t_);
  std::vector<int> sc, sd, rc, rd;
  layout(R_, unit, [&](int d) { return h.send_begin[size_t((d + 1) * EL_)] - h.send_begin[size_t(d * EL_)]; }, sc, sd);
  layout(R_, unit, [&](int s) {
    int64_t n = 0;
    for (int e = 0; e < EL_; ++e) n += h.seg_start[size_t(e * R_ + s + 1)] - h.seg_start[size_t(e * R_ + s)];
    return n;
  }, rc, rd);
  check_mpi(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv, rc.data(), rd.data(), MPI_BYTE, comm),
            "MPI_Alltoallv");
  for (int d = 0; d < R_; ++d)
    if (d != me_) (unit == rb_ ? traffic_.payload_bytes : traffic_.meta_bytes) += uint64_t(sc[size_t(d)]);
}

// Received blocks are (source, expert, token); the contract is (expert, source, token).
void Dispatcher::permute_received(const DispatchHandle& h, const std::byte* recv, std::byte* out, size_t unit) const {
  size_t in = 0;
  for (int s = 0; s < R_; ++s)
    for (int e = 0; e < EL_; ++e) {
      const int64_t b = h.seg_start[size_t(e * R_ + s)], n = h.seg_start[size_t(e * R_ + s + 1)] - b;
      if (n) std::memcpy(out + size_t(b) * unit, recv + in, size_t(n) * unit);
      in += size_t(n) * unit;
    }
}

void Dispatcher::dispatch_alltoallv(DispatchHandle& h, const float* x) {
  const MPI_Comm comm = communicator_of(t_);
  const int K = h.K;
  std::vector<int> cnt(size_t(R_ * EL_)), rcnt(cnt.size());
  for (size_t i = 0; i < cnt.size(); ++i) cnt[i] = int(h.send_count[i]);
  check_mpi(MPI_Alltoall(cnt.data(), EL_, MPI_INT, rcnt.data(), EL_, MPI_INT, comm), "MPI_Alltoall");
  traffic_.meta_bytes += uint64_t((R_ - 1) * EL_) * 4;
  std::vector<int64_t> counts(size_t(EL_ * R_));
  for (int s = 0; s < R_; ++s)
    for (int e = 0; e < EL_; ++e) counts[size_t(e * R_ + s)] = rcnt[size_t(s * EL_ + e)];
  finish_owner_layout(h, counts);
  mark_known();

  const size_t sent = h.send_rows.size(), n = size_t(h.n_rows());
  staging_.resize(sent * rb_);
  for (int d = 0; d < R_; ++d) pack_send_rows(h, x, d, staging_.data() + size_t(h.send_begin[size_t(d * EL_)]) * rb_);
  std::vector<RowMeta> meta(sent), meta_in(n), meta_out(n);
  for (size_t i = 0; i < sent; ++i) {
    const int32_t sr = h.send_rows[i];
    meta[i] = {sr / K, sr % K, h.gate[size_t(sr)]};
  }
  std::vector<std::byte> recv(n * rb_);
  alltoallv_rows(h, staging_.data(), recv.data(), rb_);
  alltoallv_rows(h, reinterpret_cast<const std::byte*>(meta.data()), reinterpret_cast<std::byte*>(meta_in.data()),
                 sizeof(RowMeta));
  h.owned_rows_.resize(n * rb_);
  h.rows_ = h.owned_rows_.data();
  permute_received(h, recv.data(), h.owned_rows_.data(), rb_);
  permute_received(h, reinterpret_cast<const std::byte*>(meta_in.data()), reinterpret_cast<std::byte*>(meta_out.data()),
                   sizeof(RowMeta));
  for (size_t i = 0; i < n; ++i) {
    h.src_index[i] = meta_out[i].index;
    h.src_slot[i] = meta_out[i].slot;
    h.row_gate[i] = meta_out[i].gate;
  }
}

void Dispatcher::dispatch_cached_alltoallv(const DispatchHandle& h, const float* x, float* out) {
  const size_t sent = h.send_rows.size(), n = size_t(h.n_rows());
  staging_.resize(sent * rb_);
  for (int d = 0; d < R_; ++d) pack_send_rows(h, x, d, staging_.data() + size_t(h.send_begin[size_t(d * EL_)]) * rb_);
  std::vector<std::byte> recv(n * rb_), rows(n * rb_);
  alltoallv_rows(h, staging_.data(), recv.data(), rb_);
  permute_received(h, recv.data(), rows.data(), rb_);
  from_payload(rows.data(), out, int64_t(n));
}

// The owner's rows go back in (source, expert, token) blocks and land at home in send
// order (destination, expert, token), which send_rows maps to (token, slot).
void Dispatcher::combine_alltoallv(const DispatchHandle& h, const float* rows) {
  const MPI_Comm comm = communicator_of(t_);
  const size_t n = size_t(h.n_rows()), sent = h.send_rows.size();
  std::vector<std::byte> out(n * rb_);
  size_t at = 0;
  for (int s = 0; s < R_; ++s)
    for (int e = 0; e < EL_; ++e) {
      const int64_t b = h.seg_start[size_t(e * R_ + s)], m = h.seg_start[size_t(e * R_ + s + 1)] - b;
      to_payload(rows + b * cfg_.H(), out.data() + at, m);
      at += size_t(m) * rb_;
    }
  std::vector<int> sc, sd, rc, rd;
  layout(R_, rb_, [&](int s) {
    int64_t m = 0;
    for (int e = 0; e < EL_; ++e) m += h.seg_start[size_t(e * R_ + s + 1)] - h.seg_start[size_t(e * R_ + s)];
    return m;
  }, sc, sd);
  layout(R_, rb_, [&](int d) { return h.send_begin[size_t((d + 1) * EL_)] - h.send_begin[size_t(d * EL_)]; }, rc, rd);
  a2a_recv_.resize(sent * rb_);
  check_mpi(MPI_Alltoallv(out.data(), sc.data(), sd.data(), MPI_BYTE, a2a_recv_.data(), rc.data(), rd.data(), MPI_BYTE,
                          comm),
            "MPI_Alltoallv");
  for (int s = 0; s < R_; ++s)
    if (s != me_) traffic_.payload_bytes += uint64_t(sc[size_t(s)]);
  slot_rows_.assign(size_t(h.tokens * h.K), nullptr);
  for (size_t i = 0; i < sent; ++i) slot_rows_[size_t(h.send_rows[i])] = a2a_recv_.data() + i * rb_;
}

}  // namespace squeeze::mok
