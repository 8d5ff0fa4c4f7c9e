#include "http/diagnosis_api.h"

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "analysis/diagnosis_report.h"
#include "http/api_envelope.h"
#include "http/query_api.h"
#include "promql/lexer.h"

namespace gpuscope::http {
namespace {

HttpResponse diagnosis_success(const analysis::Diagnosis& d) {
  return api_json(200, {{"status", "success"}, {"data", analysis::diagnosis_json(d)}});
}

// A source that stops between two reads of the history once the request's deadline has passed or the
// agent is stopping: the diagnosis reads in a few selects (the window, then an hour at a time back for
// "idle since"), so a request ends within one select of its limit.
class DeadlineSource : public analysis::ReadingSource {
 public:
  DeadlineSource(const store::Queryable& data, const model::Clock& clock, model::Clock::SteadyTime deadline,
                 const std::atomic<bool>* canceled)
      : store_(data), clock_(clock), deadline_(deadline), canceled_(canceled) {}

  std::expected<std::vector<store::SeriesSamples>, std::string> select(const std::string& name_regex,
                                                                      std::int64_t from_ms,
                                                                      std::int64_t to_ms) const override {
    if (canceled_ != nullptr && canceled_->load()) {
      ended_ = "canceled";
      return std::unexpected("query was canceled");
    }
    if (clock_.steady() > deadline_) {
      ended_ = "timeout";
      return std::unexpected("query timed out");
    }
    return store_.select(name_regex, from_ms, to_ms);
  }
  // "timeout" or "canceled" when a limit ended the diagnosis; empty when the store failed.
  const std::string& ended() const { return ended_; }

 private:
  analysis::StoreSource store_;
  const model::Clock& clock_;
  model::Clock::SteadyTime deadline_;
  const std::atomic<bool>* canceled_;
  mutable std::string ended_;
};

// The GPUs asked for: `gpu` repeated or comma-separated (gpu=0&gpu=2, gpu=0,2), by index or UUID.
std::expected<analysis::GpuFilter, std::string> gpu_filter_of(const std::vector<std::pair<std::string, std::string>>& args) {
  analysis::GpuFilter filter;
  for (const auto& [name, value] : args) {
    if (name != "gpu") continue;
    std::string_view rest = value;
    for (;;) {
      const auto comma = rest.find(',');
      const std::string_view id = rest.substr(0, comma);
      if (id.empty()) {
        return std::unexpected(fmt::format("invalid parameter \"gpu\": {} is not a GPU index or UUID (e.g. gpu=0,2)",
                                           promql::go_quote(value)));
      }
      filter.ids.emplace_back(id);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return filter;
}

// Keeps the GPUs `filter` asks for; an ID that names none of the diagnosis' GPUs is the caller's mistake.
std::expected<analysis::Diagnosis, std::string> only_gpus(analysis::Diagnosis d, const analysis::GpuFilter& filter) {
  if (filter.ids.empty()) return d;
  std::vector<std::string> known;
  for (const auto& g : d.gpus) known.push_back(g.identity.gpu);
  for (const std::string& id : filter.ids) {
    const bool found = std::any_of(d.gpus.begin(), d.gpus.end(), [&](const analysis::GpuDiagnosis& g) {
      return id == g.identity.gpu || (!g.identity.uuid.empty() && id == g.identity.uuid);
    });
    if (!found) {
      return std::unexpected(fmt::format("invalid parameter \"gpu\": no GPU {} in the diagnosis (GPUs: {})",
                                         promql::go_quote(id), known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
    }
  }
  std::erase_if(d.gpus, [&](const analysis::GpuDiagnosis& g) { return !filter.matches(g.identity); });
  return d;
}

}  // namespace

DiagnosisApi::DiagnosisApi(const store::Queryable* history, DiagnosisApiOptions options,
                           std::function<PublishedDiagnosis()> latest)
    : history_(history), options_(std::move(options)), latest_(std::move(latest)) {}

HttpResponse DiagnosisApi::handle(const HttpRequest& request) const {
  if (request.method() != "GET" && request.method() != "HEAD") {
    auto r = api_error(405, "bad_data", fmt::format("method {} not allowed on /api/v1/diagnosis (GET)", request.method()));
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  const auto args = request.query_arguments();
  auto filter = gpu_filter_of(args);
  if (!filter) return api_error(400, "bad_data", filter.error());
  std::optional<std::int64_t> at_ms, window_ms;
  for (const auto& [name, value] : args) {
    if (name == "time") {
      auto t = parse_api_time(value);
      if (!t) return api_error(400, "bad_data", fmt::format("invalid parameter \"time\": {}", t.error()));
      if (*t < analysis::kEarliestDiagnosisMs || *t > analysis::kLatestDiagnosisMs) {
        return api_error(400, "bad_data",
                               fmt::format("invalid parameter \"time\": {} is not between 1970 and 9999",
                                           promql::go_quote(value)));
      }
      at_ms = *t;
    } else if (name == "window") {
      auto w = parse_api_duration(value);
      if (!w || *w < kMinDiagnosisWindow.count() || *w > kMaxDiagnosisWindow.count()) {
        return api_error(400, "bad_data",
                               fmt::format("invalid parameter \"window\": {} is not a duration from 1s to 1h (e.g. 30s, 5m)",
                                           promql::go_quote(value)));
      }
      window_ms = *w;
    }
  }
  if (at_ms || window_ms) {
    return on_demand(at_ms.value_or(options_.clock->unix_ms()), window_ms.value_or(options_.window.count()), *filter);
  }
  const PublishedDiagnosis latest = latest_ ? latest_() : PublishedDiagnosis{nullptr, "the diagnosis is off"};
  if (!latest.diagnosis) return api_error(503, "unavailable", latest.unavailable);
  auto shown = only_gpus(*latest.diagnosis, *filter);
  if (!shown) return api_error(400, "bad_data", shown.error());
  return diagnosis_success(*shown);
}

HttpResponse DiagnosisApi::on_demand(std::int64_t at_ms, std::int64_t window_ms, const analysis::GpuFilter& filter) const {
  if (history_ == nullptr) {
    return api_error(503, "unavailable",
                           "no history to diagnose (the agent runs with --no-history, which keeps no readings)");
  }
  const model::Clock& clock = *options_.clock;
  const auto deadline = clock.steady() + options_.timeout;
  std::optional<promql::QueryLimiter::Slot> slot;
  if (options_.limiter != nullptr) {
    auto acquired = options_.limiter->acquire(clock, deadline);
    if (!acquired) {
      const bool canceled = acquired.error().kind == promql::QueryError::Kind::kCanceled;
      return api_error(503, canceled ? "canceled" : "timeout", acquired.error().message);
    }
    slot.emplace(std::move(*acquired));
  }
  DeadlineSource source(*history_, clock, deadline, options_.limiter ? &options_.limiter->canceled() : nullptr);
  // Every GPU, filtered by only_gpus below: it names the GPUs there are when one asked for is not.
  auto d = analysis::diagnose_from(source, at_ms, window_ms, options_.thresholds, {});
  if (!d) {
    if (!source.ended().empty()) return api_error(503, source.ended(), d.error());
    return api_error(500, "internal", d.error());
  }
  auto shown = only_gpus(std::move(*d), filter);
  if (!shown) return api_error(400, "bad_data", shown.error());
  return diagnosis_success(*shown);
}

}  // namespace gpuscope::http
