#include "cli/select_verb.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <numeric>
#include <ostream>
#include <tuple>

#include <fmt/format.h>

#include "analysis/health_checks.h"
#include "cli/gpu_selector.h"
#include "cli/memory_size.h"
#include "export/machine_value.h"
#include "export/nvml_error_text.h"

namespace gpuscope::cli {
namespace {

using model::FieldId;

constexpr auto kBytesPerMiB = static_cast<double>(exporter::kMiB);

constexpr std::string_view kSelectExample =
    "  gpuscope select --count 4 --max-utilization 10 --by index\n"
    "  export \"$(gpuscope select --count 2 --min-free-memory 20GiB)\" && python train.py\n"
    "  gpuscope --simulate select --count 2 --format json";

constexpr std::string_view kSelectFooter =
    "Global options (before or after the command):\n"
    "  --simulate[=SCENARIO]  use gpuscope's simulated NVML (optionally with a scenario file)\n"
    "  --nvml-lib PATH        load this NVML library instead of the driver's libnvidia-ml.so.1\n"
    "\n"
    "Exit codes: 0 chosen, 1 fewer than --count GPUs qualify (one line on stderr per GPU left out and\n"
    "why; nothing on stdout in env format) or NVML failed to initialize, 2 usage error,\n"
    "3 no NVML library found.";

// What a POSIX shell reads as one plain word (GPU UUIDs, MIG UUIDs, indices).
bool shell_plain(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == ':' || c == ',';
  });
}

std::string shell_quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string candidate_label(const GpuCandidate& c) {
  if (c.gpu_instance_id) {
    return fmt::format("GPU {} MIG {} instance {} ({})", c.index, c.mig_profile, *c.gpu_instance_id, c.uuid);
  }
  return c.uuid.empty() ? fmt::format("GPU {}", c.index) : fmt::format("GPU {} ({})", c.index, c.uuid);
}

std::string percent_text(double v) { return fmt::format("{:g}%", v); }

std::string cuda_visible_devices_value(const GpuSelection& selection, bool by_index) {
  std::vector<std::string> ids;
  for (const auto& c : selection.chosen) ids.push_back(by_index ? fmt::format("{}", c.index) : c.uuid);
  return fmt::format("{}", fmt::join(ids, ","));
}

nlohmann::ordered_json candidate_json(const GpuCandidate& c) {
  nlohmann::ordered_json j;
  j["index"] = c.index;
  j["uuid"] = c.uuid;
  j["pci_bus_id"] = c.pci_bus_id;
  if (c.gpu_instance_id) {
    j["gpu_instance_id"] = *c.gpu_instance_id;
    j["mig_profile"] = c.mig_profile;
  }
  if (c.utilization_percent) j["utilization_gpu_percent"] = exporter::json_number(*c.utilization_percent);
  if (c.memory_free_mib) j["memory_free_mib"] = exporter::json_number(*c.memory_free_mib);
  if (c.compute_processes) j["compute_processes"] = *c.compute_processes;
  if (!c.reasons.empty()) j["reasons"] = c.reasons;
  return j;
}

// Adds the reasons `options`' limits give against `c`, then files it as qualified or left out.
void judge_limits(GpuCandidate& c, const SelectOptions& options, std::vector<GpuCandidate>& qualified,
                  std::vector<GpuCandidate>& left_out) {
  if (options.min_free_memory_bytes) {
    const auto wanted = *options.min_free_memory_bytes;
    if (!c.memory_free_mib) {
      c.reasons.emplace_back("free memory not reported (--min-free-memory cannot be checked)");
    } else if (*c.memory_free_mib * kBytesPerMiB < static_cast<double>(wanted)) {
      c.reasons.push_back(fmt::format(
          "{} free, below --min-free-memory {}",
          memory_size_text(static_cast<std::uint64_t>(*c.memory_free_mib * kBytesPerMiB)), memory_size_text(wanted)));
    }
  }
  if (options.max_utilization_percent) {
    if (!c.utilization_percent) {
      c.reasons.emplace_back("utilization not reported (--max-utilization cannot be checked)");
    } else if (*c.utilization_percent > *options.max_utilization_percent) {
      c.reasons.push_back(fmt::format("utilization {}, above --max-utilization {}", percent_text(*c.utilization_percent),
                                      percent_text(*options.max_utilization_percent)));
    }
  }
  if (c.reasons.empty()) {
    qualified.push_back(std::move(c));
  } else {
    left_out.push_back(std::move(c));
  }
}

}  // namespace

