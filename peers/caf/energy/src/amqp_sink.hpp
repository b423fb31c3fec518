// amqp_sink.hpp: the `amqp://` transport of the CAF energy peer's event lines (events.md,
// "Transport"), published with rabbitmq-c (Debian's librabbitmq-dev), RabbitMQ's C client.
//
// Rules:
// 1. Every line is one AMQP 0-9-1 message to the topic exchange `troupe.events` (declared as
//    the lab's collector declares it: topic, not durable), routing key = the run id, published
//    with `mandatory` and publisher confirms on, in the order of publish() calls, on one channel.
// 2. Connecting (TCP, login, channel, declaration, confirm mode) is bounded by kConnectTimeout;
//    a failure throws std::runtime_error naming the URL with its password hidden.
// 3. publish() sends at once (the peer emits from its main thread only, never from an actor and
//    never inside a measured interval) and takes the confirms that already arrived; at most
//    kMaxUnconfirmed lines await a confirm before publish() waits for them.
// 4. confirm_all() waits at most kConfirmTimeout for every confirm; a line the broker refused
//    (nack) or could not route (returned: no collector bound to the run id), a confirm that did
//    not come, or a closed channel or connection makes it (and every later call) fail, with the
//    reason in error().
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

namespace energy {

/// `url` with the password of its user replaced by ***.
std::string redact_url(const std::string& url);

class amqp_sink {
public:
  static constexpr int kConnectTimeoutS = 8;
  static constexpr int kConfirmTimeoutS = 30;
  static constexpr uint64_t kMaxUnconfirmed = 8192;

  /// Connects to `url` and publishes to routing key `run_id` (rules 1, 2).
  amqp_sink(const std::string& url, const std::string& run_id);
  ~amqp_sink();
  amqp_sink(const amqp_sink&) = delete;
  amqp_sink& operator=(const amqp_sink&) = delete;

  /// Publishes one line (without its newline); false once the sink has failed (rule 3).
  bool publish(const std::string& line);

  /// Waits for every confirm; false when any line was not delivered (rule 4).
  bool confirm_all();

  /// Why the sink failed, empty while it has not.
  const std::string& error() const { return error_; }

private:
  bool take_frames(bool block);
  size_t settle(uint64_t tag, bool multiple); // lines confirmed by one ack or nack
  void fail(const std::string& what);

  void* conn_ = nullptr; // amqp_connection_state_t, kept out of this header
  std::string key_;
  std::string url_; // redacted
  std::string error_;
  uint64_t published_ = 0;
  std::set<uint64_t> pending_; // delivery tags not yet acked or nacked
  uint64_t nacked_ = 0;
  uint64_t returned_ = 0;
};

} // namespace energy
