// PromQL test scripts in Prometheus's promqltest format (load / clear / eval with expected results),
// read into commands that the conformance harness runs against gpuscope's engine.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "promql/series_notation.h"
#include "store/labels.h"

namespace gpuscope::conformance {

// A Prometheus duration as the scripts write times and steps: "0", "90s", "1h5m", "20s500ms".
std::expected<std::int64_t, std::string> parse_script_duration(std::string_view text);

// A series of a `load` that gpuscope cannot store faithfully (native histogram samples, start
// timestamps, a with_nhcb conversion). Queries that select it are skipped, not run on partial data.
struct UnloadableSeries {
  int line = 0;
  store::Labels labels;
  std::string reason;
};

struct LoadCommand {
  int line = 0;
  std::int64_t step_ms = 0;
  std::vector<promql::SeriesDescription> series;  // a later line for the same labels replaces an earlier
  std::vector<UnloadableSeries> unloadable;
  // Set when part of the block could not be read at all (labels unknown): every query until the
  // next `clear` is skipped, since any of them might select the missing data.
  std::string unreadable;
};

struct ClearCommand {
  int line = 0;
};

struct MessageMatch {
  enum class Kind { kAny, kExact, kRegex };
  Kind kind = Kind::kAny;
  std::string text;
};

struct Expectation {
  enum class Kind { kFail, kOrdered, kWarn, kNoWarn, kInfo, kNoInfo };
  Kind kind = Kind::kFail;
  MessageMatch match;
};

struct ExpectedSeries {
  store::Labels labels;
  std::vector<promql::SeriesPoint> points;
  int position = 0;  // 1-based, as promqltest counts it for `ordered`
};

struct EvalCommand {
  int line = 0;
  std::string expr;
  bool is_range = false;
  // Instant: start_ms == end_ms == the evaluation time and step_ms == 0, unless `expect range vector`
  // set them (the query then runs at end_ms and its matrix is checked against that grid).
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
  std::int64_t step_ms = 0;
  bool expect_range_vector = false;
  bool exclude_from_range_check = false;  // `expect range vector` / `expect string`

  std::vector<Expectation> expectations;  // including the eval_fail/eval_ordered/... spellings
  bool legacy_warn = false;               // eval_warn: at least one warning
  bool legacy_info = false;               // eval_info: at least one info annotation

  std::optional<double> expected_scalar;
  std::vector<ExpectedSeries> expected_series;  // distinct labels; a repeated labelset replaces
  std::string expected_string;

  // Non-empty: the case cannot be run as written (native histogram results, a malformed line).
  std::string unreadable;

  bool expects(Expectation::Kind kind) const;
  bool expects_failure() const { return expects(Expectation::Kind::kFail); }
  bool ordered() const { return expects(Expectation::Kind::kOrdered); }
};

// A line that is no command promqltest knows, or an eval/load header that does not parse.
struct UnreadableCommand {
  int line = 0;
  std::string text;
  std::string reason;
};

using ScriptCommand = std::variant<LoadCommand, ClearCommand, EvalCommand, UnreadableCommand>;

// Never fails as a whole: what cannot be read is kept as UnreadableCommand or as a reason on the
// command it belongs to, so one odd line costs one case, not the file. Line numbers are 1-based.
std::vector<ScriptCommand> parse_script(std::string_view text);

}  // namespace gpuscope::conformance
