#include "http/training_api.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "analysis/reading_source.h"
#include "analysis/window_summary.h"
#include "http/api_envelope.h"
#include "http/query_api.h"

namespace gpuscope::http {

namespace {

HttpResponse method_not_allowed(std::string_view method, std::string_view path, std::string_view allowed) {
  auto r = api_error(405, "bad_data", fmt::format("method {} not allowed on {} ({})", method, path, allowed));
  r.headers.emplace_back("Allow", std::string(allowed));
  return r;
}

}  // namespace

TrainingApi::TrainingApi(analysis::TrainingIntake& intake, const store::Queryable* history, TrainingApiOptions options,
                         std::function<nlohmann::json()> training_json,
                         std::function<std::vector<unsigned>(int pid)> gpus_of_pid)
    : intake_(intake),
      history_(history),
      options_(std::move(options)),
      training_json_(std::move(training_json)),
      gpus_of_pid_(std::move(gpus_of_pid)) {}

HttpResponse TrainingApi::handle(const HttpRequest& request) const {
  const auto path = request.path();
  if (path == "/api/v1/events") {
    if (request.method() != "POST") return method_not_allowed(request.method(), path, "POST");
    return events(request);
  }
  if (request.method() != "GET" && request.method() != "HEAD") return method_not_allowed(request.method(), path, "GET, HEAD");
  if (path == "/api/v1/training") {
    return api_json(200, {{"status", "success"}, {"data", training_json_ ? training_json_() : nlohmann::json::object()}});
  }
  return summary(request);
}

HttpResponse TrainingApi::events(const HttpRequest& request) const {
  analysis::TrainingEventParser parser;
  const auto result =
      intake_.take(request.body(), options_.clock->unix_ms(), analysis::EventTransport::kHttp, std::nullopt, parser);
  if (result.accepted == 0 && result.rejected == 0) {
    return api_error(400, "bad_data", "no events: the body holds no JSON lines (one event per line)");
  }
  nlohmann::json data{{"accepted", result.accepted}, {"rejected", result.rejected}, {"errors", result.errors}};
  if (result.accepted == 0) {
    return api_json(400, {{"status", "error"},
                               {"errorType", "bad_data"},
                               {"error", fmt::format("no event accepted: {}", result.errors.front())},
                               {"data", data}});
  }
  return api_json(202, {{"status", "success"}, {"data", data}});
}

HttpResponse TrainingApi::summary(const HttpRequest& request) const {
  std::optional<std::int64_t> start_ms, end_ms;
  std::optional<int> pid;
  std::vector<std::string> ids;
  for (const auto& [name, value] : request.query_arguments()) {
    if (name == "start" || name == "end") {
      auto t = parse_api_time(value);
      if (!t) return api_error(400, "bad_data", fmt::format("invalid parameter {:?}: {}", name, t.error()));
      (name == "start" ? start_ms : end_ms) = *t;
    } else if (name == "pid") {
      int p = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), p);
      if (ec != std::errc() || end != value.data() + value.size() || p <= 0) {
        return api_error(400, "bad_data", fmt::format("invalid parameter \"pid\": {:?} is not a process id", value));
      }
      pid = p;
    } else if (name == "gpu") {
      std::string_view rest = value;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        if (comma != 0) ids.emplace_back(rest.substr(0, comma));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
  }
  if (!start_ms || !end_ms) {
    return api_error(400, "bad_data", "missing parameter: start and end are required (Unix seconds or RFC 3339)");
  }
  if (*end_ms <= *start_ms) return api_error(400, "bad_data", "invalid parameters: end is not after start");
  if (*end_ms - *start_ms > kMaxSummarySpan.count()) {
    return api_error(400, "bad_data", "invalid parameters: the span is longer than 24h");
  }
  if (history_ == nullptr) {
    return api_error(503, "unavailable",
                          "no history to summarize (the agent runs with --no-history, which keeps no readings)");
  }
  // A pid that holds memory on no GPU has no GPU to summarize (a CPU-only process): none, not all.
  bool none = false;
  if (ids.empty() && pid) {
    if (gpus_of_pid_) {
      for (const unsigned g : gpus_of_pid_(*pid)) ids.push_back(std::to_string(g));
    }
    none = ids.empty();
  }

  const model::Clock& clock = *options_.clock;
  std::optional<promql::QueryLimiter::Slot> slot;
  if (options_.limiter != nullptr) {
    auto acquired = options_.limiter->acquire(clock, clock.steady() + options_.timeout);
    if (!acquired) return api_error(503, "timeout", acquired.error().message);
    slot.emplace(std::move(*acquired));
  }
  analysis::StoreSource source(*history_);
  auto histories = analysis::read_histories(source, *start_ms, *end_ms);
  if (!histories) return api_error(500, "internal", histories.error());
  const auto summaries = analysis::summarize_span(*histories, *start_ms, *end_ms, options_.thresholds);

  analysis::GpuFilter filter{ids};
  auto gpus = nlohmann::json::array();
  for (const auto& s : summaries) {
    if (none || !filter.matches(s.identity)) continue;
    nlohmann::json g{{"gpu", s.identity.gpu}, {"uuid", s.identity.uuid}, {"name", s.identity.model}, {"readings", s.readings}};
    unsigned index = 0;
    const auto& label = s.identity.gpu;
    if (std::from_chars(label.data(), label.data() + label.size(), index).ec == std::errc()) g["gpu"] = index;
    for (const auto& [name, stat] : s.stats) g[std::string(name)] = {{"mean", stat.mean}, {"min", stat.min}, {"max", stat.max}};
    if (s.verdict) {
      g["verdict"] = {{"verdict", analysis::verdict_id(*s.verdict)}, {"summary", s.verdict_summary}};
    }
    gpus.push_back(std::move(g));
  }
  return api_json(200, {{"status", "success"},
                             {"data",
                              {{"start", static_cast<double>(*start_ms) / 1000.0},
                               {"end", static_cast<double>(*end_ms) / 1000.0},
                               {"gpus", std::move(gpus)}}}});
}

}  // namespace gpuscope::http
