#include "promql_script.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <set>

namespace gpuscope::conformance {
namespace {

using Kind = Expectation::Kind;

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits off the first blank-separated word; `rest` keeps what follows, leading blanks removed.
std::string_view next_word(std::string_view& rest) {
  std::size_t end = 0;
  while (end < rest.size() && !is_blank(rest[end])) ++end;
  std::string_view word = rest.substr(0, end);
  rest.remove_prefix(end);
  while (!rest.empty() && is_blank(rest.front())) rest.remove_prefix(1);
  return word;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The label part of a series line: everything up to the first blank outside quotes and braces. Used
// to learn which series a line describes when its values cannot be read.
std::string_view label_part(std::string_view line) {
  int depth = 0;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote != 0) {
      if (c == '\\' && quote != '`') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'' || c == '`') {
      quote = c;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      --depth;
    } else if (is_blank(c) && depth == 0) {
      return line.substr(0, i);
    }
  }
  return line;
}

// As promqltest's parseNumber: a Go integer literal (base prefixes allowed), else a Go float.
std::optional<double> parse_number_line(std::string_view text) {
  std::string s(text);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(s.c_str(), &end, 0);
  if (end == s.c_str() + s.size() && errno == 0) return static_cast<double>(n);
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  if (s.find('(') != std::string::npos) return std::nullopt;  // strtod's "nan(...)" is not Go syntax
  return d;
}

// The classic-histogram series a `load_with_nhcb` turns into one native histogram series: its name
// without the _bucket/_count/_sum suffix, without `le`. nullopt for other series.
std::optional<store::Labels> nhcb_series_for(const store::Labels& labels) {
  std::string_view name = labels.metric_name();
  for (std::string_view suffix : {"_bucket", "_count", "_sum"}) {
    if (!name.ends_with(suffix)) continue;
    if (suffix == "_bucket") {
      std::string le(labels.get("le"));
      char* end = nullptr;
      double bound = std::strtod(le.c_str(), &end);
      if (le.empty() || end != le.c_str() + le.size() || std::isnan(bound)) return std::nullopt;
    }
    store::Labels base = labels.without({"le"});
    base.set(store::kMetricNameLabel, name.substr(0, name.size() - suffix.size()));
    return base;
  }
  return std::nullopt;
}

class ScriptParser {
 public:
  explicit ScriptParser(std::string_view text) {
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = trim(text.substr(start, end - start));
      if (line.starts_with('#')) line = {};  // a comment ends a block, as in promqltest
      lines_.push_back(line);
      start = end + 1;
    }
  }

