#include "http/query_api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "promql/lexer.h"
#include "promql/parser.h"

namespace gpuscope::http {

namespace {

// Prometheus's API bounds for an unset start/end (its minTime and maxTime).
constexpr std::int64_t kMinTime = std::numeric_limits<std::int64_t>::min() / 2;
constexpr std::int64_t kMaxTime = std::numeric_limits<std::int64_t>::max() / 2;

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// A sample value as Prometheus writes it: a JSON string, shortest round-trip form, NaN, +Inf, -Inf.
void append_value(std::string& out, double v) {
  out += '"';
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[400];  // fixed notation of the largest double is 309 digits
    // Go's strconv.FormatFloat(v, 'f', -1, 64), what Prometheus writes: fixed notation, shortest digits.
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    out.append(buf, r.ptr);
  }
  out += '"';
}

// Milliseconds as Prometheus writes a timestamp: seconds with up to three decimals, no trailing zeros.
// Written with to_chars: a 24 h range at 15 s has 5761 of them per series.
void append_time(std::string& out, std::int64_t t_ms) {
  char buf[32];
  char* p = buf;
  std::uint64_t mag = t_ms < 0 ? static_cast<std::uint64_t>(-(t_ms + 1)) + 1 : static_cast<std::uint64_t>(t_ms);
  if (t_ms < 0) *p++ = '-';
  p = std::to_chars(p, buf + sizeof buf, mag / 1000).ptr;
  if (const unsigned ms = static_cast<unsigned>(mag % 1000); ms != 0) {
    *p++ = '.';
    *p++ = static_cast<char>('0' + ms / 100);
    if (ms % 100 != 0) {
      *p++ = static_cast<char>('0' + ms / 10 % 10);
      if (ms % 10 != 0) *p++ = static_cast<char>('0' + ms % 10);
    }
  }
  out.append(buf, p);
}

void append_labels(std::string& out, const store::Labels& labels) {
  out += '{';
  bool first = true;
  for (const auto& l : labels) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, l.name);
    out += ':';
    append_json_string(out, l.value);
  }
  out += '}';
}

void append_notes(std::string& out, const char* key, const std::vector<std::string>& notes) {
  if (notes.empty()) return;
  out += fmt::format(",\"{}\":[", key);
  for (std::size_t i = 0; i < notes.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, notes[i]);
  }
  out += ']';
}

HttpResponse json_response(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

HttpResponse query_error(std::string_view type, std::string_view message) {
  // Prometheus's statuses: 400 bad_data, 422 execution, 503 timeout/canceled, 500 internal.
  int status = 422;
  if (type == "bad_data") status = 400;
  if (type == "timeout" || type == "canceled") status = 503;
  if (type == "internal") status = 500;
  std::string body = R"({"status":"error","errorType":)";
  append_json_string(body, type);
  body += R"(,"error":)";
  append_json_string(body, message);
  body += '}';
  return json_response(status, std::move(body));
}

std::optional<std::string_view> param(const std::vector<std::pair<std::string, std::string>>& p, std::string_view name) {
  for (const auto& [k, v] : p) {
    if (k == name) return std::string_view(v);
  }
  return std::nullopt;
}

std::vector<std::string_view> params(const std::vector<std::pair<std::string, std::string>>& p, std::string_view name) {
  std::vector<std::string_view> out;
  for (const auto& [k, v] : p) {
    if (k == name) out.emplace_back(v);
  }
  return out;
}

}  // namespace

