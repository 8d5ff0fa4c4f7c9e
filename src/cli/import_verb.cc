#include "cli/import_verb.h"

#include <charconv>
#include <chrono>
#include <limits>
#include <optional>
#include <ostream>

#include <fmt/format.h>

#include "agent/data_dir_lock.h"
#include "model/printable_text.h"
#include "recording/recording.h"
#include "recording/recording_import.h"
#include "store/tsdb.h"
#include "model/clock.h"

namespace gpuscope::cli {
namespace {

// An import keeps whatever it is given, however old (a post-mortem months later): retention is the
// agent's business when it next runs on the directory, never the importer's. Half of int64 so that
// now - retention cannot overflow.
constexpr std::int64_t kImportRetentionMs = std::numeric_limits<std::int64_t>::max() / 2;

// "+02:00", "-05:30", "+0530", "0", "Z": seconds east of UTC; nullopt for anything else.
std::optional<std::int64_t> parse_utc_offset(std::string_view text) {
  if (text == "0" || text == "Z" || text == "UTC") return 0;
  if (text.size() < 3 || (text[0] != '+' && text[0] != '-')) return std::nullopt;
  const int sign = text[0] == '-' ? -1 : 1;
  std::string digits;
  for (const char c : text.substr(1)) {
    if (c != ':') digits.push_back(c);
  }
  if (digits.size() != 2 && digits.size() != 4) return std::nullopt;
  int hours = 0, minutes = 0;
  const auto num = [](std::string_view s, int& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && p == s.data() + s.size();
  };
  if (!num(std::string_view(digits).substr(0, 2), hours)) return std::nullopt;
  if (digits.size() == 4 && !num(std::string_view(digits).substr(2), minutes)) return std::nullopt;
  // Zones run from UTC-12 to UTC+14.
  if (hours > 14 || minutes > 59) return std::nullopt;
  return sign * (hours * 3600LL + minutes * 60LL);
}

}  // namespace

std::expected<ImportOptions, ParseExit> parse_import_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "import",
      "Load recorded history into a data directory, for eval --data-dir, serve and the rest to read: a\n"
      "Prometheus query_range answer (JSON, as any Prometheus or the agent's /api/v1/query_range returns\n"
      "it) or an nvidia-smi --query-gpu=timestamp,index,... --format=csv -l N log, mapped to\n"
      "dcgm-exporter's names and units. Gzip files are read as they are. Importing a file twice adds\n"
      "nothing; bad lines are reported with their line number and skipped. A running agent's data\n"
      "directory is refused.",
      "  gpuscope import --data-dir /tmp/incident history.json.gz\n"
      "  gpuscope import --data-dir /tmp/incident --hostname node7 --utc-offset +01:00 /var/log/gpu-stats.csv");
  ImportOptions o;
  std::string offset = "0";
  app->add_option("files", o.files, "recordings to load (.json, .csv, either gzipped)")->required()->type_name("FILE");
  app->add_option("--data-dir", o.data_dir, "the data directory to load into (created if missing)")
      ->required()
      ->type_name("DIR");
  app->add_option("--hostname", o.hostname, "set the Hostname label of every imported series (default: as recorded)")
      ->type_name("NAME");
  app->add_option("--utc-offset", offset,
                  "the zone nvidia-smi printed a CSV log's timestamps in, e.g. +01:00 (default 0: UTC)")
      ->type_name("+HH:MM");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  const auto seconds = parse_utc_offset(offset);
  if (!seconds) return std::unexpected(usage(fmt::format("invalid --utc-offset '{}' (e.g. +01:00, -05:30, 0)", offset)));
  o.utc_offset_s = *seconds;
  if (o.data_dir.empty()) return std::unexpected(usage("--data-dir needs a directory"));
  return o;
}

int run_import(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_import_args(args);
  if (!options) return finish(options.error(), inv);
  const ImportOptions& o = *options;
  const recording::ReadOptions read{o.hostname, o.utc_offset_s};

  // Every file is read before anything is written: a file that is not a recording stops the import
  // with nothing half-loaded.
  std::vector<recording::Recording> recordings;
  for (const auto& file : o.files) {
    auto text = recording::read_maybe_gzipped(file);
    if (!text) return usage_error(inv.err, fmt::format("{}: {}", file, text.error()));
    auto rec = recording::parse_recording(*text, read);
    if (!rec) return usage_error(inv.err, fmt::format("{}: {}", file, rec.error()));
    // What a bad line says comes from the file: escaped, so a binary line cannot garble the terminal.
    for (const auto& s : rec->skipped) {
      inv.err << fmt::format("gpuscope: {}: {}: {}; skipped\n", model::printable_text(file), s.where,
                             model::printable_text(s.what));
    }
    if (!rec->ignored_columns.empty()) {
      std::string names;
      for (const auto& n : rec->ignored_columns) names += (names.empty() ? "" : ", ") + n;
      inv.err << fmt::format("gpuscope: {}: columns without a DCGM name left out: {}\n", model::printable_text(file),
                             model::printable_text(names));
    }
    recordings.push_back(std::move(*rec));
  }

  // The agent's lock: an import never writes into a directory a running agent appends to.
  auto lock = agent::DataDirLock::acquire(o.data_dir);
  if (!lock) {
    inv.err << fmt::format("gpuscope: data directory {}: {} (import into it once the agent has stopped)\n",
                           o.data_dir, lock.error());
    return kExitRuntime;
  }
  const std::int64_t now = model::system_clock().unix_ms();
  store::TsdbOptions so;
  so.data_dir = o.data_dir;
  so.retention_ms = kImportRetentionMs;
  so.warn = [&inv](std::string_view line) { inv.err << "gpuscope: warning: " << line << '\n'; };
  auto tsdb = store::Tsdb::open(std::move(so), now);
  if (!tsdb) {
    inv.err << fmt::format("gpuscope: data directory {}: {}\n", o.data_dir, tsdb.error());
    return kExitRuntime;
  }

  for (std::size_t i = 0; i < recordings.size(); ++i) {
    const std::string format = recordings[i].format;
    const std::size_t skipped = recordings[i].skipped.size();
    auto counts = recording::import_recording(**tsdb, std::move(recordings[i]));
    if (!counts) {
      inv.err << fmt::format("gpuscope: {}: {}\n", o.files[i], counts.error());
      return kExitRuntime;
    }
    inv.out << fmt::format("{} ({}): {} series, {} samples imported, {} already present, {} lines skipped",
                           o.files[i], format, counts->series, counts->imported, counts->already_present, skipped);
    if (counts->before_stored > 0) {
      inv.out << fmt::format(", {} older than the data directory's newest sample of their series (not imported)",
                             counts->before_stored);
    }
    inv.out << '\n';
  }
  if (auto flushed = (*tsdb)->flush(model::system_clock().unix_ms()); !flushed) {
    inv.err << fmt::format("gpuscope: data directory {}: cannot write: {}\n", o.data_dir, flushed.error());
    return kExitRuntime;
  }
  inv.out.flush();
  return kExitOk;
}

}  // namespace gpuscope::cli
