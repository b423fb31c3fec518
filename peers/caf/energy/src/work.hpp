// work.hpp: one measured repetition of a CAF energy workload (the energy peer contract).
//
// Rules (checked by peers/lib/energy-smoke.sh):
//   1. Everything the repetition needs is spawned BEFORE start_us: the far actors through the
//      host actor (local in native mode, in the far process in distributed mode), the clients
//      in this process; clients wait for `go`.
//   2. start_us is taken just before the first `go` (or the prime request); end_us when the
//      last client has reported (or the prime count has arrived). result = pongs received
//      (clients * msgs) or pi(range); wrong = prime answers that differed from `expected`.
//   3. After end_us the far actors get an exit (user_shutdown) and their exit is awaited
//      (10 s; for the load balancer its linked servers go down with it); clients have quit.
//   4. Bounded: setting up waits 30 s at most, the work 1 hour; a monitored far actor going
//      down (including a lost far process) fails the repetition at once with rep_error.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "caf/all.hpp"
#include "config.hpp"

namespace energy {

/// A repetition that could not complete; the text says what happened.
struct rep_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct rep_result {
  int64_t start_us;
  int64_t end_us;
  int64_t result;
  int64_t wrong;
};

/// Runs one repetition of `c`'s workload against `host` (rules 1-4). Throws rep_error.
rep_result run_rep(caf::actor_system& sys, const caf::actor& host, const config& c,
                   int expected);

} // namespace energy
