// actors.hpp: the actors of the CAF energy workloads and the trial division they compute.
//
// Rules (the energy peer contract; checked by peers/lib/energy-smoke.sh):
//   1. prime_actor answers the request (count, range) with pi(range), counted by trial division:
//      every divisor d = 2, 3, 4, ... while d * d <= n (the seed's brute force).
//   2. server_actor answers (ping, client) by sending `pong` to that client, and
//      (prime, client, range) by sending (primes, pi(range)) to it, counted per request:
//      the reply goes to the client DIRECTLY, never back through the load balancer.
//   3. lb_actor forwards each request, unchanged, to the next of its servers in turn (round
//      robin); it is linked to them, so its exit takes them down.
//   4. client_actor waits for `go`, then does `msgs` round trips with its target (the server or
//      the load balancer), one request in flight, and reports (done, pongs, wrong) to the main
//      actor, where wrong counts prime answers different from `expected`; then it quits.
//   5. host_actor spawns the far side of a repetition where it runs and answers with the handle:
//      (spawn, prime) -> prime actor, (spawn, server) -> one server, (spawn, lb, n) -> a load
//      balancer over n new servers. The main process has one locally (native mode) or asks the
//      far process's one over CAF's network layer (distributed mode).
#pragma once

#include <cstdint>
#include <vector>

#include "caf/all.hpp"

namespace energy {

// Atoms (at most 10 characters each in CAF 0.17).
using ping_atom = caf::atom_constant<caf::atom("ping")>;
using pong_atom = caf::atom_constant<caf::atom("pong")>;
using prime_atom = caf::atom_constant<caf::atom("prime")>;
using primes_atom = caf::atom_constant<caf::atom("primes")>;
using count_atom = caf::atom_constant<caf::atom("count")>;
using go_atom = caf::atom_constant<caf::atom("go")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using server_atom = caf::atom_constant<caf::atom("server")>;
using lb_atom = caf::atom_constant<caf::atom("lb")>;

/// The number of primes <= range, by trial division (rule 1).
///
/// ```
/// assert(energy::count_primes(100) == 25);
/// ```
int64_t count_primes(int64_t range);

caf::behavior prime_actor(caf::event_based_actor* self);
caf::behavior server_actor(caf::event_based_actor* self);

struct lb_state {
  std::vector<caf::actor> servers;
  size_t next = 0;
};
caf::behavior lb_actor(caf::stateful_actor<lb_state>* self, std::vector<caf::actor> servers);

struct client_state {
  int64_t left = 0;
  int64_t pongs = 0;
  int64_t wrong = 0;
};
/// A client of `target`; prime clients send (prime, self, range) and check each answer
/// against `expected`, others send (ping, self).
caf::behavior client_actor(caf::stateful_actor<client_state>* self, caf::actor target,
                           caf::actor main, int64_t msgs, bool prime, int64_t range,
                           int64_t expected);

caf::behavior host_actor(caf::event_based_actor* self);

} // namespace energy
