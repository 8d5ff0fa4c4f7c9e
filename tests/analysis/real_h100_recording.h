// The real H100 recording (../shared/reference/real-h100/): the agent's history through nine PyTorch
// phases, read as `gpuscope import` reads it, and the phases' times. Shared by the tests that judge the
// diagnosis and the cost accounting on it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "recording/recording.h"
#include "store/series_set.h"

namespace gpuscope::analysis::testing {

inline const std::string kRealH100Dir = std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/";

struct Phase {
  std::string name;
  std::int64_t start_ms, end_ms;
};

// Fills `data` with the recording and `phases` with phases.json (a test failure when either is missing).
inline void load_real_h100(store::SeriesSet& data, std::vector<Phase>& phases) {
  auto text = recording::read_maybe_gzipped(kRealH100Dir + "history.json.gz");
  ASSERT_TRUE(text) << text.error();
  auto rec = recording::parse_recording(*text, {});
  ASSERT_TRUE(rec) << rec.error();
  for (auto& s : rec->series) {
    std::sort(s.samples.begin(), s.samples.end(), [](const auto& a, const auto& b) { return a.t_ms < b.t_ms; });
    for (const auto& p : s.samples) data.add(s.labels, p.t_ms, p.value);
  }
  std::ifstream in(kRealH100Dir + "phases.json");
  ASSERT_TRUE(in) << kRealH100Dir << "phases.json";
  const auto json = nlohmann::json::parse(in);
  for (const auto& p : json["phases"]) {
    phases.push_back({p["phase"], static_cast<std::int64_t>(p["start"].get<double>() * 1000),
                      static_cast<std::int64_t>(p["end"].get<double>() * 1000)});
  }
}

}  // namespace gpuscope::analysis::testing
