// actors.cpp: the behaviours of the CAF energy actors (rules in actors.hpp): dynamically typed,
// event-based actors, atoms and built-in element types, as CAF's own examples are written.
#include "actors.hpp"

namespace energy {

using caf::actor;
using caf::behavior;

int64_t count_primes(int64_t range) {
  int64_t count = 0;
  for (int64_t n = 2; n <= range; ++n) {
    bool prime = true;
    for (int64_t d = 2; d * d <= n; ++d) {
      if (n % d == 0) {
        prime = false;
        break;
      }
    }
    if (prime)
      ++count;
  }
  return count;
}

behavior prime_actor(caf::event_based_actor*) {
  return {
    [](count_atom, int64_t range) { return count_primes(range); },
  };
}

behavior server_actor(caf::event_based_actor* self) {
  return {
    [=](ping_atom, const actor& client) { self->send(client, pong_atom::value); },
    [=](prime_atom, const actor& client, int64_t range) {
      self->send(client, primes_atom::value, count_primes(range));
    },
  };
}

behavior lb_actor(caf::stateful_actor<lb_state>* self, std::vector<actor> servers) {
  for (auto& s : servers)
    self->link_to(s);
  self->state.servers = std::move(servers);
  auto next = [self]() -> const actor& {
    auto& st = self->state;
    const actor& s = st.servers[st.next];
    st.next = (st.next + 1) % st.servers.size();
    return s;
  };
  return {
    [=](ping_atom a, const actor& client) { self->send(next(), a, client); },
    [=](prime_atom a, const actor& client, int64_t range) { self->send(next(), a, client, range); },
  };
}

behavior client_actor(caf::stateful_actor<client_state>* self, actor target, actor main,
                      int64_t msgs, bool prime, int64_t range, int64_t expected) {
  self->state.left = msgs;
  auto ask = [=] {
    auto me = caf::actor_cast<actor>(self);
    if (prime)
      self->send(target, prime_atom::value, me, range);
    else
      self->send(target, ping_atom::value, me);
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
    [=](primes_atom, int64_t n) {
      if (n != expected)
        ++self->state.wrong;
      got();
    },
  };
}

behavior host_actor(caf::event_based_actor* self) {
  return {
    [=](spawn_atom, prime_atom) { return self->spawn(prime_actor); },
    [=](spawn_atom, server_atom) { return self->spawn(server_actor); },
    [=](spawn_atom, lb_atom, int64_t n) {
      std::vector<actor> servers;
      for (int64_t k = 0; k < n; ++k)
        servers.push_back(self->spawn(server_actor));
      return self->spawn(lb_actor, std::move(servers));
    },
  };
}

} // namespace energy
