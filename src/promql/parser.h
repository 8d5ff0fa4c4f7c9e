// The PromQL parser: query text to a type-checked AST, or Prometheus's error for it ("1:5: parse
// error: unexpected ..."), position included, so users and Grafana see the messages they know.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "promql/ast.h"

namespace gpuscope::promql {

struct ParseError {
  PosRange pos;
  std::string message;  // without the position, e.g. "unexpected end of input"
  // "<line>:<col>: parse error: <message>", as Prometheus's ParseErrors print.
  std::string to_string(std::string_view query) const;
};

struct ParseOptions {
  bool enable_experimental_functions = true;  // the conformance scripts enable them
};

std::expected<ExprPtr, ParseError> parse_expr(std::string_view query, const ParseOptions& options = {});

// Series selectors alone (the HTTP API's match[] parameters): `up{job="x"}`, `{__name__=~"a.*"}`.
std::expected<ExprPtr, ParseError> parse_selector(std::string_view query);

// A Prometheus duration ("5m", "1h30m", "250ms") in milliseconds.
std::expected<std::int64_t, std::string> parse_duration(std::string_view text);
// The other way, as Prometheus prints durations (model.Duration): "1h30m", "1w", "90d", "0s".
std::string format_duration(std::int64_t ms);

}  // namespace gpuscope::promql
