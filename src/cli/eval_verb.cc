#include "cli/eval_verb.h"

#include <chrono>
#include <optional>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/http_get.h"
#include "cli/read_only_store.h"
#include "http/query_api.h"
#include "notify/notification.h"
#include "promql/engine.h"
#include "store/tsdb.h"
#include "model/clock.h"

namespace gpuscope::cli {
namespace {

std::string metric_text(const nlohmann::json& metric) {
  std::string name, labels;
  for (const auto& [k, v] : metric.items()) {
    if (k == "__name__") {
      name = v.get<std::string>();
      continue;
    }
    if (!labels.empty()) labels += ", ";
    labels += fmt::format("{}=\"{}\"", k, v.get<std::string>());
  }
  return name + "{" + labels + "}";
}

std::string point_text(const nlohmann::json& p) {
  return fmt::format("{} @[{:.3f}]", p[1].get<std::string>(), p[0].get<double>());
}

// promtool's query output: `metric{labels} => value @[time]`; a range query lists each series' points.
int print_table(const nlohmann::json& body, const Invocation& inv) {
  const auto& data = body.at("data");
  const std::string type = data.at("resultType");
  const auto& result = data.at("result");
  if (type == "scalar" || type == "string") {
    inv.out << type << ": " << point_text(result) << '\n';
  } else if (type == "vector") {
    for (const auto& s : result) inv.out << metric_text(s.at("metric")) << " => " << point_text(s.at("value")) << '\n';
  } else {
    for (const auto& s : result) {
      inv.out << metric_text(s.at("metric")) << " =>\n";
      for (const auto& p : s.at("values")) inv.out << point_text(p) << '\n';
    }
  }
  if (body.contains("warnings")) {
    for (const auto& w : body["warnings"]) inv.err << "gpuscope: warning: " << w.get<std::string>() << '\n';
  }
  return kExitOk;
}

}  // namespace

std::expected<EvalOptions, ParseExit> parse_eval_args(std::span<const std::string> args, std::int64_t now_ms) {
  auto app = make_verb_app(
      "eval",
      "Evaluate a PromQL expression over the agent's history: against a running agent (--url) or a data\n"
      "directory read directly (--data-dir; the agent may keep running). An instant query at --time (default\n"
      "now), or a range query with --start, --end and --step. Times: Unix seconds, RFC 3339, now or now-DURATION.",
      "  gpuscope eval 'avg_over_time(DCGM_FI_DEV_GPU_UTIL[10m]) < 5' --url http://127.0.0.1:9400\n"
      "  gpuscope eval 'max by (gpu) (DCGM_FI_DEV_GPU_TEMP)' --data-dir /var/lib/gpuscope --start now-1h --end now --step 1m");
  EvalOptions o;
  std::string time, start, end, step, format = "text";
  app->add_option("expr", o.expr, "the PromQL expression")->required();
  app->add_option("--time", time, "instant query at this time (default now)")->type_name("TIME");
  app->add_option("--start", start, "range query start")->type_name("TIME");
  app->add_option("--end", end, "range query end")->type_name("TIME");
  app->add_option("--step", step, "range query step (e.g. 15s, 1m)")->type_name("DURATION");
  app->add_option("--format", format, "text (default; promtool's layout; 'table' also works) or json (Prometheus's API JSON)")
      ->type_name("FORMAT");
  app->add_option("--url", o.url, "a running agent, e.g. http://127.0.0.1:9400 (or any Prometheus)")->type_name("URL");
  app->add_option("--data-dir", o.data_dir,
                  "read this data directory (an agent's --data-dir) instead of asking an agent; it is never created "
                  "or written")
      ->type_name("DIR");
  const auto default_timeout = std::chrono::duration_cast<std::chrono::seconds>(kEvalQueryTimeout + kEvalTimeoutMargin);
  std::string timeout = fmt::format("{}s", default_timeout.count());
  app->add_option("--timeout", timeout,
                  "give up on the answer after this long, 100ms to 1h (default 130s: the agent's default "
                  "--query-timeout, 2m, plus 10s)")
      ->type_name("DURATION");
  std::string max_samples;
  app->add_option("--query.max-samples", max_samples,
                  "with --data-dir, most samples the query may hold in memory at once, as an agent's flag "
                  "(default 1000000; with --url the agent's own applies)")
      ->type_name("N");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  if (!max_samples.empty()) {
    auto n = positive_integer(max_samples);
    if (!n || *n < promql::kMinMaxSamples || *n > promql::kMaxMaxSamples) {
      return std::unexpected(usage(fmt::format("invalid value '{}' for --query.max-samples ({} to {})", max_samples,
                                               promql::kMinMaxSamples, promql::kMaxMaxSamples)));
    }
    o.max_samples = static_cast<std::size_t>(*n);
  }
  auto to = parse_duration(timeout);
  if (!to || *to < std::chrono::milliseconds(100) || *to > std::chrono::hours(1)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --timeout (100ms to 1h, e.g. 30s)", timeout)));
  }
  o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*to);
  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  o.json = *json;
  if (o.url.empty() == o.data_dir.empty()) return std::unexpected(usage("eval needs exactly one of --url and --data-dir"));
  if (!o.url.empty() && !max_samples.empty()) {
    return std::unexpected(usage("--query.max-samples is for --data-dir; with --url the agent's own --query.max-samples applies"));
  }
  const bool range = !start.empty() || !end.empty() || !step.empty();
  if (range) {
    if (!time.empty()) return std::unexpected(usage("--time is for an instant query; a range query takes --start, --end and --step"));
    if (start.empty() || end.empty() || step.empty()) {
      return std::unexpected(usage("a range query needs all of --start, --end and --step"));
    }
    const std::string* values[] = {&start, &end};
    const char* names[] = {"--start", "--end"};
    std::optional<std::int64_t>* targets[] = {&o.start_ms, &o.end_ms};
    for (int i = 0; i < 2; ++i) {
      auto t = parse_time(*values[i], now_ms);
      if (!t) return std::unexpected(usage(fmt::format("invalid value '{}' for {}: {}", *values[i], names[i], t.error())));
      *targets[i] = *t;
    }
    auto s = http::parse_api_duration(step);
    if (!s || *s <= 0) return std::unexpected(usage(fmt::format("invalid value '{}' for --step (e.g. 15s, 1m)", step)));
    o.step_ms = *s;
    if (*o.end_ms < *o.start_ms) return std::unexpected(usage("--end is before --start"));
  } else if (!time.empty()) {
    auto t = parse_time(time, now_ms);
    if (!t) return std::unexpected(usage(fmt::format("invalid value '{}' for --time: {}", time, t.error())));
    o.time_ms = *t;
  }
  return o;
}