  std::vector<ScriptCommand> parse() {
    std::vector<ScriptCommand> commands;
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      std::string_view line = lines_[i];
      if (line.empty()) continue;
      std::string_view rest = line;
      std::string command = lower(next_word(rest));
      if (command == "clear") {
        commands.emplace_back(std::in_place_type<ClearCommand>, line_number(i));
      } else if (command.starts_with("load")) {
        commands.emplace_back(std::in_place_type<LoadCommand>, parse_load(i));
      } else if (command.starts_with("eval")) {
        commands.emplace_back(std::in_place_type<EvalCommand>, parse_eval(i));
      } else {
        commands.emplace_back(std::in_place_type<UnreadableCommand>, line_number(i), std::string(line), "unknown command");
        skip_block(i);
      }
    }
    return commands;
  }

 private:
  static int line_number(std::size_t index) { return static_cast<int>(index) + 1; }
  bool block_continues(std::size_t i) const { return i + 1 < lines_.size() && !lines_[i + 1].empty(); }
  void skip_block(std::size_t& i) const {
    while (block_continues(i)) ++i;
  }

  LoadCommand parse_load(std::size_t& i) {
    LoadCommand load;
    load.line = line_number(i);
    std::string_view rest = lines_[i];
    std::string_view keyword = next_word(rest);
    bool with_nhcb = keyword == "load_with_nhcb";
    if ((keyword != "load" && !with_nhcb) || rest.empty()) {
      load.unreadable = "invalid load command, expected load[_with_nhcb] <step>";
      skip_block(i);
      return load;
    }
    auto step = parse_script_duration(rest);
    if (!step) {
      load.unreadable = fmt::format("invalid load step \"{}\": {}", rest, step.error());
      skip_block(i);
      return load;
    }
    load.step_ms = *step;

    bool all_have_start_timestamps = false;
    std::set<store::Labels> with_start_timestamps;
    auto mark_unloadable = [&](int line, store::Labels labels, std::string reason) {
      std::erase_if(load.series, [&](const auto& s) { return s.labels == labels; });
      load.unloadable.push_back({line, std::move(labels), std::move(reason)});
    };
    while (block_continues(i)) {
      ++i;
      std::string_view line = lines_[i];
      std::string_view first = label_part(line);
      if (first.ends_with("@st")) {
        // Start timestamps (Prometheus 3.x's created-timestamp samples) change what rate() and
        // friends compute; without them the data would be silently different.
        std::string_view metric = first.substr(0, first.size() - 3);
        if (metric.empty()) {
          all_have_start_timestamps = true;
          continue;
        }
        auto labels = promql::parse_series_labels(metric);
        if (!labels) {
          load.unreadable = fmt::format("line {}: {}", line_number(i), labels.error());
          continue;
        }
        with_start_timestamps.insert(*labels);
        continue;
      }
      auto series = promql::parse_series_description(line);
      if (!series) {
        auto labels = promql::parse_series_labels(label_part(line));
        bool unsupported = series.error().find("unsupported") != std::string::npos;
        if (unsupported && labels) {
          mark_unloadable(line_number(i), *labels, "native histogram samples are unsupported");
        } else {
          load.unreadable = fmt::format("line {}: {}", line_number(i), series.error());
        }
        continue;
      }
      if (all_have_start_timestamps || with_start_timestamps.contains(series->labels)) {
        mark_unloadable(line_number(i), series->labels, "start timestamps (@st) are unsupported");
        continue;
      }
      std::erase_if(load.series, [&](const auto& s) { return s.labels == series->labels; });
      std::erase_if(load.unloadable, [&](const auto& s) { return s.labels == series->labels; });
      if (with_nhcb) {
        if (auto nhcb = nhcb_series_for(series->labels)) {
          bool known = std::ranges::any_of(load.unloadable, [&](const auto& s) { return s.labels == *nhcb; });
          if (!known) {
            load.unloadable.push_back({line_number(i), *nhcb, "load_with_nhcb: native histograms are unsupported"});
          }
        }
      }
      load.series.push_back(std::move(*series));
    }
    return load;
  }

  EvalCommand parse_eval(std::size_t& i) {
    EvalCommand eval;
    eval.line = line_number(i);
    eval.expr = std::string(lines_[i]);
    auto header = read_eval_header(lines_[i], eval);
    if (!header) {
      eval.unreadable = header.error();
      skip_block(i);
      return eval;
    }
    int position = 1;
    int explicit_fail_lines = 0;
    for (; block_continues(i); ++position) {
      ++i;
      std::string_view line = lines_[i];
      auto fail_with = [&](std::string why) {
        if (eval.unreadable.empty()) eval.unreadable = fmt::format("line {}: {}", line_number(i), why);
      };
      bool legacy_fail = std::ranges::any_of(eval.expectations, [](const auto& e) { return e.kind == Kind::kFail; }) &&
                         explicit_fail_lines == 0;
      if (legacy_fail && (line.starts_with("expected_fail_message") || line.starts_with("expected_fail_regexp"))) {
        bool regex = line.starts_with("expected_fail_regexp");
        std::string text(trim(line.substr(std::string_view("expected_fail_message").size())));
        if (regex && !RE2(text).ok()) fail_with(fmt::format("invalid regexp \"{}\"", text));
        eval.expectations.push_back(
            {Kind::kFail, {regex ? MessageMatch::Kind::kRegex : MessageMatch::Kind::kExact, std::move(text)}});
        break;  // promqltest ends the block here
      }
      if (line.starts_with("expect range vector")) {
        if (auto ok = read_expect_range_vector(line, eval); !ok) fail_with(ok.error());
        continue;
      }
      if (line.starts_with("expect string")) {
        auto text = promql::unquote_string_literal(trim(line.substr(std::string_view("expect string").size())));
        if (!text) {
          fail_with("expected string literal not valid: " + text.error());
        } else {
          eval.expected_string = std::move(*text);
        }
        eval.exclude_from_range_check = true;
        continue;
      }
      if (line.substr(0, line.find(' ')) == "expect") {
        --position;  // expect lines do not count as result positions
        auto expectation = read_expectation(line);
        if (!expectation) {
          fail_with(expectation.error());
          continue;
        }
        if (expectation->kind == Kind::kFail) {
          if (++explicit_fail_lines > 1) fail_with("multiple expect fail lines are not allowed");
          std::erase_if(eval.expectations,
                        [](const auto& e) { return e.kind == Kind::kFail && e.match.kind == MessageMatch::Kind::kAny; });
        }
        eval.expectations.push_back(std::move(*expectation));
        auto has = [&](Kind k) { return eval.expects(k); };
        if ((has(Kind::kInfo) && has(Kind::kNoInfo)) || (has(Kind::kWarn) && has(Kind::kNoWarn))) {
          fail_with("info and no_info (or warn and no_warn) cannot be used together");
        }
        continue;
      }
      if (auto number = parse_number_line(line)) {
        eval.expected_scalar = *number;
        eval.expected_series.clear();
        break;  // promqltest ends the block after a scalar result
      }
      auto series = promql::parse_series_description(line);
      if (!series) {
        bool unsupported = series.error().find("unsupported") != std::string::npos;
        fail_with(unsupported ? "unsupported: expected native histogram results" : series.error());
        continue;
      }
      if (series->points.size() > 1 && !eval.is_range && !eval.expect_range_vector) {
        fail_with("several values for an instant query need `expect range vector`");
        continue;
      }
      eval.expected_scalar.reset();
      std::erase_if(eval.expected_series, [&](const auto& s) { return s.labels == series->labels; });
      eval.expected_series.push_back({std::move(series->labels), std::move(series->points), position});
    }
    return eval;
  }

  static std::expected<void, std::string> read_eval_header(std::string_view line, EvalCommand& eval) {
    std::string_view rest = line;
    std::string_view keyword = next_word(rest);
    std::string_view variant;
    if (keyword != "eval") {
      if (!keyword.starts_with("eval_")) return std::unexpected(fmt::format("unknown command \"{}\"", keyword));
      variant = keyword.substr(5);
    }
    std::string_view kind = next_word(rest);
    auto read_time = [&](std::string_view what) -> std::expected<std::int64_t, std::string> {
      std::string_view word = next_word(rest);
      auto t = parse_script_duration(word);
      if (!t) return std::unexpected(fmt::format("invalid {} \"{}\": {}", what, word, t.error()));
      return t;
    };
    if (kind == "instant") {
      if (variant != "" && variant != "fail" && variant != "warn" && variant != "ordered" && variant != "info") {
        return std::unexpected(fmt::format("unknown eval variant \"{}\"", keyword));
      }
      if (next_word(rest) != "at") return std::unexpected(std::string("expected `eval instant at <time> <expr>`"));
      auto t = read_time("evaluation time");
      if (!t) return std::unexpected(t.error());
      eval.start_ms = eval.end_ms = *t;
    } else if (kind == "range") {
      if (variant != "" && variant != "fail" && variant != "warn" && variant != "info") {
        return std::unexpected(fmt::format("unknown range eval variant \"{}\"", keyword));
      }
      eval.is_range = true;
      if (next_word(rest) != "from") return std::unexpected(std::string("expected `eval range from <t> to <t> step <d> <expr>`"));
      auto start = read_time("start time");
      if (!start) return std::unexpected(start.error());
      if (next_word(rest) != "to") return std::unexpected(std::string("expected `to` in eval range"));
      auto end = read_time("end time");
      if (!end) return std::unexpected(end.error());
      if (next_word(rest) != "step") return std::unexpected(std::string("expected `step` in eval range"));
      auto step = read_time("step");
      if (!step) return std::unexpected(step.error());
      if (*end < *start) return std::unexpected(std::string("end time is before start time"));
      eval.start_ms = *start;
      eval.end_ms = *end;
      eval.step_ms = *step;
    } else {
      return std::unexpected(std::string("expected `instant` or `range` after eval"));
    }
    if (rest.empty()) return std::unexpected(std::string("missing query expression"));
    eval.expr = std::string(rest);
    if (variant == "fail") eval.expectations.push_back({Kind::kFail, {}});
    if (variant == "ordered") eval.expectations.push_back({Kind::kOrdered, {}});
    eval.legacy_warn = variant == "warn";
    eval.legacy_info = variant == "info";
    return {};
  }

  static std::expected<void, std::string> read_expect_range_vector(std::string_view line, EvalCommand& eval) {
    std::string_view rest = line.substr(std::string_view("expect range vector").size());
    while (!rest.empty() && is_blank(rest.front())) rest.remove_prefix(1);
    std::int64_t times[3];
    const char* words[3] = {"from", "to", "step"};
    for (int k = 0; k < 3; ++k) {
      if (next_word(rest) != words[k]) return std::unexpected(fmt::format("invalid range vector definition \"{}\"", line));
      auto t = parse_script_duration(next_word(rest));
      if (!t) return std::unexpected(fmt::format("invalid range vector definition \"{}\": {}", line, t.error()));
      times[k] = *t;
    }
    if (!rest.empty() || times[1] < times[0]) {
      return std::unexpected(fmt::format("invalid range vector definition \"{}\"", line));
    }
    eval.start_ms = times[0];
    eval.end_ms = times[1];
    eval.step_ms = times[2];
    eval.expect_range_vector = true;
    eval.exclude_from_range_check = true;
    return {};
  }

  static std::expected<Expectation, std::string> read_expectation(std::string_view line) {
    std::string_view rest = line;
    next_word(rest);  // "expect"
    std::string_view type_word = rest.substr(0, std::min(rest.find_first_of(" \t"), rest.size()));
    static const std::pair<std::string_view, Kind> kTypes[] = {
        {"fail", Kind::kFail}, {"ordered", Kind::kOrdered}, {"warn", Kind::kWarn},
        {"no_warn", Kind::kNoWarn}, {"info", Kind::kInfo}, {"no_info", Kind::kNoInfo}};
    auto type = std::ranges::find(kTypes, type_word, &std::pair<std::string_view, Kind>::first);
    if (type == std::end(kTypes)) {
      return std::unexpected(fmt::format("invalid expect statement \"{}\", must be `expect <type> [<match_type>: <string>]`", line));
    }
    Expectation expectation{type->second, {}};
    rest.remove_prefix(type_word.size());
    rest = trim(rest);
    if (rest.empty()) return expectation;
    bool takes_message = type->second == Kind::kFail || type->second == Kind::kWarn || type->second == Kind::kInfo;
    std::size_t colon = rest.find(':');
    std::string_view match_type = colon == std::string_view::npos ? rest : rest.substr(0, colon);
    if (!takes_message || (match_type != "msg" && match_type != "regex")) {
      return std::unexpected(fmt::format("invalid expect statement \"{}\"", line));
    }
    std::string text(trim(rest.substr(colon + 1)));
    if (text.empty()) return std::unexpected(fmt::format("invalid expect statement \"{}\": empty {}", line, match_type));
    if (match_type == "regex") {
      if (!RE2(text).ok()) return std::unexpected(fmt::format("invalid regex \"{}\"", text));
      expectation.match = {MessageMatch::Kind::kRegex, std::move(text)};
    } else {
      expectation.match = {MessageMatch::Kind::kExact, std::move(text)};
    }
    return expectation;
  }

  std::vector<std::string_view> lines_;
};

}  // namespace

