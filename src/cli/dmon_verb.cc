#include "cli/dmon_verb.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "cli/gpu_selector.h"
#include "cli/stop_signal.h"
#include "export/dcgmi_dmon_table.h"
#include "export/machine_value.h"
#include "export/mig_instance_rows.h"
#include "export/timestamp_text.h"

namespace gpuscope::cli {
namespace {

// --format as nvidia-smi dmon takes it: comma-separated words, "csv,nounit" or "noheader". gpuscope adds
// json (NDJSON, never with csv) and keeps text/table for the plain table.
std::optional<ParseExit> parse_dmon_format(std::string_view value, DmonOptions& options) {
  bool csv = false, json = false;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = value.find(',', start);
    const std::string_view word =
        value.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (word == "csv") {
      csv = true;
    } else if (word == "json") {
      json = true;
    } else if (word == "nounit") {
      options.layout.units = false;
    } else if (word == "noheader") {
      options.layout.names = false;
    } else if (word != "text" && word != "table") {
      return usage(fmt::format("unknown format '{}' in --format (text, csv or json; csv and text take nounit and noheader)",
                               word));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (csv && json) return usage(fmt::format("--format '{}': csv and json cannot be combined", value));
  if (json && (!options.layout.units || !options.layout.names)) {
    return usage(fmt::format("--format '{}': json has no header lines, so nounit and noheader do not apply", value));
  }
  options.layout.csv = csv;
  options.json = json;
  return std::nullopt;
}

}  // namespace

std::expected<DmonOptions, ParseExit> parse_dmon_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "dmon",
      "Print one row per GPU every -d seconds, like nvidia-smi dmon. '-' marks a value the GPU does not\n"
      "report. Groups (-s): p pwr gtemp mtemp | u sm mem enc dec jpg ofa | c mclk pclk | v pviol tviol\n"
      "(power-limited % of the interval, thermal-limited 0/1) | m fb bar1 ccpm (MiB; ccpm: confidential-\n"
      "compute protected memory) | e sbecc dbecc pci (volatile ECC, PCIe replays) | t rxpci txpci (MB/s).\n"
      "The header repeats every 20 rows. -e prints DCGM field ids in dcgmi dmon's layout instead (-d\n"
      "stays in seconds: dcgmi dmon -d 1000 is gpuscope dmon -d 1). Under a GPU in MIG mode, one row per\n"
      "GPU instance, named 0/1 (GPU 0, GPU instance 1; with -e: GPU-I 0/1), with what an instance has of\n"
      "its own (fb; with -e the FB and profiling fields) and '-' (N/A) elsewhere.",
      "  gpuscope dmon -s pucv -d 5 -c 12\n  gpuscope dmon -s pum -o DT --format csv,nounit -f gpu.csv\n"
      "  gpuscope dmon -i 0 --format json >> gpu0.ndjson\n  gpuscope dmon -e 150,155,156 -c 3\n"
      "  gpuscope --simulate dmon -c 3     # anywhere: gpuscope's simulated 8x H100 node");
  DmonOptions options;
  std::string delay, count, format = "text", time_letters;
  app->add_option("-s,--select", options.groups, "metric groups, any of pucvmet (default puc)")->type_name("GROUPS");
  app->add_option("-d,--delay", delay, "seconds between sets of rows (default 1)")->type_name("SECONDS");
  app->add_option("-c,--count", count, "print this many sets of rows, then exit (default: until Ctrl-C)")
      ->type_name("COUNT");
  app->add_option("-i,--id", options.ids, "only these GPUs: indices, UUIDs or PCI bus ids, comma-separated")
      ->type_name("IDS");
  app->add_option("-o,--options", time_letters, "D: a Date column (YYYYMMDD), T: a Time column (HH:MM:SS), local time")
      ->type_name("DT");
  app->add_option("-f,--filename", options.file, "write to FILE (created or emptied) instead of stdout")
      ->type_name("FILE");
  app->add_option("--format", format,
                  "text (default), csv (', '-separated) or json (one object per set, units in key names); "
                  "nounit and noheader drop a header line: --format csv,nounit")
      ->type_name("FORMAT");
  app->add_option("-e,--field-id", options.dcgm_fields,
                  "DCGM field ids, comma-separated, printed like dcgmi dmon -e (e.g. 150,155,156)")
      ->type_name("IDS");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());

  if (auto table = exporter::DmonTable::from_groups(options.groups); !table) {
    return std::unexpected(usage(
        table.error().letter.empty()
            ? std::string("empty metric group list in -s (any of pucvmet)")
            : fmt::format("unknown metric group '{}' in -s '{}' (any of pucvmet)", table.error().letter, options.groups)));
  }
  if (app->count("-d") > 0) {
    auto d = positive_integer(delay);
    if (!d || *d > 86400) {
      return std::unexpected(usage(fmt::format("invalid value '{}' for -d (a whole number of seconds > 0)", delay)));
    }
    options.delay = std::chrono::seconds(*d);
  }
  if (app->count("-c") > 0) {
    options.count = positive_integer(count);
    if (!options.count) return std::unexpected(usage(fmt::format("invalid value '{}' for -c (a count > 0)", count)));
  }
  if (auto bad = parse_dmon_format(format, options)) return std::unexpected(*bad);
  if (app->count("-o") > 0) {
    if (!exporter::parse_time_columns(time_letters, options.layout.time)) {
      return std::unexpected(usage(fmt::format("invalid value '{}' for -o (D, T or DT)", time_letters)));
    }
    if (options.json) {
      return std::unexpected(usage("-o adds columns to the text and CSV tables; --format json rows carry a timestamp"));
    }
  }
  if (app->count("-f") > 0 && options.file.empty()) return std::unexpected(usage("empty file name for -f"));
  if (app->count("-e") > 0) {
    if (app->count("-s") > 0) {
      return std::unexpected(usage("-e and -s cannot be combined (-e picks DCGM fields, -s nvidia-smi's groups)"));
    }
    if (options.json || options.layout.csv || !options.layout.names || !options.layout.units ||
        options.layout.time.any()) {
      return std::unexpected(usage("-e prints dcgmi dmon's layout: --format and -o do not apply"));
    }
    if (auto fields = exporter::DcgmiDmonTable::from_ids(options.dcgm_fields); !fields) {
      const auto& e = fields.error();
      if (e.token.empty()) {
        return std::unexpected(usage(fmt::format("empty DCGM field id in -e '{}'", options.dcgm_fields)));
      }
      if (e.not_a_number) {
        return std::unexpected(usage(fmt::format("invalid DCGM field id '{}' in -e (comma-separated numbers)", e.token)));
      }
      return std::unexpected(usage(fmt::format("unknown DCGM field id '{}' in -e (gpuscope reads {})", e.token,
                                               exporter::DcgmiDmonTable::supported_ids())));
    }
  }
  if (app->count("-i") > 0) {
    if (auto split = split_gpu_ids(options.ids); !split) return std::unexpected(usage(split.error()));
  }
  return options;
}

