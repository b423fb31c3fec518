// bench_meetings.cpp: the CAF many-to-many benches: chameneos (Savina's mall and creatures) and
// big (every actor pings random peers, seeded).
//
// Both end when every participant has reported to one actor holding a response promise for
// the scoped_actor's request; the runner checks the reported totals.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"

namespace micro {

using caf::actor;
using caf::behavior;
using caf::stateful_actor;

namespace {

// ---- chameneos ----------------------------------------------------------------------------

// Colours are 0 (blue), 1 (red), 2 (yellow); after a meeting both take the complement.
int32_t complement(int32_t a, int32_t b) {
  return a == b ? a : 3 - a - b;
}

struct creature_state {
  int32_t colour = 0;
  int64_t meetings = 0;
};

behavior creature(stateful_actor<creature_state>* self, actor mall, int32_t colour) {
  self->state.colour = colour;
  self->send(mall, meet_atom::value, caf::actor_cast<actor>(self), colour);
  return {
    // The mall paired this waiting creature with `other`.
    [=](meet_atom, const actor& other, int32_t other_colour) {
      auto& st = self->state;
      st.colour = complement(st.colour, other_colour);
      ++st.meetings;
      self->send(other, change_atom::value, st.colour);
      self->send(mall, meet_atom::value, caf::actor_cast<actor>(self), st.colour);
    },
    [=](change_atom, int32_t c) {
      auto& st = self->state;
      st.colour = c;
      ++st.meetings;
      self->send(mall, meet_atom::value, caf::actor_cast<actor>(self), st.colour);
    },
    [=](leave_atom) {
      self->send(mall, departed_atom::value, self->state.meetings);
      self->quit();
    },
  };
}

struct mall_state {
  int64_t n = 0;
  int64_t meetings = 0;
  int64_t departed = 0;
  int64_t sum = 0;
  actor waiting;
  int32_t waiting_colour = 0;
  std::vector<actor> creatures;
  caf::response_promise rp;
};

// Pairs meeting requests until n meetings happened, then sends every creature that asks again
// away, and answers the start request with the sum of the creatures' meetings.
behavior mall(stateful_actor<mall_state>* self, int64_t n, int64_t creatures) {
  self->state.n = n;
  return {
    [=](start_atom) {
      auto& st = self->state;
      st.rp = self->make_response_promise();
      auto me = caf::actor_cast<actor>(self);
      for (int64_t i = 0; i < creatures; ++i)
        st.creatures.push_back(self->spawn(creature, me, static_cast<int32_t>(i % 3)));
    },
    [=](meet_atom, actor from, int32_t colour) {
      auto& st = self->state;
      if (st.meetings >= st.n) {
        self->send(from, leave_atom::value);
      } else if (!st.waiting) {
        st.waiting = std::move(from);
        st.waiting_colour = colour;
      } else {
        ++st.meetings;
        self->send(st.waiting, meet_atom::value, from, colour);
        st.waiting = nullptr;
      }
    },
    [=](departed_atom, int64_t meetings) {
      auto& st = self->state;
      st.sum += meetings;
      if (++st.departed == creatures) {
        st.creatures.clear();
        st.rp.deliver(st.sum);
      }
    },
  };
}

// ---- big ----------------------------------------------------------------------------------

struct big_state {
  int64_t pongs = 0;
  std::vector<actor> peers;
  std::mt19937_64 rng;
};

// Sends n pings, one at a time, each to a peer drawn from its own seeded generator, answers
// every ping with a pong, and reports to the collector after n pongs.
behavior big_actor(stateful_actor<big_state>* self, int64_t id, int64_t n, int64_t seed,
                   actor collector) {
  self->state.rng.seed(static_cast<uint64_t>(seed) * 1000003u + static_cast<uint64_t>(id));
  auto send_ping = [=] {
    auto& st = self->state;
    std::uniform_int_distribution<int64_t> pick(0, static_cast<int64_t>(st.peers.size()) - 2);
    auto k = pick(st.rng);
    if (k >= id)
      ++k; // never itself
    self->send(st.peers[k], ping_atom::value);
  };
  return {
    [=](peers_atom, const std::vector<actor>& peers) {
      self->state.peers = peers;
      send_ping();
    },
    [](ping_atom) { return pong_atom::value; },
    [=](pong_atom) {
      auto& st = self->state;
      if (++st.pongs == n) {
        self->send(collector, done_atom::value, static_cast<double>(st.pongs));
        st.peers.clear(); // drop the handles so the actors can be released
      } else {
        send_ping();
      }
    },
  };
}

} // namespace

double run_chameneos(caf::actor_system& sys, const params& p) {
  int64_t creatures = p.at("chameneos");
  int64_t n = p.at("n");
  if (creatures < 2)
    throw bench_error("chameneos needs chameneos >= 2");
  auto m = sys.spawn(mall, n, creatures);
  caf::scoped_actor self{sys};
  int64_t met = -1;
  auto t0 = clock_type::now();
  await_reply(self->request(m, wait_limit, start_atom::value), [&](int64_t v) { met = v; });
  double t = ms_since(t0);
  self->send_exit(m, caf::exit_reason::user_shutdown);
  if (met != 2 * n)
    throw bench_error("creatures met " + std::to_string(met) + " times, want "
                      + std::to_string(2 * n));
  return t;
}

double run_big(caf::actor_system& sys, const params& p) {
  int64_t n = p.at("n");
  int64_t count = p.at("actors");
  int64_t seed = p.at("seed");
  if (count < 2)
    throw bench_error("big needs actors >= 2");
  auto collector = sys.spawn(collector_actor);
  std::vector<actor> actors;
  for (int64_t i = 0; i < count; ++i)
    actors.push_back(sys.spawn(big_actor, i, n, seed, collector));
  caf::scoped_actor self{sys};
  int64_t finished = -1;
  double pongs = -1;
  auto t0 = clock_type::now();
  auto reply = self->request(collector, wait_limit, await_atom::value, count);
  for (auto& a : actors)
    self->send(a, peers_atom::value, actors);
  await_reply(reply, [&](int64_t got, double sum) {
    finished = got;
    pongs = sum;
  });
  double t = ms_since(t0);
  for (auto& a : actors)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(collector, caf::exit_reason::user_shutdown);
  if (finished != count)
    throw bench_error(std::to_string(finished) + " actors finished, want "
                      + std::to_string(count));
  if (pongs != static_cast<double>(n) * static_cast<double>(count))
    throw bench_error("wrong number of pongs in all");
  return t;
}

} // namespace micro
