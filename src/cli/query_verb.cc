#include "cli/query_verb.h"

#include <optional>
#include <ostream>

#include <fmt/format.h>

#include "cli/gpu_selector.h"
#include "cli/stop_signal.h"
#include "export/gpu_query_json.h"
#include "export/machine_value.h"
#include "export/nvml_error_text.h"
#include "export/smi_q_report.h"
#include "nvml/nvml_backend.h"

namespace gpuscope::cli {
namespace {

constexpr std::string_view kExample =
    "  gpuscope query --query-gpu=index,name,temperature.gpu,utilization.gpu,memory.used --format=csv\n"
    "  gpuscope query --query-gpu=timestamp,index,power.draw --format=csv,noheader,nounits -l 5 >> power.csv\n"
    "  gpuscope query --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=json\n"
    "  gpuscope query -q -i 0            # nvidia-smi -q's report; --format=json for the same tree as JSON\n"
    "  gpuscope query --query-retired-pages=gpu_uuid,retired_pages.address,retired_pages.cause --format=csv\n"
    "  gpuscope query --query-mig=gpu_index,mig.index,profile,memory.used,sm_active --format=csv\n"
    "  gpuscope --simulate query --query-gpu=index,utilization.gpu,DCGM_FI_PROF_SM_ACTIVE   # anywhere";

std::string wrapped_names(const std::vector<std::string>& names) {
  std::string out = "  ";
  std::size_t width = 2;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string item = names[i] + (i + 1 < names.size() ? "," : "");
    if (width + item.size() + 1 > 100) {
      out += "\n  ";
      width = 2;
    } else if (i > 0) {
      out += ' ';
      ++width;
    }
    out += item;
    width += item.size();
  }
  return out;
}

// nvidia-smi spells it -lms, a multi-letter short option CLI11 cannot declare.
std::vector<std::string> with_long_loop_ms(std::span<const std::string> args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (a == "-lms") {
      out.emplace_back("--loop-ms");
    } else if (a.starts_with("-lms=")) {
      out.push_back("--loop-ms=" + a.substr(5));
    } else {
      out.push_back(a);
    }
  }
  return out;
}

std::expected<void, ParseExit> parse_format(std::string_view text, QueryOptions& options) {
  bool csv = false;
  bool json = false;
  for (std::string_view part : exporter::split_name_list(text)) {
    if (part == "csv") {
      csv = true;
    } else if (part == "json") {
      json = true;
    } else if (part == "noheader") {
      options.csv.header = false;
    } else if (part == "nounits") {
      options.csv.units = false;
    } else {
      return std::unexpected(
          usage(fmt::format("unknown format '{}' in --format (csv[,noheader][,nounits] or json)", part)));
    }
  }
  if (csv == json) return std::unexpected(usage(fmt::format("--format '{}' must name one of csv or json", text)));
  if (json && (!options.csv.header || !options.csv.units)) {
    return std::unexpected(usage("noheader and nounits apply to --format=csv only"));
  }
  options.json = json;
  return {};
}

// -q: one report of the reading plus what details() reads now of each selected GPU.
void print_smi_q(nvml::NvmlBackend& backend, const model::Snapshot& snapshot, std::span<const exporter::GpuView> views,
                 std::span<const std::size_t> selected, bool json, const Invocation& inv) {
  std::vector<model::GpuDetails> details;
  details.reserve(selected.size());
  for (std::size_t pos : selected) details.push_back(backend.details(pos));
  exporter::SmiQInput input{backend.system(), snapshot.time, backend.gpus().size(), {}};
  for (std::size_t k = 0; k < views.size(); ++k) input.gpus.push_back({views[k].info, views[k].sample, details[k]});
  if (json) {
    inv.out << exporter::json_line(exporter::smi_q_json(input)) << '\n';
  } else {
    inv.out << exporter::smi_q_text(input);
  }
}

}  // namespace