int run_eval(std::span<const std::string> args, const Invocation& inv) {
  const std::int64_t now = model::system_clock().unix_ms();
  auto options = parse_eval_args(args, now);
  if (!options) return finish(options.error(), inv);
  const auto& o = *options;
  const bool range = o.step_ms.has_value();
  const auto secs = [](std::int64_t ms) { return fmt::format("{:.3f}", static_cast<double>(ms) / 1000.0); };

  std::string body;
  if (!o.url.empty()) {
    std::string url = o.url;
    while (url.ends_with('/')) url.pop_back();
    if (range) {
      url += fmt::format("/api/v1/query_range?query={}&start={}&end={}&step={}", notify::query_escape(o.expr), secs(*o.start_ms),
                         secs(*o.end_ms), secs(*o.step_ms));
    } else {
      url += fmt::format("/api/v1/query?query={}&time={}", notify::query_escape(o.expr), secs(o.time_ms.value_or(now)));
    }
    auto got = http_get(url, o.timeout);
    if (!got) {
      inv.err << "gpuscope: " << got.error() << '\n';
      return kExitRuntime;
    }
    auto json = nlohmann::json::parse(got->body, nullptr, false);
    if (json.is_discarded() || !json.is_object() || !json.contains("status")) {
      // Not Prometheus's API (a web page, a proxy's error, an empty answer): say what answered.
      inv.err << "gpuscope: " << url << ": HTTP " << got->status
              << (got->content_type.empty() ? "" : " " + got->content_type)
              << ", not Prometheus API JSON: " << body_excerpt(got->body) << '\n';
      return kExitRuntime;
    }
    body = std::move(got->body);
  } else {
    auto tsdb = open_read_only_store(o.data_dir, inv, now);
    if (!tsdb) return tsdb.error();
    // The agent's limits (its defaults, or the flags given), so a query behaves here as it would there.
    promql::EngineOptions eo;
    eo.timeout = o.timeout;
    eo.max_samples = o.max_samples;
    promql::Engine engine(eo);
    auto result = range ? engine.range(**tsdb, o.expr, *o.start_ms, *o.end_ms, *o.step_ms)
                        : engine.instant(**tsdb, o.expr, o.time_ms.value_or(now));
    if (!result) {
      inv.err << "gpuscope: " << result.error().message << '\n';
      return result.error().kind == promql::QueryError::Kind::kBadData ? kExitUsage : kExitRuntime;
    }
    body = http::render_query_result(*result);
  }

  auto json = nlohmann::json::parse(body, nullptr, false);
  try {
    if (json["status"] != "success") {
      inv.err << "gpuscope: " << json.value("errorType", "error") << ": " << json.value("error", "") << '\n';
      return json.value("errorType", "") == "bad_data" ? kExitUsage : kExitRuntime;
    }
    if (o.json) {
      inv.out << body << '\n';
      return kExitOk;
    }
    return print_table(json, inv);
  } catch (const nlohmann::json::exception& e) {
    inv.err << "gpuscope: unexpected API JSON: " << e.what() << '\n';
    return kExitRuntime;
  }
}

}  // namespace gpuscope::cli