GpuSelection select_least_busy(const model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus,
                               const SelectOptions& options) {
  // Only what decides whether a job's results can be trusted keeps a GPU out; no kernel log is read
  // (select runs on every launch; `gpuscope check` is the full gate).
  analysis::HealthCheckOptions health;
  health.fail_on = analysis::kCriticalHealthChecks;
  health.kernel_log_not_read = "not read by select";
  health.node_wide = false;
  const auto report = analysis::check_health(snapshot, gpus, model::SystemInfo{}, health);
  std::vector<std::size_t> positions(gpus.size());
  std::iota(positions.begin(), positions.end(), std::size_t{0});
  const auto views = views_of(gpus, snapshot, positions);

  GpuSelection selection;
  std::vector<GpuCandidate> qualified;
  for (std::size_t pos = 0; pos < gpus.size(); ++pos) {
    const model::GpuInfo& info = gpus[pos];
    const model::GpuSample& sample = views[pos].sample;
    const analysis::GpuHealth& judged = report.gpus[pos];
    GpuCandidate c;
    c.index = info.index;
    c.uuid = info.uuid;
    c.pci_bus_id = info.pci_bus_id;
    if (!judged.up) {
      c.reasons.push_back(fmt::format("not answering ({})", exporter::nvml_error_text(judged.down_error_code)));
      selection.left_out.push_back(std::move(c));
      continue;
    }
    for (const auto& check : judged.checks) {
      if (check.gating && check.status == analysis::CheckStatus::kFail) {
        c.reasons.push_back(fmt::format("{}: {}", analysis::health_check_id(check.check), check.summary));
      }
    }
    const bool mig = sample.mig_enabled || info.mig_enabled == true;
    // A MIG device inherits its GPU's health; what the GPU itself reports does not apply to it.
    std::vector<GpuCandidate> devices;
    if (mig) {
      for (const auto& m : sample.mig_instances) {
        GpuCandidate d;
        d.index = info.index;
        d.uuid = m.uuid;
        d.pci_bus_id = info.pci_bus_id;
        d.gpu_instance_id = m.gpu_instance_id;
        d.mig_profile = m.profile;
        d.reasons = c.reasons;
        // No utilization.gpu in MIG mode: the graphics engine's activity is the same question (did a
        // kernel run), asked of the instance alone.
        if (const auto& gr = m[FieldId::kGrEngineActive]; gr.valid()) d.utilization_percent = gr.value * 100.0;
        if (const auto& free = m[FieldId::kFbFree]; free.valid()) d.memory_free_mib = free.value;
        if (!sample.processes_error_code) {
          d.compute_processes = static_cast<std::size_t>(std::ranges::count_if(sample.processes, [&](const model::ProcessSample& p) {
            return p.kind != model::ProcessKind::kGraphics && p.gpu_instance_id == m.gpu_instance_id;
          }));
        }
        if (options.count > 1) d.reasons.emplace_back("a MIG device: a CUDA process uses only one (--count 1)");
        if (options.by_index) d.reasons.emplace_back("a MIG device has no index for CUDA_VISIBLE_DEVICES (--by uuid)");
        devices.push_back(std::move(d));
      }
      c.reasons.emplace_back("MIG mode is on: CUDA sees its MIG devices, not the GPU");
    }
    if (const auto& util = sample[FieldId::kGpuUtil]; util.valid()) c.utilization_percent = util.value;
    if (const auto& free = sample[FieldId::kFbFree]; free.valid()) c.memory_free_mib = free.value;
    if (!sample.processes_error_code) {
      c.compute_processes = static_cast<std::size_t>(
          std::count_if(sample.processes.begin(), sample.processes.end(),
                        [](const model::ProcessSample& p) { return p.kind != model::ProcessKind::kGraphics; }));
    }
    if (mig) {
      selection.left_out.push_back(std::move(c));
      for (auto& d : devices) judge_limits(d, options, qualified, selection.left_out);
      continue;
    }
    judge_limits(c, options, qualified, selection.left_out);
  }
  // Idle first: a GPU nobody computes on, then the least utilized, then the most free memory. What is
  // not known ranks as worst.
  constexpr double kUnknown = std::numeric_limits<double>::infinity();
  auto rank = [&](const GpuCandidate& c) {
    const bool busy = !c.compute_processes || *c.compute_processes > 0;
    return std::make_tuple(busy, c.utilization_percent.value_or(kUnknown), -c.memory_free_mib.value_or(-kUnknown),
                           c.index);
  };
  std::stable_sort(qualified.begin(), qualified.end(),
                   [&](const GpuCandidate& a, const GpuCandidate& b) { return rank(a) < rank(b); });
  for (auto& c : qualified) {
    (selection.chosen.size() < options.count ? selection.chosen : selection.not_chosen).push_back(std::move(c));
  }
  selection.enough = selection.chosen.size() == options.count;
  return selection;
}

std::string cuda_visible_devices_line(const GpuSelection& selection, bool by_index) {
  const std::string value = cuda_visible_devices_value(selection, by_index);
  return "CUDA_VISIBLE_DEVICES=" + (shell_plain(value) ? value : shell_quoted(value));
}

