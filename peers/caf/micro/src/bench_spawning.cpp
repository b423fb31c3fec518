// bench_spawning.cpp: the CAF spawn-heavy benches: fjcreate, fib, skynet and memory.
//
// Creating actors is the measured work here, so the clock starts before the first spawn. In
// fjcreate, fib and skynet actors are spawned by the actor that needs them (self->spawn); fib
// and skynet nodes ask their children with request(...).then(...), answer through a
// response_promise and quit. memory spawns its idle actors from the main thread (see there).
#include <malloc.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"

namespace micro {

using caf::actor;
using caf::behavior;
using caf::event_based_actor;
using caf::stateful_actor;

namespace {

// ---- fjcreate -----------------------------------------------------------------------------

behavior fj_child(event_based_actor* self) {
  return {
    [=](work_atom) {
      volatile double sink = compute(1);
      (void) sink;
      self->quit();
      return ack_atom::value; // goes back to the creator
    },
  };
}

struct creator_state {
  int64_t n = 0;
  int64_t acks = 0;
  caf::response_promise rp;
};

// Spawns n children, sends each one work message and answers its start request when all n
// have acknowledged.
behavior fj_creator(stateful_actor<creator_state>* self) {
  return {
    [=](start_atom, int64_t n) {
      auto& st = self->state;
      st.n = n;
      st.rp = self->make_response_promise();
      for (int64_t i = 0; i < n; ++i)
        self->send(self->spawn(fj_child), work_atom::value);
    },
    [=](ack_atom) {
      auto& st = self->state;
      if (++st.acks == st.n)
        st.rp.deliver(st.acks);
    },
  };
}

// ---- fib and skynet: trees of actors that sum their children's replies ----------------------

struct sum_state {
  int64_t pending = 0;
  int64_t total = 0;
  caf::response_promise rp;
};

void answer(stateful_actor<sum_state>* self) {
  self->state.rp.deliver(self->state.total);
  self->quit();
}

// Asks `child` with `xs...` and adds its reply to the running sum; answers after the last.
template <class... Ts>
void ask_child(stateful_actor<sum_state>* self, const actor& child, Ts... xs) {
  ++self->state.pending;
  self->request(child, caf::infinite, xs...).then([=](int64_t v) {
    self->state.total += v;
    if (--self->state.pending == 0)
      answer(self);
  });
}

behavior fib_actor(stateful_actor<sum_state>* self) {
  return {
    [=](fib_atom, int64_t k) {
      auto& st = self->state;
      st.rp = self->make_response_promise();
      if (k <= 1) {
        st.total = k;
      } else {
        for (int64_t c : {k - 1, k - 2}) {
          if (c <= 1)
            st.total += c; // fib(0)=0, fib(1)=1: no actor for a base case
          else
            ask_child(self, self->spawn(fib_actor), fib_atom::value, c);
        }
      }
      if (st.pending == 0)
        answer(self);
    },
  };
}

behavior skynet_actor(stateful_actor<sum_state>* self) {
  return {
    [=](skynet_atom, int64_t num, int64_t size, int64_t width) {
      auto& st = self->state;
      st.rp = self->make_response_promise();
      if (size == 1) {
        st.total = num; // a leaf returns its own number
        answer(self);
        return;
      }
      int64_t child = size / width;
      for (int64_t i = 0; i < width; ++i)
        ask_child(self, self->spawn(skynet_actor), skynet_atom::value, num + i * child, child,
                  width);
    },
  };
}

// ---- memory -------------------------------------------------------------------------------

// An idle actor: tells the collector it has started, then waits for a message.
behavior idle_actor(event_based_actor* self, const actor& collector) {
  self->send(collector, done_atom::value, 1.0);
  return {
    [=](stop_atom) { self->quit(); },
  };
}

// Resident set size from /proc/self/status, after handing freed heap back to the OS.
int64_t rss_bytes() {
  malloc_trim(0);
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kb = -1;
      std::string unit;
      fields >> kb >> unit;
      if (kb < 0 || unit != "kB")
        throw bench_error("unreadable VmRSS line: " + line);
      return kb * 1024;
    }
  }
  throw bench_error("no VmRSS in /proc/self/status");
}

} // namespace

