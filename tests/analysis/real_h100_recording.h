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

// A suite over the recording, loaded once for all its tests.
class RealH100Recording : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_ = new store::SeriesSet;
    phases_ = new std::vector<Phase>;
    load_real_h100(*data_, *phases_);
  }
  static void TearDownTestSuite() {
    delete data_;
    delete phases_;
    data_ = nullptr;
    phases_ = nullptr;
  }
  // The phase of phases.json named `name`; null (and a test failure) when there is none.
  static const Phase* phase(const std::string& name) {
    const auto it = std::find_if(phases_->begin(), phases_->end(), [&](const Phase& p) { return p.name == name; });
    if (it != phases_->end()) return &*it;
    ADD_FAILURE() << "no phase " << name << " in phases.json";
    return nullptr;
  }

  inline static store::SeriesSet* data_ = nullptr;
  inline static std::vector<Phase>* phases_ = nullptr;
};

}  // namespace gpuscope::analysis::testing
