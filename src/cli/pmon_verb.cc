#include "cli/pmon_verb.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "cli/gpu_selector.h"
#include "cli/stop_signal.h"
#include "export/pmon_table.h"
#include "model/printable_text.h"

namespace gpuscope::cli {

std::expected<PmonOptions, ParseExit> parse_pmon_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "pmon",
      "Print one row per process per GPU every -d seconds, like nvidia-smi pmon: its type (C compute,\n"
      "G graphics, C+G), with -s u its SM, memory, encoder, decoder, JPEG and OFA utilization (%), with\n"
      "-s m its device memory (fb, MiB) and its confidential-compute protected memory (ccpm, MiB).\n"
      "'-' marks a figure NVML had no sample for in the interval (an idle process); a GPU without\n"
      "processes gets one row of '-'.",
      "  gpuscope pmon -c 5\n  gpuscope pmon -s um -o DT -f procs.log\n"
      "  gpuscope --simulate pmon -c 2     # anywhere: gpuscope's simulated 8x H100 node");
  PmonOptions options;
  std::string delay, count, time_letters;
  app->add_option("-s,--select", options.groups, "u utilization, m memory, or both (default u)")->type_name("GROUPS");
  app->add_option("-d,--delay", delay, "seconds between sets of rows, 1 to 10 (default 1)")->type_name("SECONDS");
  app->add_option("-c,--count", count, "print this many sets of rows, then exit (default: until Ctrl-C)")
      ->type_name("COUNT");
  app->add_option("-i,--id", options.ids, "only these GPUs: indices, UUIDs or PCI bus ids, comma-separated")
      ->type_name("IDS");
  app->add_option("-o,--options", time_letters, "D: a Date column (YYYYMMDD), T: a Time column (HH:MM:SS), local time")
      ->type_name("DT");
  app->add_option("-f,--filename", options.file, "write to FILE (created or emptied) instead of stdout")
      ->type_name("FILE");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());

  if (auto table = exporter::PmonTable::from_groups(options.groups); !table) {
    return std::unexpected(usage(
        table.error().letter.empty()
            ? std::string("empty metric group list in -s (u, m or um)")
            : fmt::format("unknown metric group '{}' in -s '{}' (u, m or um)", table.error().letter, options.groups)));
  }
  if (app->count("-d") > 0) {
    auto d = positive_integer(delay);
    if (!d || *d > kPmonMaxDelaySeconds) {
      return std::unexpected(usage(fmt::format("invalid value '{}' for -d (whole seconds, 1 to 10)", delay)));
    }
    options.delay = std::chrono::seconds(*d);
  }
  if (app->count("-c") > 0) {
    options.count = positive_integer(count);
    if (!options.count) return std::unexpected(usage(fmt::format("invalid value '{}' for -c (a count > 0)", count)));
  }
  if (app->count("-o") > 0 && !exporter::parse_time_columns(time_letters, options.time)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for -o (D, T or DT)", time_letters)));
  }
  if (app->count("-f") > 0 && options.file.empty()) return std::unexpected(usage("empty file name for -f"));
  if (app->count("-i") > 0) {
    if (auto split = split_gpu_ids(options.ids); !split) return std::unexpected(usage(split.error()));
  }
  return options;
}

int run_pmon(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_pmon_args(args);
  if (!options) return finish(options.error(), inv);
  const auto table = *exporter::PmonTable::from_groups(options->groups);
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
  // The newest utilization sample seen on each GPU: each interval shows only what came after it.
  std::vector<unsigned long long> last_seen_us(gpus.size(), 0);
  long long sets = 0;
  auto next = std::chrono::steady_clock::now();
  std::string text = table.header(options->time);
  const bool wants_memory = options->groups.find('m') != std::string::npos;
  while (true) {
    const model::Snapshot snapshot = backend.sample();
    const auto views = views_of(gpus, snapshot, *selected);
    // Date and Time are the wall clock's, as nvidia-smi prints them, not the simulator's.
    const auto wall = std::chrono::system_clock::now();
    for (std::size_t k = 0; k < views.size(); ++k) {
      const std::size_t gpu = (*selected)[k];
      const auto& sample = views[k].sample;
      std::vector<exporter::PmonProcessRow> rows;
      if (sample.up && !sample.processes.empty()) {
        const auto engines = backend.process_engines(gpu, last_seen_us[gpu]);
        // ccpm: one more call per GPU, only when -s m shows it; '-' where the driver cannot say.
        const auto protected_memory = wants_memory ? backend.process_protected_memory(gpu)
                                                   : std::expected<std::map<unsigned, std::uint64_t>, int>{};
        std::unordered_map<unsigned, const nvml::ProcessEngineSample*> newest;
        for (const auto& e : engines.samples) {
          auto& slot = newest[e.pid];
          if (slot == nullptr || e.time_us >= slot->time_us) slot = &e;
          last_seen_us[gpu] = std::max(last_seen_us[gpu], e.time_us);
        }
        for (const auto& p : sample.processes) {
          exporter::PmonProcessRow row;
          row.pid = p.pid;
          row.kind = p.kind;
          if (auto it = newest.find(p.pid); it != newest.end()) {
            const auto& e = *it->second;
            row.sm = e.sm;
            row.mem = e.mem;
            row.enc = e.enc;
            row.dec = e.dec;
            row.jpg = e.jpg;
            row.ofa = e.ofa;
          }
          if (p.used_memory_bytes) row.fb_mib = static_cast<double>(*p.used_memory_bytes) / (1024.0 * 1024.0);
          if (protected_memory) {
            if (auto it = protected_memory->find(p.pid); it != protected_memory->end()) {
              row.ccpm_mib = static_cast<double>(it->second) / (1024.0 * 1024.0);
            }
          }
          row.command = model::printable_text(p.identity.name);
          rows.push_back(std::move(row));
        }
      }
      text += table.rows(options->time, wall, views[k].info.index, rows);
    }
    *out << text;
    out->flush();
    if (!*out) {
      if (!options->file.empty()) inv.err << fmt::format("gpuscope: cannot write to '{}' (-f)\n", options->file);
      return kExitRuntime;
    }
    text.clear();

    if (options->count && ++sets >= *options->count) break;
    next = std::max(next + options->delay, std::chrono::steady_clock::now());
    if (!sleep_until_or_stopped(next, inv.stop)) break;
  }
  return kExitOk;
}

}  // namespace gpuscope::cli
