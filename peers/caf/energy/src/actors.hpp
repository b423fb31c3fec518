// actors.hpp: the actors of the CAF energy workloads and the trial division they compute.
//
// They are seed 002's CAF programs (src/native/*_caf of the seed's repository: prime_calculation,
// ping_pong, ping_pong_lb, ping_pong_lb_prime) with the same messages and the same work per
// message; docs/energy.md, "Seed programs", lists every difference and its reason.
//
// Rules (the energy peer contract; checked by peers/lib/energy-smoke.sh):
//   1. find_primes(range) is the seed's: for n = 2 .. range, is_prime(n), in C++ `int`; is_prime
//      says n < 2 is not prime, 2 is, and tests any other n against every divisor
//      2 .. (int)std::sqrt(n), the first divisor found ending the test.
//   2. prime_actor answers a bare `int` range with the `int` find_primes(range).
//   3. ping_server_actor answers (client, ping) by sending `pong` to that client;
//      prime_server_actor answers (client, int range) by sending the bare `int`
//      find_primes(range) to it, counted per request. The reply goes to the client DIRECTLY,
//      never back through the load balancer.
//   4. lb_actor forwards each request, unchanged, to servers[index], then
//      index = (index + 1) % servers.size() (round robin); it is linked to its servers, so its
//      exit takes them down.
//   5. client_actor waits for `go`, then does `msgs` round trips with its target (the server or
//      the load balancer), one request in flight, and reports (done, pongs, wrong) to the main
//      actor, where wrong counts prime answers different from `expected`; then it quits.
//   6. host_actor spawns the far side of a repetition where it runs and answers with the handle:
//      (spawn, prime) -> prime actor, (spawn, server) -> one ping server, (spawn, lb, n, prime)
//      -> a load balancer over n new ping (prime = false) or prime servers. The main process has
//      one locally (native mode) or asks the far process's one over CAF's network layer
//      (distributed mode).
#pragma once

#include <cstdint>
#include <vector>

#include "caf/all.hpp"

namespace energy {

// Atoms (at most 10 characters each in CAF 0.17).
using ping_atom = caf::atom_constant<caf::atom("ping")>;
using pong_atom = caf::atom_constant<caf::atom("pong")>;
using prime_atom = caf::atom_constant<caf::atom("prime")>;
using go_atom = caf::atom_constant<caf::atom("go")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using server_atom = caf::atom_constant<caf::atom("server")>;
using lb_atom = caf::atom_constant<caf::atom("lb")>;

/// Whether n is prime, by the seed's trial division (rule 1).
bool is_prime(int n);

/// The number of primes <= range, by the seed's trial division (rule 1).
///
/// ```
/// assert(energy::find_primes(100) == 25);
/// ```
int find_primes(int range);

caf::behavior prime_actor(caf::event_based_actor* self);
caf::behavior ping_server_actor(caf::event_based_actor* self);
caf::behavior prime_server_actor(caf::event_based_actor* self);

struct lb_state {
  std::vector<caf::actor> servers;
  size_t server_index = 0;
};
caf::behavior lb_actor(caf::stateful_actor<lb_state>* self, std::vector<caf::actor> servers);

struct client_state {
  int64_t left = 0;
  int64_t pongs = 0;
  int64_t wrong = 0;
};
/// A client of `target`; prime clients send (self, range) and check each answer against
/// `expected`, others send (self, ping).
caf::behavior client_actor(caf::stateful_actor<client_state>* self, caf::actor target,
                           caf::actor main, int64_t msgs, bool prime, int range, int expected);

caf::behavior host_actor(caf::event_based_actor* self);

} // namespace energy
