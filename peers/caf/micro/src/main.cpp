// main.cpp: the command line and measuring harness of the CAF micro-benchmark peer.
//
// It owns what every bench shares: parsing `<bench> [key=value ...]`, one unmeasured warm-up,
// `reps` measured iterations, the median, and the JSON lines the lab reads from stdout (logs and
// errors go to stderr only). The benches live in bench_*.cpp. One actor_system (default
// configuration) serves every iteration of a run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

using namespace micro;

struct bench_def {
  params defaults;
  std::function<double(caf::actor_system&, const params&)> run; // empty for memory
  std::function<double(const params&)> messages;                  // empty: no msgs_per_s
};

const std::map<std::string, bench_def>& benches() {
  static const std::map<std::string, bench_def> table{
    {"pingpong", {{{"n", 40000}}, run_pingpong,
                  [](const params& p) { return 2.0 * p.at("n"); }}},
    {"count", {{{"n", 1000000}}, run_count,
               [](const params& p) { return 1.0 * p.at("n"); }}},
    {"fjthrput", {{{"n", 10000}, {"actors", 60}}, run_fjthrput,
                  [](const params& p) { return 1.0 * p.at("n") * p.at("actors"); }}},
    {"fjcreate", {{{"n", 40000}}, run_fjcreate, nullptr}},
    {"threadring", {{{"actors", 100}, {"n", 100000}}, run_threadring,
                    [](const params& p) { return 1.0 * p.at("n"); }}},
    {"chameneos", {{{"chameneos", 100}, {"n", 200000}}, run_chameneos,
                   [](const params& p) { return 1.0 * p.at("n"); }}},
    {"big", {{{"n", 20000}, {"actors", 120}, {"seed", 42}}, run_big,
             [](const params& p) { return 2.0 * p.at("n") * p.at("actors"); }}},
    {"fib", {{{"n", 25}}, run_fib, nullptr}},
    {"skynet", {{{"depth", 6}, {"width", 10}}, run_skynet, nullptr}},
    {"memory", {{{"n", 1000000}}, nullptr, nullptr}},
  };
  return table;
}

[[noreturn]] void usage() {
  std::cerr << "usage: micro <bench> [key=value ...]\nbenches:";
  for (auto& kv : benches())
    std::cerr << ' ' << kv.first;
  std::cerr << '\n';
  std::exit(2);
}

// Formats a number with at most three decimals and no trailing zeros.
std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

void emit(const std::string& bench, const std::string& metric, double value,
          const std::string& unit, const params& p) {
  std::string out = "{\"bench\":\"" + bench + "\",\"runtime\":\"caf\",\"metric\":\"" + metric
                    + "\",\"value\":" + number(value) + ",\"unit\":\"" + unit
                    + "\",\"params\":{";
  bool first = true;
  for (auto& kv : p) {
    if (!first)
      out += ',';
    first = false;
    out += "\"" + kv.first + "\":" + std::to_string(kv.second);
  }
  out += "}}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

params parse(const bench_def& def, int argc, char** argv) {
  params p = def.defaults;
  p["reps"] = 3;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (eq == std::string::npos) {
      std::cerr << "argument \"" << a << "\" is not key=value\n";
      std::exit(2);
    }
    auto key = a.substr(0, eq);
    auto val = a.substr(eq + 1);
    if (p.count(key) == 0) {
      std::cerr << "unknown parameter \"" << key << "\" for this bench\n";
      std::exit(2);
    }
    char* end = nullptr;
    long x = std::strtol(val.c_str(), &end, 10);
    if (val.empty() || *end != '\0' || x < 0 || (x == 0 && key != "seed")) {
      std::cerr << "parameter " << key << "=\"" << val << "\" must be a positive integer\n";
      std::exit(2);
    }
    p[key] = x;
  }
  return p;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  auto m = xs.size() / 2;
  return xs.size() % 2 == 1 ? xs[m] : (xs[m - 1] + xs[m]) / 2;
}

int run_in(caf::actor_system& sys, const std::string& name, const bench_def& def, params p) {
  if (name == "memory") {
    // Accepts reps= like every bench, but measures once: a second spawn of n actors in the
    // same process would reuse memory the allocator kept from the first.
    if (p["reps"] != 3 && p["reps"] != 1)
      std::cerr << "memory: reps=" << p["reps"] << " ignored, this bench measures once\n";
    p["reps"] = 1;
    p["warmup"] = 0;
    auto r = run_memory(sys, p);
    emit(name, "bytes_per_actor", r.bytes_per_actor, "B", p);
    emit(name, "spawn_ms", r.spawn_ms, "ms", p);
    emit(name, "time_ms", r.spawn_ms, "ms", p);
    return 0;
  }
  long reps = p["reps"];
  std::vector<double> times;
  for (long i = 0; i <= reps; ++i) {
    double t = def.run(sys, p);
    if (i == 0) {
      std::cerr << name << " warm-up: " << number(t) << " ms\n";
      continue;
    }
    std::cerr << name << " rep " << i << ": " << number(t) << " ms\n";
    times.push_back(t);
  }
  double med = median(times);
  emit(name, "time_ms", med, "ms", p);
  if (def.messages)
    emit(name, "msgs_per_s", def.messages(p) / (med / 1000.0), "msg/s", p);
  return 0;
}

int run(const std::string& name, const bench_def& def, const params& p) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  try {
    return run_in(sys, name, def, p);
  } catch (const std::exception& e) {
    std::cerr << "caf micro: " << name << ": " << e.what() << '\n';
    std::fflush(stdout);
    // The actor system's destructor would wait for actors a failed bench may have left
    // running; leave without it.
    std::_Exit(1);
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    usage();
  std::string name = argv[1];
  auto it = benches().find(name);
  if (it == benches().end()) {
    std::cerr << "unknown bench \"" << name << "\"\n";
    usage();
  }
  return run(name, it->second, parse(it->second, argc, argv));
}
