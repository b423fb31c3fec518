// amqp_sink.cpp: publishing event lines to RabbitMQ with rabbitmq-c (rules in amqp_sink.hpp).
#include "amqp_sink.hpp"

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <sys/time.h>
#include <vector>

namespace energy {

namespace {

constexpr amqp_channel_t kChannel = 1;
const char* const kExchange = "troupe.events";

amqp_connection_state_t state(void* p) { return static_cast<amqp_connection_state_t>(p); }

std::string reply_text(const amqp_rpc_reply_t& r) {
  switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return "ok";
    case AMQP_RESPONSE_NONE:
      return "no reply";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return amqp_error_string2(r.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        auto* m = static_cast<amqp_connection_close_t*>(r.reply.decoded);
        return "the broker closed the connection: " + std::to_string(m->reply_code) + " "
               + std::string(static_cast<char*>(m->reply_text.bytes), m->reply_text.len);
      }
      if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        auto* m = static_cast<amqp_channel_close_t*>(r.reply.decoded);
        return "the broker closed the channel: " + std::to_string(m->reply_code) + " "
               + std::string(static_cast<char*>(m->reply_text.bytes), m->reply_text.len);
      }
      return "the broker answered method " + std::to_string(r.reply.id);
  }
  return "unknown reply";
}

} // namespace

std::string redact_url(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos)
    return url;
  auto host_end = url.find('/', scheme + 3);
  auto auth_end = host_end == std::string::npos ? url.size() : host_end;
  auto at = url.rfind('@', auth_end);
  if (at == std::string::npos || at < scheme + 3)
    return url;
  auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at)
    return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

amqp_sink::amqp_sink(const std::string& url, const std::string& run_id)
  : key_(run_id), url_(redact_url(url)) {
  auto fail_connect = [&](const std::string& what) {
    if (conn_ != nullptr) {
      amqp_destroy_connection(state(conn_));
      conn_ = nullptr;
    }
    return std::runtime_error("cannot reach the RabbitMQ broker at " + url_ + ": " + what
                              + "; start one with `bash scripts/rabbitmq.sh start DIR` (install it "
                                "with `bash scripts/install-rabbitmq.sh`) and pass the URL it prints");
  };
  if (run_id.size() > 255)
    throw std::runtime_error("run id " + run_id
                             + " is longer than 255 bytes, the most an AMQP routing key holds");
  std::vector<char> buf(url.begin(), url.end());
  buf.push_back('\0');
  amqp_connection_info info{};
  amqp_default_connection_info(&info);
  if (amqp_parse_url(buf.data(), &info) != AMQP_STATUS_OK || info.ssl)
    throw std::runtime_error("bad amqp URL " + url_
                             + " (expected amqp://USER:PASS@HOST:PORT/VHOST; amqps is not supported)");
  conn_ = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(state(conn_));
  if (socket == nullptr)
    throw fail_connect("cannot create a socket");
  timeval tv{kConnectTimeoutS, 0};
  int rc = amqp_socket_open_noblock(socket, info.host, info.port, &tv);
  if (rc != AMQP_STATUS_OK)
    throw fail_connect(std::string("TCP connect to ") + info.host + ":" + std::to_string(info.port)
                       + ": " + amqp_error_string2(rc));
  amqp_set_handshake_timeout(state(conn_), &tv);
  amqp_set_rpc_timeout(state(conn_), &tv);
  // Heartbeats off (0): the connection lives for one run; a lost broker shows up on the next
  // publish or confirm.
  amqp_rpc_reply_t r = amqp_login(state(conn_), info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                                  info.user, info.password);
  if (r.reply_type != AMQP_RESPONSE_NORMAL)
    throw fail_connect("login: " + reply_text(r));
  // The broker's answer to the method just sent; `what` names the step in the error.
  auto answered = [&](const std::string& what) {
    amqp_rpc_reply_t reply = amqp_get_rpc_reply(state(conn_));
    if (reply.reply_type != AMQP_RESPONSE_NORMAL)
      throw fail_connect(what + ": " + reply_text(reply));
  };
  amqp_channel_open(state(conn_), kChannel);
  answered("opening a channel");
  amqp_exchange_declare(state(conn_), kChannel, amqp_cstring_bytes(kExchange),
                        amqp_cstring_bytes("topic"), 0, 0, 0, 0, amqp_empty_table);
  answered("declaring the exchange troupe.events");
  amqp_confirm_select(state(conn_), kChannel);
  answered("turning publisher confirms on");
}

amqp_sink::~amqp_sink() {
  if (conn_ == nullptr)
    return;
  if (error_.empty()) {
    amqp_channel_close(state(conn_), kChannel, AMQP_REPLY_SUCCESS);
    amqp_connection_close(state(conn_), AMQP_REPLY_SUCCESS);
  }
  amqp_destroy_connection(state(conn_));
}