std::expected<SelectOptions, ParseExit> parse_select_args(std::span<const std::string> args) {
  auto app = make_verb_app("select",
                           "Choose the GPUs for a new job: the --count least busy healthy GPUs (no uncorrectable "
                           "ECC errors, no pending or failed row remaps, answering) within the "
                           "limits given, GPUs without compute processes first, then the lowest utilization, then "
                           "the most free memory. A GPU in MIG mode offers its MIG devices instead (--count 1: a "
                           "CUDA process uses one MIG device), their graphics-engine activity as utilization. "
                           "Prints CUDA_VISIBLE_DEVICES=... (UUIDs, which survive renumbering) for a launch script "
                           "to export.",
                           kSelectExample);
  app->footer(fmt::format("Example:\n{}\n\n{}\n", kSelectExample, kSelectFooter));
  SelectOptions options;
  std::string count = "1";
  std::string min_free;
  std::string max_util;
  std::string by = "uuid";
  std::string format = "env";
  app->add_option("-c,--count", count, "how many GPUs the job needs (default 1)")->type_name("N");
  app->add_option("--min-free-memory", min_free, "only GPUs with at least this much free memory (20GiB, 512MiB, 40GB)")
      ->type_name("SIZE");
  app->add_option("--max-utilization", max_util, "only GPUs at or below this utilization.gpu percent")
      ->type_name("PERCENT");
  app->add_option("-i,--id", options.ids, "choose among these GPUs only: indices, UUIDs or PCI bus ids, comma-separated")
      ->type_name("IDS");
  app->add_option("--by", by, "uuid (default) or index: how CUDA_VISIBLE_DEVICES names the GPUs")->type_name("WHAT");
  app->add_option("--format", format, "env (default: CUDA_VISIBLE_DEVICES=...) or json (chosen GPUs, reasons for the rest)")
      ->type_name("FORMAT");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  const auto n = positive_integer(count);
  if (!n) return std::unexpected(usage(fmt::format("bad count '{}' in --count (a whole number > 0)", count)));
  options.count = static_cast<std::size_t>(*n);
  if (app->count("--min-free-memory") > 0) {
    options.min_free_memory_bytes = parse_memory_size(min_free);
    if (!options.min_free_memory_bytes) {
      return std::unexpected(usage(fmt::format(
          "bad size '{}' in --min-free-memory (a number and a unit: KiB, MiB, GiB, TiB, KB, MB, GB, TB)", min_free)));
    }
  }
  if (app->count("--max-utilization") > 0) {
    double v = -1;
    const auto* end = max_util.data() + max_util.size();
    auto [ptr, ec] = std::from_chars(max_util.data(), end, v);
    if (max_util.empty() || ec != std::errc{} || ptr != end || !(v >= 0 && v <= 100)) {
      return std::unexpected(usage(fmt::format("bad percent '{}' in --max-utilization (0 to 100)", max_util)));
    }
    options.max_utilization_percent = v;
  }
  if (!is_one_of(by, {"uuid", "index"})) return std::unexpected(usage(fmt::format("unknown value '{}' in --by (uuid or index)", by)));
  options.by_index = by == "index";
  if (!is_one_of(format, {"env", "json"})) {
    return std::unexpected(usage(fmt::format("unknown format '{}' in --format (env or json)", format)));
  }
  options.json = format == "json";
  if (app->count("-i") > 0) {
    if (auto ids = split_gpu_ids(options.ids); !ids) return std::unexpected(usage(ids.error()));
  }
  return options;
}

int run_select(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_select_args(args);
  if (!options) return finish(options.error(), inv);
  nvml::BackendOptions reading;
  reading.read_pcie_throughput = false;
  auto backend = open_backend(inv, reading);
  if (!backend) return backend.error();
  const auto& all = (*backend)->gpus();
  auto selected = select_gpus(options->ids, all);
  if (!selected) return usage_error(inv.err, fmt::format("unknown GPU '{}' in -i", selected.error()));
  std::vector<model::GpuInfo> gpus;
  for (auto pos : *selected) gpus.push_back(all[pos]);
  const model::Snapshot snapshot = (*backend)->sample();
  const GpuSelection selection = select_least_busy(snapshot, gpus, *options);

  if (options->json) {
    nlohmann::ordered_json doc;
    doc["ok"] = selection.enough;
    doc["count_requested"] = options->count;
    doc["cuda_visible_devices"] =
        selection.enough ? cuda_visible_devices_value(selection, options->by_index) : std::string();
    auto list = [](const std::vector<GpuCandidate>& cs) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const auto& c : cs) a.push_back(candidate_json(c));
      return a;
    };
    doc["chosen"] = list(selection.chosen);
    doc["not_chosen"] = list(selection.not_chosen);
    doc["left_out"] = list(selection.left_out);
    inv.out << exporter::json_line(doc) << '\n';
  } else if (selection.enough) {
    inv.out << cuda_visible_devices_line(selection, options->by_index) << '\n';
  }
  inv.out.flush();
  if (!inv.out) return kExitRuntime;
  if (selection.enough) return kExitOk;
  // Nothing on stdout (env format): a script that exports the output gets no half-filled list.
  inv.err << fmt::format("gpuscope: {} of the {} GPU{} asked for qualify\n", selection.chosen.size(), options->count,
                         options->count == 1 ? "" : "s");
  for (const auto& c : selection.left_out) {
    inv.err << fmt::format("gpuscope: {} left out: {}\n", candidate_label(c), fmt::join(c.reasons, "; "));
  }
  inv.err.flush();
  return kExitRuntime;
}

}  // namespace gpuscope::cli
