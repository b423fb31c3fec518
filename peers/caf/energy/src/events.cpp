// events.cpp: the event writer of the CAF energy peer (rules in events.hpp).
#include "events.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

namespace energy {

int64_t now_us() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

event_log::event_log(const std::string& path, std::string run, std::string node) {
  prefix_ = ",\"run\":" + json_string(run) + ",\"rt\":\"caf\",\"node\":" + json_string(node)
            + ",\"ev\":";
  if (path.rfind("amqp://", 0) == 0) {
    amqp_ = std::make_unique<amqp_sink>(path, run);
    return;
  }
  if (path.find("://") != std::string::npos)
    throw std::runtime_error("TROUPE_EVENTS " + redact_url(path)
                             + ": only a file path or an amqp:// URL is supported by the CAF peer");
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("cannot open events file " + path + ": " + std::strerror(errno)
                             + " (TROUPE_EVENTS must name a writable file)");
}

event_log::~event_log() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool event_log::emit(const std::string& ev, const std::string& fields) {
  std::string line = "{\"ts_us\":" + std::to_string(now_us()) + prefix_ + json_string(ev)
                     + fields + "}";
  if (amqp_) {
    bool sent = amqp_->publish(line);
    // run_finished is the process's last line: every line must be confirmed before it exits.
    if (sent && ev == "run_finished")
      sent = amqp_->confirm_all();
    if (!sent && errors_++ == 0)
      std::fprintf(stderr, "energy: %s\n", amqp_->error().c_str());
    return sent;
  }
  line += '\n';
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ++errors_;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

} // namespace energy
