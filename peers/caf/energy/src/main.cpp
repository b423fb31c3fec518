// main.cpp: entry point of the CAF energy peer (`peers/caf/energy/run`).
//
// `energy` reads the lab's environment (TROUPE_CONFIG, TROUPE_EVENTS, TROUPE_RUN_ID, optional
// TROUPE_NODE; TROUPE_SCHEDULE is empty for energy and not read), checks the config before
// anything starts, then writes:
//   run_started {workload: "energy", config, version}
//   [distributed: the far process is started, once]
//   for each rep r: work {rep: r, start_us, end_us, result}   (work.hpp)
//   [distributed: the far process is stopped and reaped]
//   run_finished {dropped_events: 0, errors} -> exit 0.
// errors counts wrong prime answers (ping_pong_lb_prime). Exit codes: 0 done; 2 bad input (one
// stderr line naming the key and the allowed values; no events); 1 failure during the run
// (run_finished still written with errors >= 1; the far process killed).
// `energy --far` is the far process of distributed mode (far.hpp).
#include <cstdlib>
#include <fcntl.h>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>

#include "actors.hpp"
#include "caf/io/all.hpp"
#include "config.hpp"
#include "events.hpp"
#include "far.hpp"
#include "work.hpp"

namespace {

using namespace energy;

// The lab starts us with stdin closed: keep fds 0-2 open so a pipe never lands on them.
void hold_std_fds() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0)
      ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}

std::string version() {
  return "CAF " + std::to_string(CAF_MAJOR_VERSION) + "." + std::to_string(CAF_MINOR_VERSION) + "."
         + std::to_string(CAF_PATCH_VERSION);
}

int run(const config& c, event_log& log) {
  bool distributed = c.where == mode::distributed;
  log.emit("run_started", ",\"workload\":\"energy\",\"config\":" + c.raw_json()
                            + ",\"version\":" + json_string(version()));
  std::cerr << "energy: " << name_of(c.work) << (distributed ? " distributed, " : " native, ")
            << c.reps << " reps, " << version() << std::endl;
  caf::actor_system_config cfg;
  if (distributed)
    cfg.load<caf::io::middleman>();
  caf::actor_system sys{cfg};
  far_process far;
  try {
    caf::actor host = distributed ? far.start(sys) : sys.spawn(host_actor);
    // The answer every ping_pong_lb_prime reply must carry, computed once, outside every
    // measured interval.
    int expected = c.work == workload::ping_pong_lb_prime ? find_primes(static_cast<int>(c.range)) : -1;
    int64_t errors = 0;
    for (int64_t r = 0; r < c.reps; ++r) {
      auto res = run_rep(sys, host, c, expected);
      log.emit("work", ",\"rep\":" + std::to_string(r) + ",\"start_us\":"
                         + std::to_string(res.start_us) + ",\"end_us\":" + std::to_string(res.end_us)
                         + ",\"result\":" + std::to_string(res.result));
      std::cerr << "energy: rep " << r << ": " << (res.end_us - res.start_us) / 1000.0
                << " ms, result " << res.result;
      if (res.wrong > 0)
        std::cerr << ", " << res.wrong << " wrong answers";
      std::cerr << std::endl;
      errors += res.wrong;
    }
    if (distributed)
      far.stop();
    else
      caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
    log.emit("run_finished", ",\"dropped_events\":0,\"errors\":" + std::to_string(errors));
    if (log.write_errors() > 0) {
      std::cerr << "energy: " << log.write_errors() << " event writes failed\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "energy: run failed: " << e.what() << std::endl;
    far.kill();
    log.emit("run_finished", ",\"dropped_events\":0,\"errors\":1");
    // Actors of the failed repetition may still run; the actor system's destructor would wait
    // for them.
    std::_Exit(1);
  }
}

} // namespace

int main(int argc, char** argv) {
  hold_std_fds();
  if (argc == 2 && std::string(argv[1]) == "--far")
    return far_main();
  if (argc != 1) {
    std::cerr << "usage: energy   (inputs from TROUPE_CONFIG, TROUPE_EVENTS, TROUPE_RUN_ID; see "
                 "peers/caf/README.md)\n";
    return 2;
  }
  const char* cfg_path = std::getenv("TROUPE_CONFIG");
  const char* ev_path = std::getenv("TROUPE_EVENTS");
  if (cfg_path == nullptr || *cfg_path == '\0' || ev_path == nullptr || *ev_path == '\0') {
    std::cerr << "energy: TROUPE_CONFIG and TROUPE_EVENTS must name the config and events files "
                 "(the lab sets them; see peers/caf/README.md)\n";
    return 2;
  }
  config c;
  try {
    c = load_config(cfg_path);
  } catch (const config_error& e) {
    std::cerr << "energy: " << e.what() << '\n';
    return 2;
  }
  std::unique_ptr<event_log> log;
  try {
    log = std::make_unique<event_log>(ev_path, env_or("TROUPE_RUN_ID", "local"),
                                      env_or("TROUPE_NODE", "caf-energy"));
  } catch (const std::exception& e) {
    std::cerr << "energy: " << e.what() << '\n';
    return 2;
  }
  return run(c, *log);
}
