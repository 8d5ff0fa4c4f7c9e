// Helpers for the counter tests (queue length, memory bandwidth): GPU activities made by hand, and the
// expected figures for a real trace from tests/trace/hta_counters_reference.py (HTA's definitions in
// Python, exact arithmetic), run once per trace and limit in this process.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "e2e/command_runner.h"
#include "trace/rank_timeline.h"

namespace gpuscope::trace::testing {

inline GpuActivity counters_activity(std::int32_t stream, std::int64_t launch_ns, std::int64_t start_ns, std::int64_t duration_ns,
                                     ActivityKind kind = ActivityKind::kComputeKernel, std::int64_t bytes = 0,
                                     std::uint32_t name_id = 0) {
  GpuActivity a;
  a.stream = stream;
  a.device = 0;
  a.launch_start_ns = launch_ns;
  a.start_ns = start_ns;
  a.duration_ns = duration_ns;
  a.kind = kind;
  a.bytes_code = encode_transfer_bytes(bytes);
  a.name_id = name_id;
  return a;
}

// The reference's answer for `trace` (a path) with MAX_QUEUE `max_queue`, or nullopt with the reason in
// `why` (no python3 on this host, or the script failed).
inline std::optional<nlohmann::json> hta_counters_reference(const std::string& trace, std::int64_t max_queue, std::string& why) {
  static std::map<std::pair<std::string, std::int64_t>, nlohmann::json> cache;
  if (auto it = cache.find({trace, max_queue}); it != cache.end()) return it->second;
  std::string python;
  for (const char* candidate : {"/usr/bin/python3", "/usr/local/bin/python3"}) {
    if (std::filesystem::exists(candidate)) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) {
    why = "no python3";
    return std::nullopt;
  }
  const std::string script = GPUSCOPE_SOURCE_DIR "/tests/trace/hta_counters_reference.py";
  auto r = e2e::run_command({python, script, trace, std::to_string(max_queue)}, {}, 300);
  if (r.exit_code != 0) {
    why = "the reference failed: " + r.err;
    return std::nullopt;
  }
  auto doc = nlohmann::json::parse(r.out);
  cache[{trace, max_queue}] = doc;
  return doc;
}

inline std::string real_h100_trace(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/") + name;
}

// Relative closeness for figures computed in floating point here and exactly in the reference.
inline void expect_close(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-9 * std::max(1.0, std::abs(expected))) << what;
}

}  // namespace gpuscope::trace::testing
