// config.hpp: the energy config the lab hands the CAF peer (TROUPE_CONFIG), read and checked.
//
// It owns the rules of the energy peer contract's config (peers/erlang/README.md, "The energy
// peer contract"):
//   1. The file holds one flat JSON object: values are strings, integers (or other numbers,
//      true/false/null, kept as written); a nested object or array is refused.
//   2. workload is "prime" | "ping_pong" | "ping_pong_lb" | "ping_pong_lb_prime"; mode is
//      "native" | "distributed"; clients, msgs, servers, reps are integers >= 1; range is an
//      integer from 2 to 10^9, the lab's bound (the seed's programs count primes in a C++ int).
//      seed and sample_ms belong to the lab and are not read.
//   3. A bad input throws config_error whose text names the key, the value and what is
//      allowed; main prints it as one stderr line and exits 2.
//   4. raw_json() gives the object back (keys in file order, values as written) for run_started.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace energy {

/// A config the program cannot run; the text says what was wrong and what is allowed.
struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class workload { prime, ping_pong, ping_pong_lb, ping_pong_lb_prime };
enum class mode { native, distributed };

struct config {
  workload work = workload::prime;
  mode where = mode::native;
  int64_t clients = 1;
  int64_t msgs = 1;
  int64_t servers = 1;
  int64_t range = 2;
  int64_t reps = 1;
  /// Every member as (key, value as written in the file, JSON), in file order.
  std::vector<std::pair<std::string, std::string>> members;

  /// The object as one JSON line, for run_started's "config".
  std::string raw_json() const;
};

/// Parses and checks JSON text (rules 1-3). Throws config_error.
config parse_config(const std::string& text);

/// Reads `path` and parses it. Throws config_error (also for an unreadable file).
config load_config(const std::string& path);

/// The workload's name as the config spells it.
const char* name_of(workload w);

} // namespace energy