int run_dmon(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_dmon_args(args);
  if (!options) return finish(options.error(), inv);
  const auto table = *exporter::DmonTable::from_groups(options->groups);
  std::optional<exporter::DcgmiDmonTable> dcgmi;
  if (!options->dcgm_fields.empty()) dcgmi = *exporter::DcgmiDmonTable::from_ids(options->dcgm_fields);
  auto opened = open_backend(inv);
  if (!opened) return opened.error();
  auto& backend = **opened;
  const auto& gpus = backend.gpus();
  auto selected = select_gpus(options->ids, gpus);
  if (!selected) return usage_error(inv.err, fmt::format("unknown GPU '{}' in -i", selected.error()));

  std::ofstream file;
  std::ostream* out = open_output_file(options->file, file, inv);
  if (out == nullptr) return kExitRuntime;

  if (inv.handle_signals) install_stop_handlers();
  // jpg, ofa and ccpm are not in the sample: one details read per GPU per interval, only when shown.
  const bool read_details = !dcgmi && table.needs_details();
  // pviol/tviol need the previous reading of the same GPU.
  std::vector<std::optional<model::GpuSample>> previous(gpus.size());
  std::optional<std::chrono::system_clock::time_point> last_time;
  std::chrono::steady_clock::time_point last_steady;
  int rows_since_header = kDmonRowsPerHeader;
  exporter::DcgmiHeaderSchedule dcgmi_headers;
  long long sets = 0;
  auto next = std::chrono::steady_clock::now();
  if (dcgmi) *out << dcgmi->header();
  while (true) {
    const model::Snapshot snapshot = backend.sample();
    const auto now_steady = std::chrono::steady_clock::now();
    // The driver's clock measures the interval the counters moved in; a frozen simulated clock does not
    // move, so the steady clock stands in.
    std::chrono::nanoseconds interval{0};
    if (last_time) {
      interval = snapshot.time - *last_time;
      if (interval.count() <= 0) interval = now_steady - last_steady;
    }
    const auto views = views_of(gpus, snapshot, *selected);
    std::vector<model::GpuDetails> details(read_details ? views.size() : 0);
    for (std::size_t k = 0; k < details.size(); ++k) {
      details[k] = backend.details((*selected)[k], nvml::NvmlBackend::DetailSet::kDmon);
    }
    auto reading = [&](std::size_t k) {
      const auto& prev = previous[(*selected)[k]];
      return exporter::DmonReading{views[k], prev ? &*prev : nullptr, interval, read_details ? &details[k] : nullptr};
    };
    std::string text;
    if (dcgmi) {
      for (const auto& view : views) {
        text += dcgmi->row(view);
        for (const auto* m : exporter::gpu_instances_of(view.sample)) text += dcgmi->instance_row(view, *m);
      }
    } else if (options->json) {
      nlohmann::ordered_json doc = {{"timestamp", exporter::iso_timestamp(snapshot.time)},
                                    {"timestamp_unix_seconds", exporter::unix_seconds(snapshot.time)}};
      auto rows = nlohmann::ordered_json::array();
      for (std::size_t k = 0; k < views.size(); ++k) rows.push_back(table.row_json(reading(k)));
      doc["gpus"] = std::move(rows);
      text = exporter::json_line(doc) + "\n";
    } else {
      if (rows_since_header >= kDmonRowsPerHeader) {
        text += table.header(options->layout);
        rows_since_header = 0;
      }
      // Date and Time are the wall clock's, as nvidia-smi prints them, not the simulator's.
      const auto wall = std::chrono::system_clock::now();
      for (std::size_t k = 0; k < views.size(); ++k) {
        text += table.row(options->layout, wall, reading(k));
        ++rows_since_header;
        for (const auto* m : exporter::gpu_instances_of(views[k].sample)) {
          text += table.instance_row(options->layout, wall, views[k], *m);
          ++rows_since_header;
        }
      }
    }
    *out << text;
    out->flush();
    if (!*out) {
      if (!options->file.empty()) inv.err << fmt::format("gpuscope: cannot write to '{}' (-f)\n", options->file);
      return kExitRuntime;
    }
    for (std::size_t k = 0; k < views.size(); ++k) previous[(*selected)[k]] = views[k].sample;
    last_time = snapshot.time;
    last_steady = now_steady;

    if (options->count && ++sets >= *options->count) break;
    next = std::max(next + options->delay, std::chrono::steady_clock::now());
    if (!sleep_until_or_stopped(next, inv.stop)) break;
    if (dcgmi && dcgmi_headers.due_after_pause()) *out << dcgmi->header();
  }
  return kExitOk;
}

}  // namespace gpuscope::cli
