// common.hpp: what the CAF micro-benchmark files share: the message atoms, the parameter map,
// the per-message computation, the bench entry points, and `await_reply`, which waits (bounded)
// for the reply that ends a bench.
//
// The benches use only CAF 0.17's dynamically typed, event-based actors, atoms and built-in
// message element types, as CAF's own examples do.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "caf/all.hpp"

namespace micro {

// Atoms (at most 10 characters each in CAF 0.17).
using start_atom = caf::atom_constant<caf::atom("start")>;
using ping_atom = caf::atom_constant<caf::atom("ping")>;
using pong_atom = caf::atom_constant<caf::atom("pong")>;
using incr_atom = caf::atom_constant<caf::atom("incr")>;
using total_atom = caf::atom_constant<caf::atom("total")>;
using work_atom = caf::atom_constant<caf::atom("work")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using await_atom = caf::atom_constant<caf::atom("await")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using next_atom = caf::atom_constant<caf::atom("next")>;
using token_atom = caf::atom_constant<caf::atom("token")>;
using meet_atom = caf::atom_constant<caf::atom("meet")>;
using change_atom = caf::atom_constant<caf::atom("change")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
using departed_atom = caf::atom_constant<caf::atom("departed")>;
using peers_atom = caf::atom_constant<caf::atom("peers")>;
using fib_atom = caf::atom_constant<caf::atom("fib")>;
using skynet_atom = caf::atom_constant<caf::atom("skynet")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;

/// Integer parameters of one run, by name (std::map keeps the JSON keys sorted).
using params = std::map<std::string, long>;

/// A failed correctness check or a lost reply; main reports it and exits non-zero.
struct bench_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Bound on every wait for a bench's final reply, so a lost message ends the run.
constexpr auto wait_limit = std::chrono::minutes(10);

using clock_type = std::chrono::steady_clock;

inline double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

/// The tiny per-message computation of fjthrput and fjcreate (as Savina's, a sine).
inline double compute(long i) {
  double s = std::sin(static_cast<double>(i) * 37.2);
  return s * s;
}

/// Waits on a blocking response handle: runs `on_reply` (whose parameter types say what reply
/// is expected) or throws when the request failed, timed out or got another reply.
template <class Handle, class F>
void await_reply(Handle&& h, F on_reply) {
  bool failed = false;
  std::string why;
  h.receive(on_reply, [&](caf::error& err) {
    failed = true;
    why = caf::to_string(err);
  });
  if (failed)
    throw bench_error("waiting for the bench to finish: " + why);
}

/// State of the collector: answers an (await, n) request with (n, sum) once n actors have
/// sent (done, value); used by fjthrput and big.
struct collector_state {
  int64_t want = 0;
  int64_t got = 0;
  double sum = 0;
  caf::response_promise rp;
};
caf::behavior collector_actor(caf::stateful_actor<collector_state>* self);

/// Every bench of one measured iteration returns its wall time in milliseconds.
double run_pingpong(caf::actor_system& sys, const params& p);
double run_count(caf::actor_system& sys, const params& p);
double run_fjthrput(caf::actor_system& sys, const params& p);
double run_threadring(caf::actor_system& sys, const params& p);
double run_chameneos(caf::actor_system& sys, const params& p);
double run_big(caf::actor_system& sys, const params& p);
double run_fjcreate(caf::actor_system& sys, const params& p);
double run_fib(caf::actor_system& sys, const params& p);
double run_skynet(caf::actor_system& sys, const params& p);

/// What the memory bench measured (it runs once, see bench_spawning.cpp).
struct memory_result {
  double spawn_ms;
  double bytes_per_actor;
};
memory_result run_memory(caf::actor_system& sys, const params& p);

} // namespace micro