void amqp_sink::fail(const std::string& what) {
  if (error_.empty())
    error_ = "amqp publisher to " + url_ + ": " + what;
}

bool amqp_sink::publish(const std::string& line) {
  if (!error_.empty())
    return false;
  if (pending_.size() >= kMaxUnconfirmed && !confirm_all())
    return false;
  amqp_bytes_t body{line.size(), const_cast<char*>(line.data())};
  int rc = amqp_basic_publish(state(conn_), kChannel, amqp_cstring_bytes(kExchange),
                              amqp_cstring_bytes(key_.c_str()), 1, 0, nullptr, body);
  if (rc != AMQP_STATUS_OK) {
    fail(std::string("publishing: ") + amqp_error_string2(rc));
    return false;
  }
  pending_.insert(++published_); // delivery tags are 1, 2, ... in publishing order
  return take_frames(false);
}

// Reads the broker's frames: all that already arrived (block = false), or until every line is
// confirmed or kConfirmTimeoutS passed (block = true).
bool amqp_sink::take_frames(bool block) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kConfirmTimeoutS);
  // Bounded: every turn either takes a frame or ends the loop; the count bound is a backstop.
  for (uint64_t turn = 0; turn < 100 * kMaxUnconfirmed + 1000 && error_.empty(); ++turn) {
    if (block && pending_.empty())
      return true;
    timeval tv{0, 0};
    if (block) {
      auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        fail(std::to_string(pending_.size()) + " lines not confirmed by the broker within "
             + std::to_string(kConfirmTimeoutS) + " s");
        break;
      }
      tv.tv_sec = left.count() / 1000000;
      tv.tv_usec = left.count() % 1000000;
    }
    amqp_frame_t frame;
    int rc = amqp_simple_wait_frame_noblock(state(conn_), &frame, &tv);
    if (rc == AMQP_STATUS_TIMEOUT) {
      if (!block)
        return true;
      continue;
    }
    if (rc != AMQP_STATUS_OK) {
      fail(std::string("reading from the broker: ") + amqp_error_string2(rc));
      break;
    }
    if (frame.frame_type != AMQP_FRAME_METHOD)
      continue; // a heartbeat; a returned message's content is read with its method below
    switch (frame.payload.method.id) {
      case AMQP_BASIC_ACK_METHOD: {
        auto* m = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
        settle(m->delivery_tag, m->multiple != 0);
        break;
      }
      case AMQP_BASIC_NACK_METHOD: {
        auto* m = static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded);
        nacked_ += settle(m->delivery_tag, m->multiple != 0);
        break;
      }
      case AMQP_BASIC_RETURN_METHOD: {
        ++returned_;
        amqp_message_t msg;
        amqp_rpc_reply_t r = amqp_read_message(state(conn_), frame.channel, &msg, 0);
        if (r.reply_type != AMQP_RESPONSE_NORMAL)
          fail("reading a returned message: " + reply_text(r));
        else
          amqp_destroy_message(&msg);
        break;
      }
      case AMQP_CHANNEL_CLOSE_METHOD: {
        auto* m = static_cast<amqp_channel_close_t*>(frame.payload.method.decoded);
        fail("the broker closed the channel: " + std::to_string(m->reply_code) + " "
             + std::string(static_cast<char*>(m->reply_text.bytes), m->reply_text.len));
        break;
      }
      case AMQP_CONNECTION_CLOSE_METHOD: {
        auto* m = static_cast<amqp_connection_close_t*>(frame.payload.method.decoded);
        fail("the broker closed the connection: " + std::to_string(m->reply_code) + " "
             + std::string(static_cast<char*>(m->reply_text.bytes), m->reply_text.len));
        break;
      }
      default:
        break;
    }
    amqp_maybe_release_buffers(state(conn_));
  }
  return error_.empty();
}

size_t amqp_sink::settle(uint64_t tag, bool multiple) {
  if (!multiple)
    return pending_.erase(tag);
  auto end = pending_.upper_bound(tag);
  size_t n = static_cast<size_t>(std::distance(pending_.begin(), end));
  pending_.erase(pending_.begin(), end);
  return n;
}

bool amqp_sink::confirm_all() {
  if (!take_frames(true))
    return false;
  if (nacked_ > 0 || returned_ > 0) {
    fail("of " + std::to_string(published_) + " lines the broker refused " + std::to_string(nacked_)
         + " and could not route " + std::to_string(returned_) + " (is a collector bound to run id "
         + key_ + "? start it before the workload)");
    return false;
  }
  return true;
}

} // namespace energy
