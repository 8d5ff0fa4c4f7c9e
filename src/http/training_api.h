// TrainingApi: what training processes and their clients talk to over HTTP. POST /api/v1/events takes
// step and epoch events as JSON lines (the same as the Unix socket takes); GET /api/v1/training shows the
// jobs and what the agent found; GET /api/v1/summary gives a GPU's time-weighted figures and verdict over
// a span (an epoch), what the Python client logs to a tracker.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/thresholds.h"
#include "analysis/training_intake.h"
#include "http/http_server.h"
#include "model/clock.h"
#include "promql/query_limiter.h"
#include "store/queryable.h"

namespace gpuscope::http {

// A summary reads at most this much history: a day of 1 s readings of 8 GPUs is a few million points.
inline constexpr std::chrono::milliseconds kMaxSummarySpan = std::chrono::hours(24);

struct TrainingApiOptions {
  analysis::Thresholds thresholds;
  promql::QueryLimiter* limiter = nullptr;  // null: unbounded concurrency (tests)
  std::chrono::milliseconds timeout{120'000};
  const model::Clock* clock = &model::system_clock();
};

class TrainingApi {
 public:
  // `history` is null without history (then /api/v1/summary says so). `training_json` is GET
  // /api/v1/training's data; `gpus_of_pid` the GPU indices a pid holds memory on in the latest reading.
  TrainingApi(analysis::TrainingIntake& intake, const store::Queryable* history, TrainingApiOptions options,
              std::function<nlohmann::json()> training_json,
              std::function<std::vector<unsigned>(int pid)> gpus_of_pid);

  static bool handles(std::string_view path) {
    return path == "/api/v1/events" || path == "/api/v1/training" || path == "/api/v1/summary";
  }
  HttpResponse handle(const HttpRequest& request) const;

 private:
  HttpResponse events(const HttpRequest& request) const;
  HttpResponse summary(const HttpRequest& request) const;

  analysis::TrainingIntake& intake_;
  const store::Queryable* history_;
  TrainingApiOptions options_;
  std::function<nlohmann::json()> training_json_;
  std::function<std::vector<unsigned>(int pid)> gpus_of_pid_;
};

}  // namespace gpuscope::http
