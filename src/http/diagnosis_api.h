// DiagnosisApi: GET /api/v1/diagnosis, the agent's verdict per GPU (why it is slow or wasted) as the
// JSON of `gpuscope diagnose --format json`, in the Prometheus API's envelope. By default the diagnosis
// loop's latest evaluation; with `window` or `time` one computed on demand over the history, bounded
// like a PromQL query (the agent's query limiter and timeout).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/diagnosis.h"
#include "analysis/reading_source.h"
#include "analysis/thresholds.h"
#include "http/http_server.h"
#include "model/clock.h"
#include "promql/query_limiter.h"
#include "store/queryable.h"

namespace gpuscope::http {

// The window a diagnosis may read: at least a second (one reading at the fastest interval), at most an
// hour (the verdict is about what the GPU does now; `gpuscope diagnose --timeline` covers longer
// spans), which also bounds what one request holds in memory (8 GPUs: ~30 MB at 1 s readings).
inline constexpr std::chrono::milliseconds kMinDiagnosisWindow{1000};
inline constexpr std::chrono::milliseconds kMaxDiagnosisWindow = std::chrono::hours(1);

// What the agent's diagnosis loop last published, or why there is nothing to show.
struct PublishedDiagnosis {
  std::shared_ptr<const analysis::Diagnosis> diagnosis;  // null: see `unavailable`
  std::string unavailable;                               // "no evaluation yet", "off: ..."
};

struct DiagnosisApiOptions {
  std::chrono::milliseconds window{30'000};  // of on-demand diagnoses given a time but no window
  analysis::Thresholds thresholds;
  promql::QueryLimiter* limiter = nullptr;  // null: unbounded concurrency (tests)
  std::chrono::milliseconds timeout{120'000};
  const model::Clock* clock = &model::system_clock();
};

class DiagnosisApi {
 public:
  // `history` is null when the agent keeps none (--no-history): then only `latest` can answer, and it
  // says why not.
  DiagnosisApi(const store::Queryable* history, DiagnosisApiOptions options,
               std::function<PublishedDiagnosis()> latest);

  static bool handles(std::string_view path) { return path == "/api/v1/diagnosis"; }
  HttpResponse handle(const HttpRequest& request) const;

 private:
  HttpResponse on_demand(std::int64_t at_ms, std::int64_t window_ms, const analysis::GpuFilter& filter) const;

  const store::Queryable* history_;
  DiagnosisApiOptions options_;
  std::function<PublishedDiagnosis()> latest_;
};

}  // namespace gpuscope::http
