// tools/moe_ranks.cpp — see moe_ranks.h.
#include "moe_ranks.h"

#include <chrono>

#include "core/error.h"
#include "mok/inproc_transport.h"
#ifdef SQUEEZE_HAVE_MPI
#include <mpi.h>

#include "mok/mpi_transport.h"
#endif

namespace squeeze::tools {

using namespace squeeze::mok;

LinkModel link_from(const cli::Args& a) {
  LinkModel m = link_preset(a.get("--link"));
  if (a.has("--link-latency-us") || a.has("--link-gbps")) {
    if (!m.enabled()) m.name = "custom";
    if (a.has("--link-latency-us")) m.latency_us = a.get_double("--link-latency-us");
    if (a.has("--link-gbps")) m.gbps = a.get_double("--link-gbps");
    SQZ_CHECK(m.gbps > 0, "--link-latency-us without a preset needs --link-gbps");
  }
  return m;
}

void on_ranks(const std::string& transport, int ranks, const LinkModel& link, const std::function<void(Transport&)>& fn) {
  const auto run = [&](Transport& t) {
    if (!link.enabled()) return fn(t);
    LinkModelTransport modelled(t, link);
    fn(modelled);
  };
  if (transport == "inproc") {
    run_inproc_ranks_or_throw(ranks, run, std::chrono::seconds(60));
    return;
  }
#ifdef SQUEEZE_HAVE_MPI
  if (transport == "mpi-shm" || transport == "mpi-rma") {
    ensure_mpi_initialised();
    auto t = make_mpi_transport(transport == "mpi-shm" ? MpiMode::Shm : MpiMode::Rma);
    t->set_timeout(std::chrono::seconds(60));
    run(*t);
    return;
  }
  fail("unknown transport '", transport, "' (expected inproc, mpi-shm or mpi-rma)");
#else
  fail("unknown transport '", transport, "' (expected inproc; this build has no MPI)");
#endif
}

int world_size(const std::string& transport, int requested) {
#ifdef SQUEEZE_HAVE_MPI
  if (transport != "inproc") {
    ensure_mpi_initialised();
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
#endif
  (void)transport;
  return requested;
}

int reporting_rank(const std::string& transport) {
  int rank = 0;
#ifdef SQUEEZE_HAVE_MPI
  if (transport != "inproc") MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
  (void)transport;
  return rank;
}

}  // namespace squeeze::tools