std::expected<QueryOptions, ParseExit> parse_query_args(std::span<const std::string> raw_args) {
  auto app = make_verb_app(
      "query",
      "Read the GPUs once (or every -l seconds) and print the named fields, with nvidia-smi's names and CSV.\n"
      "Unsupported fields print [N/A] in CSV and are absent from JSON; failed reads print NVML's error, "
      "e.g. [Unknown Error].",
      kExample);
  std::string gpu_names, app_names, format = "csv", loop_s, loop_ms, ids;
  app->add_option("--query-gpu", gpu_names, "comma-separated GPU fields (names below)")->type_name("NAMES");
  app->add_option("--query-compute-apps", app_names,
                  "comma-separated process fields: timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, "
                  "process_name, used_gpu_memory (used_memory)")
      ->type_name("NAMES");
  std::string remap_names;
  app->add_option("--query-remapped-rows", remap_names,
                  "comma-separated row-remapping fields, one row per GPU: timestamp, gpu_name, gpu_bus_id, "
                  "gpu_serial, gpu_uuid, remapped_rows.* (correctable[_inactive], uncorrectable[_inactive], "
                  "pending, failure, histogram.max|high|partial|low|none)")
      ->type_name("NAMES");
  std::string retired_names;
  app->add_option("--query-retired-pages", retired_names,
                  "comma-separated retired-page fields, one row per retired page: timestamp, gpu_name, gpu_bus_id, "
                  "gpu_serial, gpu_uuid, retired_pages.address, retired_pages.timestamp, retired_pages.cause "
                  "(pre-Ampere GPUs only; Ampere and newer remap rows instead and list none)")
      ->type_name("NAMES");
  std::string mig_names;
  app->add_option("--query-mig", mig_names,
                  "comma-separated MIG device fields, one row per MIG device of each GPU in MIG mode "
                  "(gpuscope's own; names with --help-query-mig)")
      ->type_name("NAMES");
  bool help_query_mig = false;
  app->add_flag("--help-query-mig", help_query_mig, "list every --query-mig name and what it means");
  app->add_option("--format", format, "csv[,noheader][,nounits] (default csv) or json (one object per reading)")
      ->type_name("FORMAT");
  app->add_option("-l,--loop", loop_s, "repeat every SECONDS until Ctrl-C/SIGTERM, flushing after each reading")
      ->type_name("SECONDS");
  app->add_option("--loop-ms", loop_ms, "(also -lms) repeat every MILLISECONDS")->type_name("MS");
  app->add_option("-i,--id", ids, "only these GPUs: indices, UUIDs or PCI bus ids, comma-separated")
      ->type_name("IDS");
  bool full = false;
  app->add_flag("-q,--query", full,
                "print nvidia-smi -q's report of each GPU (same sections and keys; N/A where gpuscope has no reading)");
  bool help_query_gpu = false;
  app->add_flag("--help-query-gpu", help_query_gpu,
                "list every --query-gpu name with its other spellings and what it means, as nvidia-smi does");
  app->footer(fmt::format("Fields for --query-gpu:\n{}\n  and any DCGM field name of gpuscope's catalog, e.g. "
                          "DCGM_FI_PROF_SM_ACTIVE,\n  DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, DCGM_FI_PROF_DRAM_ACTIVE "
                          "(the profiling ratios that show whether\n  the GPU is really busy)\n\n{}",
                          wrapped_names(exporter::gpu_query_names()), app->get_footer()));

  const auto args = with_long_loop_ms(raw_args);
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  if (help_query_gpu) return std::unexpected(ParseExit{kExitOk, exporter::gpu_query_help()});
  if (help_query_mig) {
    return std::unexpected(ParseExit{
        kExitOk, "Fields for --query-mig (one row per MIG device; memory and activity are its GPU instance's):\n" +
                     exporter::mig_query_help()});
  }

  QueryOptions options;
  const bool has_gpu = app->count("--query-gpu") > 0;
  const bool has_apps = app->count("--query-compute-apps") > 0;
  const bool has_remap = app->count("--query-remapped-rows") > 0;
  const bool has_mig = app->count("--query-mig") > 0;
  const bool has_retired = app->count("--query-retired-pages") > 0;
  std::vector<std::string_view> asked;
  if (has_gpu) asked.push_back("--query-gpu");
  if (has_apps) asked.push_back("--query-compute-apps");
  if (has_remap) asked.push_back("--query-remapped-rows");
  if (has_retired) asked.push_back("--query-retired-pages");
  if (has_mig) asked.push_back("--query-mig");
  if (full) {
    if (!asked.empty()) return std::unexpected(usage(fmt::format("-q and {} cannot be combined", asked.front())));
    if (app->count("--format") > 0 && format != "json") {
      return std::unexpected(
          usage(fmt::format("-q prints text, or JSON with --format=json; not --format '{}'", format)));
    }
    options.full = true;
    options.json = app->count("--format") > 0;
  } else if (asked.size() != 1) {
    return std::unexpected(usage(
        asked.empty() ? std::string("query needs --query-gpu=NAMES, --query-compute-apps=NAMES, --query-remapped-rows=NAMES, "
                                    "--query-retired-pages=NAMES or --query-mig=NAMES")
                      : fmt::format("{} and {} cannot be combined", asked[0], asked[1])));
  }
  if (has_gpu) {
    auto columns = exporter::parse_gpu_query(gpu_names);
    if (!columns) {
      return std::unexpected(usage(columns.error().name.empty()
                                       ? std::string("empty field name in --query-gpu")
                                       : fmt::format("unknown field '{}' in --query-gpu", columns.error().name)));
    }
    options.gpu_columns = std::move(*columns);
  } else if (has_remap) {
    auto columns = exporter::parse_remapped_rows_query(remap_names);
    if (!columns) {
      return std::unexpected(
          usage(columns.error().name.empty()
                    ? std::string("empty field name in --query-remapped-rows")
                    : fmt::format("unknown field '{}' in --query-remapped-rows", columns.error().name)));
    }
    options.gpu_columns = std::move(*columns);
  } else if (has_retired) {
    auto columns = exporter::parse_retired_pages_query(retired_names);
    if (!columns) {
      return std::unexpected(
          usage(columns.error().name.empty()
                    ? std::string("empty field name in --query-retired-pages")
                    : fmt::format("unknown field '{}' in --query-retired-pages", columns.error().name)));
    }
    options.retired_columns = std::move(*columns);
    options.retired = true;
  } else if (has_mig) {
    auto columns = exporter::parse_mig_query(mig_names);
    if (!columns) {
      return std::unexpected(usage(columns.error().name.empty()
                                       ? std::string("empty field name in --query-mig")
                                       : fmt::format("unknown field '{}' in --query-mig (see --help-query-mig)",
                                                     columns.error().name)));
    }
    options.mig_columns = std::move(*columns);
    options.mig = true;
  } else if (has_apps) {
    auto columns = exporter::parse_compute_apps_query(app_names);
    if (!columns) {
      return std::unexpected(
          usage(columns.error().name.empty()
                    ? std::string("empty field name in --query-compute-apps")
                    : fmt::format("unknown field '{}' in --query-compute-apps", columns.error().name)));
    }
    options.app_columns = std::move(*columns);
    options.apps = true;
  }
  if (auto f = options.full ? std::expected<void, ParseExit>{} : parse_format(format, options); !f) {
    return std::unexpected(f.error());
  }

  const bool has_l = app->count("-l") > 0;
  const bool has_lms = app->count("--loop-ms") > 0;
  if (has_l && has_lms) return std::unexpected(usage("-l and -lms cannot be combined"));
  if (has_l) {
    auto s = positive_integer(loop_s);
    if (!s || *s > 86400 * 365) {
      return std::unexpected(usage(fmt::format("invalid value '{}' for -l (a whole number of seconds > 0)", loop_s)));
    }
    options.loop = std::chrono::seconds(*s);
  }
  if (has_lms) {
    auto ms = positive_integer(loop_ms);
    if (!ms || *ms > 86400LL * 365 * 1000) {
      return std::unexpected(
          usage(fmt::format("invalid value '{}' for -lms (a whole number of milliseconds > 0)", loop_ms)));
    }
    options.loop = std::chrono::milliseconds(*ms);
  }
  if (app->count("-i") > 0) {
    if (auto split = split_gpu_ids(ids); !split) return std::unexpected(usage(split.error()));
    options.ids = ids;
  }
  return options;
}

