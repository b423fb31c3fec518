// bench_messaging.cpp: the CAF messaging benches: pingpong, count, fjthrput and threadring.
//
// They measure message passing between a fixed set of actors: each runner spawns its actors,
// starts the clock, sends a request from a scoped_actor whose reply ends the work (delivered by
// a response_promise or a delegated request), stops the clock on the reply, and then sends the
// actors an exit outside the measured region.
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"

namespace micro {

using caf::actor;
using caf::behavior;
using caf::event_based_actor;
using caf::stateful_actor;

namespace {

void stop_all(caf::scoped_actor& self, const std::vector<actor>& actors) {
  for (auto& a : actors)
    self->send_exit(a, caf::exit_reason::user_shutdown);
}

// ---- pingpong -----------------------------------------------------------------------------

struct ping_state {
  int64_t n = 0;
  int64_t got = 0;
  caf::response_promise rp;
};

behavior ping_actor(stateful_actor<ping_state>* self, actor pong) {
  return {
    [=](start_atom, int64_t n) {
      auto& st = self->state;
      st.n = n;
      st.got = 0;
      st.rp = self->make_response_promise();
      self->send(pong, ping_atom::value);
    },
    [=](pong_atom) {
      auto& st = self->state;
      if (++st.got == st.n)
        st.rp.deliver(st.got);
      else
        self->send(pong, ping_atom::value);
    },
  };
}

behavior pong_actor(event_based_actor*) {
  // The returned value goes back to the sender of the ping.
  return {
    [](ping_atom) { return pong_atom::value; },
  };
}

// ---- count --------------------------------------------------------------------------------

struct counter_state {
  int64_t total = 0;
};

behavior counter_actor(stateful_actor<counter_state>* self) {
  return {
    [=](incr_atom) { ++self->state.total; },
    [=](total_atom) { return self->state.total; },
  };
}

behavior producer_actor(event_based_actor* self, actor counter) {
  return {
    [=](start_atom, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        self->send(counter, incr_atom::value);
      // The counter answers the original requester directly.
      return self->delegate(counter, total_atom::value);
    },
  };
}

// ---- fjthrput -----------------------------------------------------------------------------

struct worker_state {
  int64_t got = 0;
  double acc = 0;
};

behavior throughput_worker(stateful_actor<worker_state>* self, int64_t n, actor collector) {
  return {
    [=](work_atom) {
      auto& st = self->state;
      st.acc += compute(st.got);
      if (++st.got == n)
        self->send(collector, done_atom::value, st.acc);
    },
  };
}

} // namespace

// ---- shared collector (also used by big) ----------------------------------------------------

behavior collector_actor(stateful_actor<collector_state>* self) {
  return {
    [=](await_atom, int64_t want) {
      self->state.want = want;
      self->state.rp = self->make_response_promise();
    },
    [=](done_atom, double value) {
      auto& st = self->state;
      st.sum += value;
      if (++st.got == st.want)
        st.rp.deliver(st.got, st.sum);
    },
  };
}

namespace {

// ---- threadring ---------------------------------------------------------------------------

struct ring_state {
  actor next;
};

behavior ring_member(stateful_actor<ring_state>* self) {
  return {
    [=](next_atom, actor next) { self->state.next = std::move(next); },
    // The token travels as the original request, delegated from member to member; the member
    // that takes the last hop answers the requester.
    [=](start_atom, int64_t n) {
      self->delegate(self->state.next, token_atom::value, n - 1, int64_t{1});
    },
    [=](token_atom, int64_t left, int64_t hops) {
      if (left == 0)
        self->make_response_promise().deliver(hops);
      else
        self->delegate(self->state.next, token_atom::value, left - 1, hops + 1);
    },
  };
}

} // namespace

double run_pingpong(caf::actor_system& sys, const params& p) {
  int64_t n = p.at("n");
  auto pong = sys.spawn(pong_actor);
  auto ping = sys.spawn(ping_actor, pong);
  caf::scoped_actor self{sys};
  int64_t got = -1;
  auto t0 = clock_type::now();
  await_reply(self->request(ping, wait_limit, start_atom::value, n),
              [&](int64_t v) { got = v; });
  double t = ms_since(t0);
  stop_all(self, {ping, pong});
  if (got != n)
    throw bench_error("ping got " + std::to_string(got) + " pongs, want " + std::to_string(n));
  return t;
}

double run_count(caf::actor_system& sys, const params& p) {
  int64_t n = p.at("n");
  auto counter = sys.spawn(counter_actor);
  auto producer = sys.spawn(producer_actor, counter);
  caf::scoped_actor self{sys};
  int64_t total = -1;
  auto t0 = clock_type::now();
  await_reply(self->request(producer, wait_limit, start_atom::value, n),
              [&](int64_t v) { total = v; });
  double t = ms_since(t0);
  stop_all(self, {producer, counter});
  if (total != n)
    throw bench_error("counter total " + std::to_string(total) + ", want " + std::to_string(n));
  return t;
}

double run_fjthrput(caf::actor_system& sys, const params& p) {
  int64_t n = p.at("n");
  int64_t count = p.at("actors");
  auto collector = sys.spawn(collector_actor);
  std::vector<actor> workers;
  for (int64_t i = 0; i < count; ++i)
    workers.push_back(sys.spawn(throughput_worker, n, collector));
  caf::scoped_actor self{sys};
  int64_t finished = -1;
  auto t0 = clock_type::now();
  auto reply = self->request(collector, wait_limit, await_atom::value, count);
  for (int64_t i = 0; i < n; ++i)
    for (auto& w : workers)
      self->send(w, work_atom::value);
  await_reply(reply, [&](int64_t got, double) { finished = got; });
  double t = ms_since(t0);
  workers.push_back(collector);
  stop_all(self, workers);
  if (finished != count)
    throw bench_error(std::to_string(finished) + " workers finished, want "
                      + std::to_string(count));
  return t;
}

double run_threadring(caf::actor_system& sys, const params& p) {
  int64_t members = p.at("actors");
  int64_t n = p.at("n");
  if (members < 2)
    throw bench_error("threadring needs actors >= 2");
  std::vector<actor> ring;
  for (int64_t i = 0; i < members; ++i)
    ring.push_back(sys.spawn(ring_member));
  caf::scoped_actor self{sys};
  for (int64_t i = 0; i < members; ++i)
    self->send(ring[i], next_atom::value, ring[(i + 1) % members]);
  int64_t hops = -1;
  auto t0 = clock_type::now();
  await_reply(self->request(ring[0], wait_limit, start_atom::value, n),
              [&](int64_t v) { hops = v; });
  double t = ms_since(t0);
  stop_all(self, ring);
  if (hops != n)
    throw bench_error("token made " + std::to_string(hops) + " hops, want " + std::to_string(n));
  return t;
}

} // namespace micro
