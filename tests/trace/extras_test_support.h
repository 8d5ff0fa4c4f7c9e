// Helpers for the tests of the analyses beyond the summary (per step, idle intervals, kernel sequences): a trace
// written event by event (times in whole microseconds), and the independent Python reference
// (trace_extras_reference.py, standard library only) run on a trace file.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuscope::trace::testing {

struct ExtrasTrace {
  std::vector<std::string> events;

  ExtrasTrace& kernel(const std::string& name, int stream, long ts, long dur, long correlation, int device = 0) {
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": {}, "ts": {}, "dur": {},)"
                                 R"( "args": {{"device": {}, "stream": {}, "correlation": {}}}}})",
                                 name, stream, ts, dur, device, stream, correlation));
    return *this;
  }
  ExtrasTrace& memcpy(int stream, long ts, long dur, long correlation, int device = 0) {
    events.push_back(fmt::format(R"m({{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0,)m"
                                 R"( "tid": {}, "ts": {}, "dur": {}, "args": {{"device": {}, "stream": {}, "correlation": {}, "bytes": 100}}}})",
                                 stream, ts, dur, device, stream, correlation));
    return *this;
  }
  ExtrasTrace& launch(long correlation, long ts, long dur = 1, const std::string& name = "cudaLaunchKernel") {
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": 1, "tid": 1, "ts": {}, "dur": {},)"
                                 R"( "args": {{"correlation": {}}}}})",
                                 name, ts, dur, correlation));
    return *this;
  }
  ExtrasTrace& annotation(const std::string& name, long ts, long dur, int tid = 1) {
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}}})",
                                 name, tid, ts, dur));
    return *this;
  }
  ExtrasTrace& step(int number, long ts, long dur) { return annotation(fmt::format("ProfilerStep#{}", number), ts, dur); }
  ExtrasTrace& cpu_op(const std::string& name, long ts, long dur, int tid = 1) {
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}}})", name,
                                 tid, ts, dur));
    return *this;
  }
  std::string json() const {
    std::string out = R"({"schemaVersion": 1, "traceEvents": [)";
    for (std::size_t i = 0; i < events.size(); ++i) out += (i > 0 ? ",\n" : "\n") + events[i];
    return out + "\n]}";
  }
};

// What trace_extras_reference.py computes for `trace_file`; null when python3 is missing or fails.
inline nlohmann::json extras_reference(const std::string& trace_file) {
  const std::string command = fmt::format("python3 '{}/tests/trace/trace_extras_reference.py' '{}' 2>/dev/null", GPUSCOPE_SOURCE_DIR, trace_file);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return nullptr;
  std::string text;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  if (::pclose(pipe) != 0 || text.empty()) return nullptr;
  return nlohmann::json::parse(text, nullptr, false);
}

}  // namespace gpuscope::trace::testing
