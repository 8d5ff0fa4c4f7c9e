// Recorded GPU history read from files, for `gpuscope import`: a Prometheus query_range answer (what any
// Prometheus, or the agent's own /api/v1/query_range, returns) or an `nvidia-smi --query-gpu ...
// --format=csv -l N` log, as series under dcgm-exporter's names and units, ready to append to a store.
// The readers never fail on one bad point or line: they report it and go on; only a file that is not
// a recording at all is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "store/labels.h"
#include "store/queryable.h"

namespace gpuscope::recording {

struct RecordedSeries {
  store::Labels labels;
  std::vector<store::Sample> samples;  // in file order; the importer sorts them
};

// A line (CSV) or a point (JSON: "result[2].values[7]") that was skipped, and why.
struct SkippedLine {
  std::string where;
  std::string what;
};

struct Recording {
  std::string format;  // "Prometheus query_range JSON" or "nvidia-smi CSV": for the summary
  std::vector<RecordedSeries> series;
  std::vector<SkippedLine> skipped;
  // CSV columns that have no DCGM name (clocks.gr, ...) or that gpuscope does not know: left out.
  std::vector<std::string> ignored_columns;
};

struct ReadOptions {
  // Sets the Hostname label of every series (dcgm-exporter's name for it); empty leaves labels alone.
  std::string hostname;
  // nvidia-smi prints its timestamps in the node's local time without a zone: seconds east of UTC
  // that the log's clock was at (0: the log is read as UTC).
  std::int64_t utc_offset_s = 0;
};

// The file's bytes, gunzipped when they start with gzip's magic (whatever the file is named).
std::expected<std::string, std::string> read_maybe_gzipped(const std::filesystem::path& file);

// Either format, told apart by the first non-blank byte ('{': JSON; otherwise a CSV with a header).
// The error (one line, without the file name) says why the text is not a recording.
std::expected<Recording, std::string> parse_recording(std::string_view text, const ReadOptions& options);

std::expected<Recording, std::string> parse_query_range_json(std::string_view text, const ReadOptions& options);
std::expected<Recording, std::string> parse_smi_csv(std::string_view text, const ReadOptions& options);

}  // namespace gpuscope::recording