int run_query(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_query_args(args);
  if (!options) return finish(options.error(), inv);
  auto opened = open_backend(inv);
  if (!opened) return opened.error();
  auto& backend = **opened;
  const auto& gpus = backend.gpus();
  auto selected = select_gpus(options->ids, gpus);
  if (!selected) return usage_error(inv.err, fmt::format("unknown GPU '{}' in -i", selected.error()));

  if (options->loop && inv.handle_signals) install_stop_handlers();
  if (!options->json && options->csv.header && !options->full) {
    // Once, not per reading: a log appended to with -l stays one table.
    inv.out << (options->apps      ? exporter::compute_apps_csv_header(options->app_columns)
                : options->mig     ? exporter::mig_query_csv_header(options->mig_columns)
                : options->retired ? exporter::retired_pages_csv_header(options->retired_columns)
                                   : exporter::gpu_query_csv_header(options->gpu_columns));
  }
  std::vector<bool> process_error_reported(gpus.size(), false);
  // The names beyond the catalog (pci.domain, inforom.*, ecc.errors.*.sram, ...) cost ~70 more NVML
  // calls per GPU: read only when one of them was asked for, once per GPU per reading.
  const bool read_details =
      !options->apps && !options->mig && !options->retired && exporter::needs_details(options->gpu_columns);
  std::vector<bool> retired_error_reported(gpus.size(), false);
  std::vector<model::RetiredPagesReading> retired;
  std::vector<model::GpuDetails> details;
  auto next = std::chrono::steady_clock::now();
  while (true) {
    const model::Snapshot snapshot = backend.sample();
    const auto views = views_of(gpus, snapshot, *selected);
    const exporter::QueryContext context{backend.system(), snapshot.time, gpus.size()};
    details.clear();
    if (read_details) {
      for (const std::size_t i : *selected) details.push_back(backend.details(i));
    }
    if (options->retired) {
      retired.clear();
      for (const std::size_t i : *selected) retired.push_back(backend.retired_pages(i));
      for (std::size_t k = 0; k < retired.size() && !options->json; ++k) {
        // NOT_SUPPORTED is the answer of every GPU that remaps rows instead: its empty list is the truth,
        // not a failure worth a line on stderr.
        const int code = retired[k].error;
        if (code != 0 && code != NVML_ERROR_NOT_SUPPORTED && !retired_error_reported[(*selected)[k]]) {
          retired_error_reported[(*selected)[k]] = true;
          inv.err << fmt::format("gpuscope: cannot list the retired pages of GPU {}: {}\n", views[k].info.index,
                                 exporter::nvml_error_text(code));
        }
      }
      if (options->json) {
        inv.out << exporter::json_line(exporter::retired_pages_json(options->retired_columns, context, views, retired))
                << '\n';
      } else {
        inv.out << exporter::retired_pages_csv_rows(options->retired_columns, context, views, retired);
      }
    } else if (options->mig) {
      if (options->json) {
        inv.out << exporter::json_line(exporter::mig_query_json(options->mig_columns, context, views)) << '\n';
      } else {
        inv.out << exporter::mig_query_csv_rows(options->mig_columns, context, views, options->csv);
      }
    } else if (options->full) {
      print_smi_q(backend, snapshot, views, *selected, options->json, inv);
    } else if (options->apps) {
      // An empty CSV must not pass for "no processes" when the list could not be read (JSON says so
      // itself); said once per GPU so a -l log is not flooded.
      for (std::size_t k = 0; k < views.size() && !options->json; ++k) {
        const auto& sample = views[k].sample;
        // A GPU that is down has no process list either.
        const std::optional<int> code =
            !sample.up ? std::optional<int>(sample.down_error_code) : sample.processes_error_code;
        if (code && !process_error_reported[(*selected)[k]]) {
          process_error_reported[(*selected)[k]] = true;
          inv.err << fmt::format("gpuscope: cannot list the processes of GPU {}: {}\n", views[k].info.index,
                                 exporter::nvml_error_text(*code));
        }
      }
      if (options->json) {
        inv.out << exporter::json_line(exporter::compute_apps_json(options->app_columns, context, views)) << '\n';
      } else {
        inv.out << exporter::compute_apps_csv_rows(options->app_columns, context, views, options->csv);
      }
    } else if (options->json) {
      inv.out << exporter::json_line(exporter::gpu_query_json(options->gpu_columns, context, views, details)) << '\n';
    } else {
      inv.out << exporter::gpu_query_csv_rows(options->gpu_columns, context, views, options->csv, details);
    }
    inv.out.flush();
    if (!inv.out) return kExitRuntime;
    if (!options->loop) break;
    // Paced from the start of each reading; after a reading slower than the interval the next starts at once.
    next = std::max(next + *options->loop, std::chrono::steady_clock::now());
    if (!sleep_until_or_stopped(next, inv.stop)) break;
  }
  return kExitOk;
}

}  // namespace gpuscope::cli
