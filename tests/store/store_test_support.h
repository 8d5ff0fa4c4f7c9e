// Helpers shared by the store's persistence tests: a temporary data directory, GPU-like series and
// their expected values, so a test can check every sample it reads back.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store/head.h"
#include "store/queryable.h"
#include "store/labels.h"

namespace gpuscope::store::testing {

// Every series of `q` with its samples in [mint, maxt].
inline std::vector<SeriesSamples> select_all(const Queryable& q, std::int64_t mint = INT64_MIN,
                                             std::int64_t maxt = INT64_MAX) {
  auto r = q.select({}, mint, maxt);
  EXPECT_TRUE(r) << r.error();
  return r ? *r : std::vector<SeriesSamples>{};
}

inline constexpr std::int64_t kT0 = 1767225600000;  // 2026-01-01, ms
inline constexpr std::int64_t kMinute = 60 * 1000;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuscope_store_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline Labels series_labels(int k) {
  return Labels{{"__name__", k % 2 == 0 ? "DCGM_FI_DEV_GPU_TEMP" : "DCGM_FI_DEV_POWER_USAGE"},
                {"gpu", std::to_string(k)},
                {"UUID", "GPU-6f1c" + std::to_string(1000 + k)},
                {"Hostname", "node1"}};
}

// The value series k has at time t: deterministic, so any sample read back can be checked.
inline double series_value(int k, std::int64_t t_ms) {
  return k * 100.0 + static_cast<double>((t_ms - kT0) / 1000 % 97) * 0.25;
}

inline std::vector<LabeledValue> reading_of(int series, std::int64_t t_ms) {
  std::vector<LabeledValue> out;
  for (int k = 0; k < series; ++k) out.push_back({series_labels(k), series_value(k, t_ms)});
  return out;
}

}  // namespace gpuscope::store::testing
