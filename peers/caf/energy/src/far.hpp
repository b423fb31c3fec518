// far.hpp: the second OS process of the CAF energy peer's distributed mode.
//
// Rules:
//   1. far_process::start runs this same executable as `energy --far`, a plain child
//      (posix_spawn: same process group and session, never detached), with a pipe as its stdin
//      and another as its stdout. It is started once, before the first repetition.
//   2. The far process spawns a host actor (actors.hpp, rule 5), publishes it with CAF's
//      middleman on 127.0.0.1 and an ephemeral port, writes that port as one line to stdout,
//      then blocks reading stdin and exits at once on end-of-file: when the main process closes
//      the pipe, or dies however it dies.
//   3. The main process waits 30 s at most for the port, connects with remote_actor on
//      127.0.0.1, and announces "energy: far process ... is OS process N" on stderr.
//   4. stop() closes the pipe and reaps the child (SIGKILL after 5 s); kill() SIGKILLs and
//      reaps at once (the failure path; the destructor does it too).
#pragma once

#include <sys/types.h>

#include "caf/all.hpp"

namespace energy {

/// Entry point of `energy --far` (rule 2). Returns the exit status.
int far_main();

class far_process {
public:
  far_process() = default;
  far_process(const far_process&) = delete;
  far_process& operator=(const far_process&) = delete;
  ~far_process() { kill(); }

  /// Starts the far process and returns its host actor (rules 1, 3). Throws
  /// std::runtime_error saying what failed.
  caf::actor start(caf::actor_system& sys);
  /// Rule 4: polite stop.
  void stop();
  /// Rule 4: SIGKILL and reap, if running.
  void kill();

private:
  pid_t pid_ = -1;
  int to_child_ = -1;
};

} // namespace energy
