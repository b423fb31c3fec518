// config.cpp: a hand parser for the flat JSON object of the energy config, and its checks
// (the rules are in config.hpp). CAF 0.17 has no JSON reader, and the object is flat, so a
// few dozen lines suffice; strings keep their escapes as written (they are only compared with
// plain ASCII names and echoed back).
#include "config.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace energy {

namespace {

struct parser {
  const std::string& s;
  size_t i = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw config_error("config is not a flat JSON object: " + what + " at byte "
                       + std::to_string(i));
  }
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  // A string starting at s[i] == '"'; returns it as written, quotes included.
  std::string string_token() {
    size_t start = i++;
    while (i < s.size() && s[i] != '"') {
      if (static_cast<unsigned char>(s[i]) < 0x20)
        fail("control character in a string");
      i += s[i] == '\\' ? 2 : 1;
    }
    if (i >= s.size())
      fail("unterminated string");
    ++i;
    return s.substr(start, i - start);
  }
  // A value other than a string: a number, true, false or null, as written.
  std::string scalar_token() {
    size_t start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-'
                            || s[i] == '+' || s[i] == '.'))
      ++i;
    std::string t = s.substr(start, i - start);
    if (t.empty()) {
      if (i < s.size() && (s[i] == '{' || s[i] == '['))
        fail("nested objects and arrays are not supported");
      fail("expected a value");
    }
    bool number = std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-';
    if (!number && t != "true" && t != "false" && t != "null")
      fail("unknown literal " + t);
    return t;
  }
};

bool is_int(const std::string& v) {
  size_t k = (!v.empty() && v[0] == '-') ? 1 : 0;
  if (k == v.size() || v.size() - k > 18)
    return false;
  for (; k < v.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(v[k])))
      return false;
  return true;
}

// Members keep their keys as written, quotes included.
const std::string* find(const config& c, const std::string& key) {
  std::string quoted = "\"" + key + "\"";
  for (auto& m : c.members)
    if (m.first == quoted)
      return &m.second;
  return nullptr;
}

[[noreturn]] void bad(const std::string& key, const std::string* v, const std::string& allowed) {
  if (v == nullptr)
    throw config_error("config key " + key + " is missing: it must be " + allowed);
  throw config_error("config key " + key + " = " + *v + ": must be " + allowed);
}

int64_t int_at_least(const config& c, const std::string& key, int64_t min) {
  auto v = find(c, key);
  if (v == nullptr || !is_int(*v) || std::stoll(*v) < min)
    bad(key, v, "an integer >= " + std::to_string(min));
  return std::stoll(*v);
}

// range is counted in the seed's C++ int (actors.hpp rule 1).
int64_t int_in(const config& c, const std::string& key, int64_t min, int64_t max) {
  auto v = find(c, key);
  if (v == nullptr || !is_int(*v) || std::stoll(*v) < min || std::stoll(*v) > max)
    bad(key, v,
        "an integer from " + std::to_string(min) + " to " + std::to_string(max)
          + " (the lab's range key; the seed's programs count in a 32-bit int)");
  return std::stoll(*v);
}

template <class E, size_t N>
E one_of(const config& c, const std::string& key, const char* const (&names)[N],
         const E (&values)[N]) {
  auto v = find(c, key);
  if (v != nullptr)
    for (size_t k = 0; k < N; ++k)
      if (*v == "\"" + std::string(names[k]) + "\"")
        return values[k];
  std::string allowed = "one of ";
  for (size_t k = 0; k < N; ++k)
    allowed += std::string(k ? ", " : "") + "\"" + names[k] + "\"";
  bad(key, v, allowed);
}

const char* const workload_names[] = {"prime", "ping_pong", "ping_pong_lb", "ping_pong_lb_prime"};
const workload workload_values[] = {workload::prime, workload::ping_pong, workload::ping_pong_lb,
                                    workload::ping_pong_lb_prime};
const char* const mode_names[] = {"native", "distributed"};
const mode mode_values[] = {mode::native, mode::distributed};

} // namespace

const char* name_of(workload w) {
  return workload_names[static_cast<int>(w)];
}

std::string config::raw_json() const {
  std::string out = "{";
  for (size_t k = 0; k < members.size(); ++k)
    out += (k ? "," : "") + members[k].first + ":" + members[k].second;
  return out + "}";
}

config parse_config(const std::string& text) {
  config c;
  parser p{text};
  if (!p.eat('{'))
    p.fail("expected '{'");
  if (!p.eat('}')) {
    do {
      p.ws();
      if (p.i >= text.size() || text[p.i] != '"')
        p.fail("expected a string key");
      std::string key = p.string_token();
      if (!p.eat(':'))
        p.fail("expected ':' after key " + key);
      p.ws();
      std::string value = (p.i < text.size() && text[p.i] == '"') ? p.string_token()
                                                                   : p.scalar_token();
      c.members.emplace_back(key, value);
    } while (p.eat(','));
    if (!p.eat('}'))
      p.fail("expected ',' or '}'");
  }
  p.ws();
  if (p.i != text.size())
    p.fail("trailing data");
  c.work = one_of(c, "workload", workload_names, workload_values);
  c.where = one_of(c, "mode", mode_names, mode_values);
  c.clients = int_at_least(c, "clients", 1);
  c.msgs = int_at_least(c, "msgs", 1);
  c.servers = int_at_least(c, "servers", 1);
  c.range = int_in(c, "range", 2, 1000000000);
  c.reps = int_at_least(c, "reps", 1);
  return c;
}

config load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw config_error("cannot read config " + path + " (TROUPE_CONFIG names a missing file?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str());
}

} // namespace energy
