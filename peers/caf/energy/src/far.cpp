// far.cpp: starting, connecting and stopping the far process of distributed mode, and the far
// process's own main (rules in far.hpp).
#include "far.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "actors.hpp"
#include "caf/io/all.hpp"

extern char** environ;

namespace energy {

int far_main() {
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  caf::actor_system sys{cfg};
  auto host = sys.spawn(host_actor);
  auto port = sys.middleman().publish(host, 0, "127.0.0.1");
  if (!port) {
    std::cerr << "energy --far: cannot publish the host actor on 127.0.0.1: "
              << caf::to_string(port.error()) << '\n';
    std::_Exit(1);
  }
  std::printf("%u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  char buf[256];
  for (;;) {
    ssize_t n = ::read(0, buf, sizeof(buf));
    if (n > 0 || (n < 0 && errno == EINTR))
      continue;
    break; // end-of-file (or a broken pipe): the main process is done or gone
  }
  // Whatever actors are left belong to a finished run; skip the system's orderly shutdown,
  // which would wait for them.
  std::_Exit(0);
}

caf::actor far_process::start(caf::actor_system& sys) {
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  char arg0[] = "energy";
  char arg1[] = "--far";
  char* argv[] = {arg0, arg1, nullptr};
  int rc = posix_spawn(&pid_, "/proc/self/exe", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  if (rc != 0) {
    pid_ = -1;
    ::close(out[0]);
    throw std::runtime_error(std::string("cannot start the far process: ") + std::strerror(rc));
  }
  // Rule 3: one line with the port, within 30 s.
  std::string line;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  until - std::chrono::steady_clock::now())
                  .count();
    pollfd p{out[0], POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) {
      if (left > 0 && errno == EINTR)
        continue;
      ::close(out[0]);
      throw std::runtime_error("the far process did not report its port within 30 s");
    }
    char buf[64];
    ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n <= 0) {
      ::close(out[0]);
      throw std::runtime_error("the far process exited before reporting its port");
    }
    line.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  long port = std::strtol(line.c_str(), nullptr, 10);
  if (port <= 0 || port > 65535)
    throw std::runtime_error("the far process reported a bad port: " + line);
  auto host = sys.middleman().remote_actor("127.0.0.1", static_cast<uint16_t>(port));
  if (!host)
    throw std::runtime_error("cannot connect to the far process on 127.0.0.1:"
                             + std::to_string(port) + ": " + caf::to_string(host.error()));
  std::cerr << "energy: far process (host actor on 127.0.0.1:" << port << ") is OS process "
            << pid_ << std::endl;
  return *host;
}

void far_process::stop() {
  if (to_child_ >= 0) {
    ::close(to_child_);
    to_child_ = -1;
  }
  if (pid_ < 0)
    return;
  for (int k = 0; k < 50; ++k) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::cerr << "energy: the far process (OS process " << pid_
            << ") did not exit within 5 s of its stdin closing; killed\n";
  kill();
}

void far_process::kill() {
  if (to_child_ >= 0) {
    ::close(to_child_);
    to_child_ = -1;
  }
  if (pid_ < 0)
    return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

} // namespace energy
