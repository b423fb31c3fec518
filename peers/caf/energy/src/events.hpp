// events.hpp: the event lines the CAF energy peer appends to TROUPE_EVENTS.
//
// Rules: every line is one JSON object whose first members are ts_us (CLOCK_REALTIME, µs since
// the epoch, taken when the line is written), run, rt ("caf"), node, ev; the rest is appended as
// given (already JSON). Each line goes out with a single write(2) on an O_APPEND descriptor, so
// it reaches the file whole and at once; the peer writes a handful of lines per run (never
// during a measured interval), so no buffer and nothing dropped: dropped_events is always 0.
// TROUPE_EVENTS may also be an amqp:// URL: each line is then published to RabbitMQ at once
// (amqp_sink.hpp), and emitting `run_finished`, the process's last line, waits until the broker
// confirmed every line; a line not delivered counts as a write error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "amqp_sink.hpp"

namespace energy {

/// Microseconds since the epoch on CLOCK_REALTIME.
int64_t now_us();

/// Quotes and escapes `s` as a JSON string.
std::string json_string(const std::string& s);

class event_log {
public:
  /// Opens (creates, appends to) `path`, or connects to the broker when `path` is an amqp://
  /// URL. Throws std::runtime_error naming the path and errno, or the URL (password hidden).
  event_log(const std::string& path, std::string run, std::string node);
  ~event_log();
  event_log(const event_log&) = delete;
  event_log& operator=(const event_log&) = delete;

  /// Writes {"ts_us":..,"run":..,"rt":"caf","node":..,"ev":ev<fields>} where `fields` is
  /// empty or starts with a comma. Returns false (and counts it) when the write failed.
  bool emit(const std::string& ev, const std::string& fields);

  int write_errors() const { return errors_; }

private:
  int fd_ = -1;
  std::unique_ptr<amqp_sink> amqp_;
  std::string prefix_;
  int errors_ = 0;
};

} // namespace energy