std::string render_query_result(const promql::QueryResult& r) {
  std::string out;
  if (const auto* m = std::get_if<promql::Matrix>(&r.value)) {
    std::size_t points = 0;
    for (const auto& s : *m) points += s.points.size();
    out.reserve(64 + points * 28 + m->size() * 256);  // one ~28-byte [t,"v"] per point
  }
  out += R"({"status":"success","data":{"resultType":)";
  if (const auto* s = std::get_if<promql::Scalar>(&r.value)) {
    out += R"("scalar","result":[)";
    append_time(out, s->t_ms);
    out += ',';
    append_value(out, s->value);
    out += ']';
  } else if (const auto* str = std::get_if<promql::String>(&r.value)) {
    out += R"("string","result":[)";
    append_time(out, str->t_ms);
    out += ',';
    append_json_string(out, str->value);
    out += ']';
  } else if (const auto* v = std::get_if<promql::Vector>(&r.value)) {
    out += R"("vector","result":[)";
    for (std::size_t i = 0; i < v->size(); ++i) {
      if (i > 0) out += ',';
      out += R"({"metric":)";
      append_labels(out, (*v)[i].labels);
      out += R"(,"value":[)";
      append_time(out, (*v)[i].t_ms);
      out += ',';
      append_value(out, (*v)[i].value);
      out += "]}";
    }
    out += ']';
  } else if (const auto* m = std::get_if<promql::Matrix>(&r.value)) {
    out += R"("matrix","result":[)";
    for (std::size_t i = 0; i < m->size(); ++i) {
      if (i > 0) out += ',';
      out += R"({"metric":)";
      append_labels(out, (*m)[i].labels);
      out += R"(,"values":[)";
      const auto& pts = (*m)[i].points;
      for (std::size_t k = 0; k < pts.size(); ++k) {
        if (k > 0) out += ',';
        out += '[';
        append_time(out, pts[k].t_ms);
        out += ',';
        append_value(out, pts[k].value);
        out += ']';
      }
      out += "]}";
    }
    out += ']';
  }
  out += '}';
  append_notes(out, "warnings", r.warnings);
  append_notes(out, "infos", r.infos);
  out += '}';
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::expected<std::int64_t, std::string> parse_api_time(std::string_view text) {
  text = trim(text);
  double secs = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), secs);
  if (ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(secs)) {
    return static_cast<std::int64_t>(std::llround(secs * 1000.0));
  }
  // RFC 3339: 2006-01-02T15:04:05[.fraction](Z|±hh:mm)
  std::tm tm{};
  const std::string s(text);
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest != nullptr) {
    std::int64_t ms = 0;
    if (*rest == '.') {
      ++rest;
      int digits = 0;
      while (*rest >= '0' && *rest <= '9') {
        if (digits < 3) ms = ms * 10 + (*rest - '0');
        ++digits;
        ++rest;
      }
      for (int d = digits; d < 3; ++d) ms *= 10;
      if (digits == 0) rest = nullptr;
    }
    std::int64_t offset_s = 0;
    if (rest != nullptr && (*rest == 'Z' || *rest == 'z') && rest[1] == '\0') {
      offset_s = 0;
    } else if (rest != nullptr && (*rest == '+' || *rest == '-') && std::strlen(rest) == 6 && rest[3] == ':') {
      const int h = (rest[1] - '0') * 10 + (rest[2] - '0'), m = (rest[4] - '0') * 10 + (rest[5] - '0');
      offset_s = (h * 3600 + m * 60) * (*rest == '+' ? 1 : -1);
    } else {
      rest = nullptr;
    }
    if (rest != nullptr) return (static_cast<std::int64_t>(timegm(&tm)) - offset_s) * 1000 + ms;
  }
  return std::unexpected(fmt::format("cannot parse {} to a valid timestamp", promql::go_quote(text)));
}

std::expected<std::int64_t, std::string> parse_api_duration(std::string_view text) {
  text = trim(text);
  double secs = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), secs);
  if (ec == std::errc() && ptr == text.data() + text.size()) {
    if (!std::isfinite(secs) || secs * 1000.0 > 9.2e18 || secs * 1000.0 < -9.2e18) {
      return std::unexpected(fmt::format("cannot parse {} to a valid duration. It overflows int64", promql::go_quote(text)));
    }
    return static_cast<std::int64_t>(std::llround(secs * 1000.0));
  }
  auto d = promql::parse_duration(text);
  if (d) return *d;
  return std::unexpected(fmt::format("cannot parse {} to a valid duration", promql::go_quote(text)));
}

std::vector<std::pair<std::string, std::string>> parse_form(std::string_view body) {
  auto decode = [](std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') {
        out += ' ';
      } else if (s[i] == '%' && i + 2 < s.size() + 0 && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  };
  std::vector<std::pair<std::string, std::string>> out;
  while (!body.empty()) {
    auto amp = body.find('&');
    std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    out.emplace_back(decode(pair.substr(0, eq)), eq == std::string_view::npos ? "" : decode(pair.substr(eq + 1)));
  }
  return out;
}

QueryApi::QueryApi(const store::Queryable& data, QueryApiOptions options, std::function<std::int64_t()> now_ms)
    : data_(data), options_(std::move(options)), now_ms_(std::move(now_ms)) {}

bool QueryApi::handles(std::string_view path) {
  return path == "/api/v1/query" || path == "/api/v1/query_range" || path == "/api/v1/series" ||
         path == "/api/v1/labels" || path == "/api/v1/status/buildinfo" ||
         (path.starts_with("/api/v1/label/") && path.ends_with("/values"));
}

