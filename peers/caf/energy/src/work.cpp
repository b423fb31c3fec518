// work.cpp: one repetition of each CAF energy workload, driven from a scoped_actor (rules in
// work.hpp).
#include "work.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "actors.hpp"
#include "events.hpp"

namespace energy {

namespace {

using caf::actor;

constexpr auto setup_limit = std::chrono::seconds(30);
constexpr auto stop_limit = std::chrono::seconds(10);
constexpr auto rep_limit = std::chrono::seconds(3600); // caf::duration has no hours

// Asks the host actor to spawn a far actor and returns its handle (rule 1).
template <class... Ts>
actor ask_spawn(caf::scoped_actor& self, const actor& host, Ts... xs) {
  actor out;
  std::string why = "no answer within 30 s";
  self->request(host, setup_limit, xs...)
    .receive([&](actor& a) { out = std::move(a); },
             [&](caf::error& e) { why = caf::to_string(e); });
  if (!out)
    throw rep_error("the host actor did not spawn the far actors: " + why);
  self->monitor(out);
  return out;
}

// Sends the exit and waits for the down message of the (only) monitored actor (rule 3).
void stop(caf::scoped_actor& self, const actor& a) {
  self->send_exit(a, caf::exit_reason::user_shutdown);
  bool down = false;
  self->receive([&](const caf::down_msg&) { down = true; },
                caf::after(stop_limit) >> [] {});
  if (!down)
    throw rep_error("a far actor did not stop within 10 s of its exit message");
}

rep_result prime_rep(caf::scoped_actor& self, const actor& host, const config& c) {
  auto p = ask_spawn(self, host, spawn_atom::value, prime_atom::value);
  int count = -1;
  std::string why = "no answer within the rep limit";
  auto range = static_cast<int>(c.range); // at most 10^9 (config.hpp rule 2)
  auto t0 = now_us();
  self->request(p, rep_limit, range)
    .receive([&](int n) { count = n; }, [&](caf::error& e) { why = caf::to_string(e); });
  auto t1 = now_us();
  if (count < 0)
    throw rep_error("the prime actor did not answer: " + why);
  stop(self, p);
  return {t0, t1, count, 0};
}

rep_result ping_rep(caf::actor_system& sys, caf::scoped_actor& self, const actor& host,
                    const config& c, int expected) {
  bool prime = c.work == workload::ping_pong_lb_prime;
  auto target = c.work == workload::ping_pong
                  ? ask_spawn(self, host, spawn_atom::value, server_atom::value)
                  : ask_spawn(self, host, spawn_atom::value, lb_atom::value, c.servers, prime);
  auto main = caf::actor_cast<actor>(self);
  std::vector<actor> clients;
  clients.reserve(static_cast<size_t>(c.clients));
  for (int64_t k = 0; k < c.clients; ++k)
    clients.push_back(sys.spawn(client_actor, target, main, c.msgs, prime,
                                static_cast<int>(c.range), expected));
  auto deadline = std::chrono::steady_clock::now() + rep_limit;
  auto t0 = now_us();
  for (auto& cl : clients)
    self->send(cl, go_atom::value);
  int64_t pongs = 0;
  int64_t wrong = 0;
  for (int64_t k = 0; k < c.clients; ++k) {
    bool got = false;
    std::string why;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    self->receive(
      [&](done_atom, int64_t p, int64_t w) {
        pongs += p;
        wrong += w;
        got = true;
      },
      [&](const caf::down_msg& dm) {
        why = "the server or load balancer went down: " + caf::to_string(dm.reason);
      },
      caf::after(std::max(left, std::chrono::milliseconds(0)))
        >> [&] { why = std::to_string(c.clients - k) + " clients did not finish within 1 hour"; });
    if (!got)
      throw rep_error(why);
  }
  auto t1 = now_us();
  clients.clear();
  stop(self, target);
  return {t0, t1, pongs, wrong};
}

} // namespace

rep_result run_rep(caf::actor_system& sys, const actor& host, const config& c, int expected) {
  caf::scoped_actor self{sys};
  if (c.work == workload::prime)
    return prime_rep(self, host, c);
  return ping_rep(sys, self, host, c, expected);
}

} // namespace energy
