// QueryApi: Prometheus's HTTP query API over the agent's store (/api/v1/query, query_range, series,
// labels, label values, status/buildinfo), with Prometheus's JSON shapes and errors, so Grafana and
// other Prometheus clients can use the agent as a "Prometheus" data source.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/http_server.h"
#include "promql/engine.h"
#include "store/queryable.h"

namespace gpuscope::http {

struct QueryApiOptions {
  promql::EngineOptions engine;
  std::size_t max_points_per_series = 11000;  // query_range's resolution limit, as Prometheus
  std::string version;
};

class QueryApi {
 public:
  QueryApi(const store::Queryable& data, QueryApiOptions options, std::function<std::int64_t()> now_ms);

  // Whether `path` is one of this API's routes.
  static bool handles(std::string_view path);
  HttpResponse handle(const HttpRequest& request) const;

 private:
  using Params = std::vector<std::pair<std::string, std::string>>;
  HttpResponse query(const Params& p) const;
  HttpResponse query_range(const Params& p) const;
  HttpResponse series(const Params& p) const;
  HttpResponse labels(const Params& p) const;
  HttpResponse label_values(std::string_view name, const Params& p) const;
  HttpResponse buildinfo() const;

  const store::Queryable& data_;
  QueryApiOptions options_;
  std::function<std::int64_t()> now_ms_;
};

// Prometheus's API time parameter: Unix seconds ("1700000000.5") or RFC 3339 ("2023-11-14T22:13:20Z").
std::expected<std::int64_t, std::string> parse_api_time(std::string_view text);
// A step or timeout: seconds ("15", "0.5") or a PromQL duration ("15s", "1m").
std::expected<std::int64_t, std::string> parse_api_duration(std::string_view text);
// A query result as the API's JSON body ({"status":"success","data":{"resultType":...}}).
std::string render_query_result(const promql::QueryResult& result);

// application/x-www-form-urlencoded: a=1&b=%20x → pairs, decoded.
std::vector<std::pair<std::string, std::string>> parse_form(std::string_view body);

}  // namespace gpuscope::http