HttpResponse QueryApi::handle(const HttpRequest& request) const {
  const auto method = request.method();
  const auto path = request.path();
  const bool post_allowed = path != "/api/v1/status/buildinfo" && !path.starts_with("/api/v1/label/");
  if (method != "GET" && !(method == "POST" && post_allowed)) {
    auto r = query_error("bad_data", fmt::format("method {} not allowed on {}", method, path));
    r.status = 405;
    r.headers.emplace_back("Allow", post_allowed ? "GET, POST" : "GET");
    return r;
  }
  Params p = request.query_arguments();
  if (method == "POST") {
    const auto type = request.header("Content-Type").value_or("");
    if (!type.starts_with("application/x-www-form-urlencoded")) {
      return query_error("bad_data", "POST needs a Content-Type of application/x-www-form-urlencoded");
    }
    for (auto& kv : parse_form(request.body())) p.push_back(std::move(kv));
  }
  if (path == "/api/v1/query") return query(p);
  if (path == "/api/v1/query_range") return query_range(p);
  if (path == "/api/v1/series") return series(p);
  if (path == "/api/v1/labels") return labels(p);
  if (path == "/api/v1/status/buildinfo") return buildinfo();
  std::string_view name = path.substr(std::string_view("/api/v1/label/").size());
  name.remove_suffix(std::string_view("/values").size());
  return label_values(name, p);
}

namespace {

std::expected<promql::EngineOptions, std::string> with_timeout(promql::EngineOptions o, const std::vector<std::pair<std::string, std::string>>& p) {
  if (auto t = param(p, "timeout"); t && !t->empty()) {
    auto d = parse_api_duration(*t);
    if (!d) return std::unexpected(fmt::format("invalid parameter \"timeout\": {}", d.error()));
    if (*d > 0 && std::chrono::milliseconds(*d) < o.timeout) o.timeout = std::chrono::milliseconds(*d);
  }
  return o;
}

// The answer to a query. What the engine refuses before evaluating (a parse error, a range query of
// a range vector) names the parameter, as Prometheus 3 does for both query kinds; evaluation errors
// (execution, timeout, storage) do not.
HttpResponse query_result(const std::expected<promql::QueryResult, promql::QueryError>& r) {
  if (!r) {
    const auto kind = r.error().kind;
    if (kind == promql::QueryError::Kind::kBadData || kind == promql::QueryError::Kind::kUnsupported) {
      return query_error("bad_data", fmt::format("invalid parameter \"query\": {}", r.error().message));
    }
    return query_error(promql::error_type_name(kind), r.error().message);
  }
  return json_response(200, render_query_result(*r));
}

// Prometheus's words for a time parameter of /query, /series, /labels and /label/NAME/values (its
// parseTimeParam); query_range's start and end are read without the middle part (its parseTime).
std::string invalid_time(std::string_view name, const std::string& error) {
  return fmt::format("invalid parameter \"{0}\": Invalid time value for '{0}': {1}", name, error);
}

// 11000 → "11,000", as Prometheus writes the limit in its message.
std::string with_thousands(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

HttpResponse QueryApi::query(const Params& p) const {
  std::int64_t t = now_ms_();
  if (auto tt = param(p, "time"); tt && !tt->empty()) {
    auto parsed = parse_api_time(*tt);
    if (!parsed) return query_error("bad_data", invalid_time("time", parsed.error()));
    t = *parsed;
  }
  auto o = with_timeout(options_.engine, p);
  if (!o) return query_error("bad_data", o.error());
  // A missing query is parsed as the empty one: Prometheus's "no expression found in input".
  return query_result(promql::Engine(*o).instant(data_, param(p, "query").value_or(""), t));
}

HttpResponse QueryApi::query_range(const Params& p) const {
  // Checked in Prometheus's order, with its messages: start, end, their order, step, points, timeout,
  // then the query.
  std::int64_t bounds[2];
  const char* names[] = {"start", "end"};
  for (int i = 0; i < 2; ++i) {
    auto parsed = parse_api_time(param(p, names[i]).value_or(""));
    if (!parsed) return query_error("bad_data", fmt::format("invalid parameter \"{}\": {}", names[i], parsed.error()));
    bounds[i] = *parsed;
  }
  if (bounds[1] < bounds[0]) return query_error("bad_data", "invalid parameter \"end\": end timestamp must not be before start time");
  auto step = parse_api_duration(param(p, "step").value_or(""));
  if (!step) return query_error("bad_data", fmt::format("invalid parameter \"step\": {}", step.error()));
  if (*step <= 0) {
    return query_error("bad_data",
                     "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer");
  }
  if ((bounds[1] - bounds[0]) / *step > static_cast<std::int64_t>(options_.max_points_per_series)) {
    return query_error("bad_data", fmt::format("exceeded maximum resolution of {} points per timeseries. Try decreasing "
                                             "the query resolution (?step=XX)",
                                             with_thousands(options_.max_points_per_series)));
  }
  auto o = with_timeout(options_.engine, p);
  if (!o) return query_error("bad_data", o.error());
  return query_result(promql::Engine(*o).range(data_, param(p, "query").value_or(""), bounds[0], bounds[1], *step));
}

namespace {

struct Window {
  std::int64_t start, end;
};

std::expected<Window, std::string> window(const std::vector<std::pair<std::string, std::string>>& p) {
  Window w{kMinTime, kMaxTime};
  if (auto v = param(p, "start"); v && !v->empty()) {
    auto t = parse_api_time(*v);
    if (!t) return std::unexpected(invalid_time("start", t.error()));
    w.start = *t;
  }
  if (auto v = param(p, "end"); v && !v->empty()) {
    auto t = parse_api_time(*v);
    if (!t) return std::unexpected(invalid_time("end", t.error()));
    w.end = *t;
  }
  return w;
}

// match[] selectors, each parsed as PromQL's series selector. Every one must narrow the selection (a
// matcher the empty value fails): `{}` or `{a=""}` would select everything, which Prometheus refuses
// rather than guess at a typo.
std::expected<std::vector<std::vector<store::LabelMatcher>>, std::string> matchers(
    const std::vector<std::pair<std::string, std::string>>& p) {
  std::vector<std::vector<store::LabelMatcher>> out;
  for (auto m : params(p, "match[]")) {
    auto e = promql::parse_selector(m);
    if (!e) return std::unexpected(e.error().to_string(m));
    out.push_back((*e)->as<promql::VectorSelector>()->matchers);
  }
  for (const auto& set : out) {
    if (std::ranges::none_of(set, [](const store::LabelMatcher& m) { return !m.matches_empty(); })) {
      return std::unexpected(std::string("match[] must contain at least one non-empty matcher"));
    }
  }
  return out;
}

void append_string_list(std::string& out, const std::set<std::string>& items) {
  out += '[';
  bool first = true;
  for (const auto& s : items) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, s);
  }
  out += ']';
}

}  // namespace

