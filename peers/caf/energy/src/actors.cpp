// actors.cpp: the behaviours of the CAF energy actors (rules in actors.hpp): dynamically typed,
// event-based actors, atoms and built-in element types, as the seed's programs are written.
#include "actors.hpp"

#include <cmath>

namespace energy {

using caf::actor;
using caf::behavior;

bool is_prime(int n) {
  if (n < 2)
    return false;
  if (n == 2)
    return true;
  int max = static_cast<int>(std::sqrt(n));
  for (int i = 2; i <= max; ++i) {
    if (n % i == 0)
      return false;
  }
  return true;
}

int find_primes(int range) {
  int prime_count = 0;
  // The config keeps range <= 10^9, so ++n never overflows.
  for (int n = 2; n <= range; ++n) {
    if (is_prime(n))
      ++prime_count;
  }
  return prime_count;
}

behavior prime_actor(caf::event_based_actor*) {
  return {
    [](int range) -> int { return find_primes(range); },
  };
}

behavior ping_server_actor(caf::event_based_actor* self) {
  return {
    [=](const actor& client, ping_atom) { self->send(client, pong_atom::value); },
  };
}

behavior prime_server_actor(caf::event_based_actor* self) {
  return {
    [=](const actor& client, int prime_range) { self->send(client, find_primes(prime_range)); },
  };
}

behavior lb_actor(caf::stateful_actor<lb_state>* self, std::vector<actor> servers) {
  for (auto& s : servers)
    self->link_to(s);
  self->state.servers = std::move(servers);
  return {
    [=](const actor& client, ping_atom a) {
      auto& st = self->state;
      self->send(st.servers[st.server_index], client, a);
      st.server_index = (st.server_index + 1) % st.servers.size();
    },
    [=](const actor& client, int n) {
      auto& st = self->state;
      self->send(st.servers[st.server_index], client, n);
      st.server_index = (st.server_index + 1) % st.servers.size();
    },
  };
}

behavior client_actor(caf::stateful_actor<client_state>* self, actor target, actor main,
                      int64_t msgs, bool prime, int range, int expected) {
  self->state.left = msgs;
  auto ask = [=] {
    auto me = caf::actor_cast<actor>(self);
    if (prime)
      self->send(target, me, range);
    else
      self->send(target, me, ping_atom::value);
  };
  auto got = [=] {
    auto& st = self->state;
    ++st.pongs;
    if (--st.left > 0) {
      ask();
    } else {
      self->send(main, done_atom::value, st.pongs, st.wrong);
      self->quit();
    }
  };
  return {
    [=](go_atom) { ask(); },
    [=](pong_atom) { got(); },
    [=](int found_primes) {
      if (found_primes != expected)
        ++self->state.wrong;
      got();
    },
  };
}

behavior host_actor(caf::event_based_actor* self) {
  return {
    [=](spawn_atom, prime_atom) { return self->spawn(prime_actor); },
    [=](spawn_atom, server_atom) { return self->spawn(ping_server_actor); },
    [=](spawn_atom, lb_atom, int64_t n, bool prime) {
      std::vector<actor> servers;
      for (int64_t k = 0; k < n; ++k)
        servers.push_back(prime ? self->spawn(prime_server_actor) : self->spawn(ping_server_actor));
      return self->spawn(lb_actor, std::move(servers));
    },
  };
}

} // namespace energy