double run_fjcreate(caf::actor_system& sys, const params& p) {
  int64_t n = p.at("n");
  caf::scoped_actor self{sys};
  int64_t acks = -1;
  auto t0 = clock_type::now();
  auto creator = sys.spawn(fj_creator);
  await_reply(self->request(creator, wait_limit, start_atom::value, n),
              [&](int64_t v) { acks = v; });
  double t = ms_since(t0);
  self->send_exit(creator, caf::exit_reason::user_shutdown);
  if (acks != n)
    throw bench_error(std::to_string(acks) + " children acknowledged, want " + std::to_string(n));
  return t;
}

double run_fib(caf::actor_system& sys, const params& p) {
  int64_t n = p.at("n");
  int64_t a = 0, b = 1;
  for (int64_t i = 0; i < n; ++i) {
    auto next = a + b;
    a = b;
    b = next;
  }
  caf::scoped_actor self{sys};
  int64_t got = -1;
  auto t0 = clock_type::now();
  auto root = sys.spawn(fib_actor);
  await_reply(self->request(root, wait_limit, fib_atom::value, n), [&](int64_t v) { got = v; });
  double t = ms_since(t0);
  if (got != a)
    throw bench_error("fib(" + std::to_string(n) + ") = " + std::to_string(got) + ", want "
                      + std::to_string(a));
  return t;
}

double run_skynet(caf::actor_system& sys, const params& p) {
  int64_t width = p.at("width");
  if (width < 2)
    throw bench_error("skynet needs width >= 2");
  int64_t leaves = 1;
  for (long i = 0; i < p.at("depth"); ++i)
    leaves *= width;
  caf::scoped_actor self{sys};
  int64_t got = -1;
  auto t0 = clock_type::now();
  auto root = sys.spawn(skynet_actor);
  await_reply(self->request(root, wait_limit, skynet_atom::value, int64_t{0}, leaves, width),
              [&](int64_t v) { got = v; });
  double t = ms_since(t0);
  int64_t want = leaves * (leaves - 1) / 2;
  if (got != want)
    throw bench_error("skynet sum " + std::to_string(got) + ", want " + std::to_string(want));
  return t;
}

// Spawns the idle actors from the main thread with actor_system::spawn, the way top-level
// actors are usually started in CAF, and keeps their handles (in CAF an actor that nobody
// references is released). Spawning them from inside one actor would queue every new actor on
// that actor's worker, and CAF 0.17's work stealing takes from the tail of a worker's queue in
// time linear in its length, which makes a million spawns from one actor quadratic (see the
// fjcreate notes in the README).
memory_result run_memory(caf::actor_system& sys, const params& p) {
  int64_t n = p.at("n");
  caf::scoped_actor self{sys};
  auto collector = sys.spawn(collector_actor);
  std::vector<actor> idle;
  int64_t before = rss_bytes();
  auto t0 = clock_type::now();
  auto reply = self->request(collector, wait_limit, await_atom::value, n);
  idle.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    idle.push_back(sys.spawn(idle_actor, collector));
  int64_t started = -1;
  await_reply(reply, [&](int64_t got, double) { started = got; });
  double spawn = ms_since(t0);
  if (started != n)
    throw bench_error(std::to_string(started) + " actors started, want " + std::to_string(n));
  int64_t after = rss_bytes();
  std::cerr << "memory: rss before " << before << " B, after " << after << " B, spawn " << spawn
            << " ms\n";
  for (auto& a : idle)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  idle.clear();
  self->send_exit(collector, caf::exit_reason::user_shutdown);
  return {spawn, static_cast<double>(after - before) / static_cast<double>(n)};
}

} // namespace micro