HttpResponse QueryApi::series(const Params& p) const {
  // Prometheus's order and words: match[] present, start, end, then match[] itself (named, here only).
  if (params(p, "match[]").empty()) return query_error("bad_data", "no match[] parameter provided");
  auto w = window(p);
  if (!w) return query_error("bad_data", w.error());
  auto ms = matchers(p);
  if (!ms) return query_error("bad_data", fmt::format("invalid parameter \"match[]\": {}", ms.error()));
  std::set<store::Labels> found;
  for (const auto& m : *ms) {
    auto r = data_.select(m, w->start, w->end);
    if (!r) return query_error("internal", r.error());
    for (auto& s : *r) found.insert(std::move(s.labels));
  }
  std::string out = R"({"status":"success","data":[)";
  bool first = true;
  for (const auto& l : found) {
    if (!first) out += ',';
    first = false;
    append_labels(out, l);
  }
  out += "]}";
  return json_response(200, std::move(out));
}

HttpResponse QueryApi::labels(const Params& p) const {
  auto w = window(p);
  if (!w) return query_error("bad_data", w.error());
  auto ms = matchers(p);
  if (!ms) return query_error("bad_data", ms.error());
  if (ms->empty()) ms->emplace_back();
  std::set<std::string> names;
  for (const auto& m : *ms) {
    auto r = data_.label_names(m, w->start, w->end);
    if (!r) return query_error("internal", r.error());
    names.insert(r->begin(), r->end());
  }
  std::string out = R"({"status":"success","data":)";
  append_string_list(out, names);
  out += '}';
  return json_response(200, std::move(out));
}

HttpResponse QueryApi::label_values(std::string_view name, const Params& p) const {
  if (!store::is_valid_label_name(name)) return query_error("bad_data", fmt::format("invalid label name: {}", promql::go_quote(name)));
  auto w = window(p);
  if (!w) return query_error("bad_data", w.error());
  auto ms = matchers(p);
  if (!ms) return query_error("bad_data", ms.error());
  if (ms->empty()) ms->emplace_back();
  std::set<std::string> values;
  for (const auto& m : *ms) {
    auto r = data_.label_values(std::string(name), m, w->start, w->end);
    if (!r) return query_error("internal", r.error());
    values.insert(r->begin(), r->end());
  }
  std::string out = R"({"status":"success","data":)";
  append_string_list(out, values);
  out += '}';
  return json_response(200, std::move(out));
}

HttpResponse QueryApi::buildinfo() const {
  // Grafana reads `version` to pick its Prometheus feature set; gpuscope answers as the Prometheus
  // version whose PromQL it follows, and says what it is in `application`.
  std::string out = R"({"status":"success","data":{"version":"3.0.0","revision":"gpuscope","branch":"gpuscope",)";
  out += R"("buildUser":"gpuscope","buildDate":"","goVersion":"none","application":)";
  append_json_string(out, "gpuscope " + options_.version);
  out += "}}";
  return json_response(200, std::move(out));
}

}  // namespace gpuscope::http