bool EvalCommand::expects(Expectation::Kind kind) const {
  return std::ranges::any_of(expectations, [kind](const Expectation& e) { return e.kind == kind; });
}

std::expected<std::int64_t, std::string> parse_script_duration(std::string_view text) {
  if (text == "0") return 0;
  if (text.empty()) return std::unexpected(std::string("empty duration"));
  // Units largest first, each at most once, as Prometheus's model.ParseDuration requires.
  static const std::pair<std::string_view, std::int64_t> kUnits[] = {
      {"y", 365LL * 24 * 3600 * 1000}, {"w", 7LL * 24 * 3600 * 1000}, {"d", 24LL * 3600 * 1000},
      {"h", 3600LL * 1000}, {"m", 60LL * 1000}, {"s", 1000}, {"ms", 1}};
  std::int64_t total = 0;
  std::size_t next_unit = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t digits_end = pos;
    while (digits_end < text.size() && std::isdigit(static_cast<unsigned char>(text[digits_end]))) ++digits_end;
    if (digits_end == pos) return std::unexpected(fmt::format("not a valid duration string: \"{}\"", text));
    std::size_t unit_end = digits_end;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end]))) ++unit_end;
    std::string_view unit = text.substr(digits_end, unit_end - digits_end);
    std::size_t k = next_unit;
    while (k < std::size(kUnits) && kUnits[k].first != unit) ++k;
    if (k == std::size(kUnits)) return std::unexpected(fmt::format("not a valid duration string: \"{}\"", text));
    std::int64_t n = 0;
    auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + digits_end, n);
    if (ec != std::errc() || n > std::numeric_limits<std::int64_t>::max() / kUnits[k].second) {
      return std::unexpected(fmt::format("duration out of range: \"{}\"", text));
    }
    total += n * kUnits[k].second;
    next_unit = k + 1;
    pos = unit_end;
  }
  return total;
}

std::vector<ScriptCommand> parse_script(std::string_view text) { return ScriptParser(text).parse(); }

}  // namespace gpuscope::conformance
