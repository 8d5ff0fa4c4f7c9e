#include "cli/dmon_verb.h"

#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "cli/gpu_selector.h"
#include "cli/stop_signal.h"
#include "export/dmon_table.h"
#include "export/machine_value.h"
#include "export/timestamp_text.h"

namespace gpuscope::cli {

std::expected<DmonOptions, ParseExit> parse_dmon_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "dmon",
      "Print one row per GPU every -d seconds, like nvidia-smi dmon. '-' marks a value the GPU does not report.\n"
      "Groups (-s): p pwr gtemp mtemp | u sm mem enc dec | c mclk pclk | v pviol tviol (power-limited % of the\n"
      "interval, thermal-limited 0/1) | m fb bar1 (MiB) | e sbecc dbecc pci (volatile ECC, PCIe replays) |\n"
      "t rxpci txpci (MB/s). The header repeats every 20 rows.",
      "  gpuscope dmon -s pucv -d 5 -c 12\n  gpuscope dmon -i 0 --format json >> gpu0.ndjson\n"
      "  gpuscope --simulate dmon -c 3     # anywhere: gpuscope's simulated 8x H100 node");
  DmonOptions options;
  std::string delay, count, format = "text";
  app->add_option("-s,--select", options.groups, "metric groups, any of pucvmet (default puc)")->type_name("GROUPS");
  app->add_option("-d,--delay", delay, "seconds between sets of rows (default 1)")->type_name("SECONDS");
  app->add_option("-c,--count", count, "print this many sets of rows, then exit (default: until Ctrl-C)")
      ->type_name("COUNT");
  app->add_option("-i,--id", options.ids, "only these GPUs: indices, UUIDs or PCI bus ids, comma-separated")
      ->type_name("IDS");
  app->add_option("--format", format, "text (default) or json (one object per set, units in key names)")
      ->type_name("FORMAT");
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
  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  options.json = *json;
  if (app->count("-i") > 0) {
    if (auto split = split_gpu_ids(options.ids); !split) return std::unexpected(usage(split.error()));
  }
  return options;
}

int run_dmon(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_dmon_args(args);
  if (!options) return finish(options.error(), inv);
  const auto table = *exporter::DmonTable::from_groups(options->groups);
  auto opened = open_backend(inv);
  if (!opened) return opened.error();
  auto& backend = **opened;
  const auto& gpus = backend.gpus();
  auto selected = select_gpus(options->ids, gpus);
  if (!selected) return usage_error(inv.err, fmt::format("unknown GPU '{}' in -i", selected.error()));

  if (inv.handle_signals) install_stop_handlers();
  // pviol/tviol need the previous reading of the same GPU.
  std::vector<std::optional<model::GpuSample>> previous(gpus.size());
  std::optional<std::chrono::system_clock::time_point> last_time;
  std::chrono::steady_clock::time_point last_steady;
  int rows_since_header = kDmonRowsPerHeader;
  long long sets = 0;
  auto next = std::chrono::steady_clock::now();
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
    std::string text;
    if (options->json) {
      nlohmann::ordered_json doc = {{"timestamp", exporter::iso_timestamp(snapshot.time)},
                                    {"timestamp_unix_seconds", exporter::unix_seconds(snapshot.time)}};
      auto rows = nlohmann::ordered_json::array();
      for (std::size_t k = 0; k < views.size(); ++k) {
        const auto& prev = previous[(*selected)[k]];
        rows.push_back(table.row_json(views[k], prev ? &*prev : nullptr, interval));
      }
      doc["gpus"] = std::move(rows);
      text = exporter::json_line(doc) + "\n";
    } else {
      if (rows_since_header >= kDmonRowsPerHeader) {
        text += table.header();
        rows_since_header = 0;
      }
      for (std::size_t k = 0; k < views.size(); ++k) {
        const auto& prev = previous[(*selected)[k]];
        text += table.row(views[k], prev ? &*prev : nullptr, interval);
        ++rows_since_header;
      }
    }
    inv.out << text;
    inv.out.flush();
    if (!inv.out) return kExitRuntime;
    for (std::size_t k = 0; k < views.size(); ++k) previous[(*selected)[k]] = views[k].sample;
    last_time = snapshot.time;
    last_steady = now_steady;

    if (options->count && ++sets >= *options->count) break;
    next = std::max(next + options->delay, std::chrono::steady_clock::now());
    if (!sleep_until_or_stopped(next, inv.stop)) break;
  }
  return kExitOk;
}

}  // namespace gpuscope::cli
