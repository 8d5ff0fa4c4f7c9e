#include "cli/check_verb.h"

#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "analysis/health_report_format.h"
#include "analysis/kernel_xid_log.h"
#include "cli/gpu_selector.h"
#include "export/machine_value.h"

namespace gpuscope::cli {
namespace {

// check's exit code 1 is the gate's answer, so its help says so rather than the generic NVML footer.
constexpr std::string_view kCheckFooter =
    "Global options (before or after the command):\n"
    "  --simulate[=SCENARIO]  use gpuscope's simulated NVML (optionally with a scenario file)\n"
    "  --nvml-lib PATH        load this NVML library instead of the driver's libnvidia-ml.so.1\n"
    "\n"
    "Exit codes: 0 healthy, 1 a check in --fail-on failed (or NVML failed to initialize), 2 usage error,\n"
    "3 no NVML library found.";

constexpr std::string_view kCheckExample =
    "  gpuscope check --fail-on ecc,xid,remap --cuda-runtime 12.4 || exit 1\n"
    "  gpuscope check --format json --kernel-log /var/log/dmesg\n"
    "  gpuscope --simulate check         # anywhere: gpuscope's simulated 8x H100 node";

}  // namespace

std::expected<CheckVerbOptions, ParseExit> parse_health_check_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "check",
      "Check that the GPUs are fit to start a job: uncorrectable ECC errors (ecc), critical XIDs in the kernel "
      "log (xid), pending or failed row remaps and retired pages (remap), a PCIe link below its maximum (pcie), "
      "thermal slowdown (thermal), persistence mode off (persistence), a driver older than the job's CUDA "
      "runtime (driver). Prints one line per problem, or one line saying all GPUs passed.",
      kCheckExample);
  app->footer(fmt::format("Example:\n{}\n\n{}\n", kCheckExample, kCheckFooter));
  CheckVerbOptions options;
  std::string fail_on = "all";
  std::string cuda_runtime;
  std::string format = "text";
  app->add_option("--fail-on", fail_on,
                  "checks whose failure fails the gate (exit 1), comma-separated: ecc, xid, remap, pcie, thermal, "
                  "persistence, driver, or all (default); the others are still run and printed as WARN")
      ->type_name("CHECKS");
  app->add_option("--cuda-runtime", cuda_runtime,
                  "the CUDA runtime version the job was built with (12.4): the driver check fails when the "
                  "driver supports an older CUDA")
      ->type_name("X.Y");
  app->add_option("-i,--id", options.ids, "only these GPUs: indices, UUIDs or PCI bus ids, comma-separated")
      ->type_name("IDS");
  app->add_option("--format", format, "text (default) or json (numbers, units in key names)")->type_name("FORMAT");
  app->add_option("--kernel-log", options.kernel_log,
                  "read XIDs from this saved kernel log (dmesg, journalctl -k) instead of /dev/kmsg")
      ->type_name("FILE");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  auto checks = analysis::parse_health_checks(fail_on);
  if (!checks) return std::unexpected(usage(fmt::format("{} in --fail-on", checks.error())));
  options.fail_on = *checks;
  if (app->count("--cuda-runtime") > 0) {
    options.cuda_runtime_version = analysis::parse_cuda_version(cuda_runtime);
    if (!options.cuda_runtime_version) {
      return std::unexpected(usage(fmt::format("bad version '{}' in --cuda-runtime (a CUDA version like 12.4)", cuda_runtime)));
    }
  }
  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  options.json = *json;
  if (app->count("-i") > 0) {
    if (auto ids = split_gpu_ids(options.ids); !ids) return std::unexpected(usage(ids.error()));
  }
  if (app->count("--kernel-log") > 0 && options.kernel_log.empty()) {
    return std::unexpected(usage("--kernel-log needs a file"));
  }
  return options;
}

int run_health_check(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_health_check_args(args);
  if (!options) return finish(options.error(), inv);

  analysis::HealthCheckOptions health;
  health.fail_on = options->fail_on;
  health.cuda_runtime_version = options->cuda_runtime_version;
  health.node_wide = options->ids.empty();
  // The log named on the command line is input: failing to read it is the caller's mistake. The
  // system's own log may be closed to this user (dmesg_restrict); the report then says so.
  if (!options->kernel_log.empty()) {
    auto log = analysis::read_kernel_xid_log(options->kernel_log);
    if (!log.readable) {
      return usage_error(inv.err, fmt::format("cannot read --kernel-log {}: {}", options->kernel_log, log.error));
    }
    health.kernel_log = std::move(log);
  } else if (inv.global.simulate) {
    health.kernel_log_not_read = "the GPUs are simulated; give --kernel-log FILE";
  } else {
    health.kernel_log = analysis::read_kernel_xid_log(std::string(analysis::kKernelLogDevice));
  }

  // One reading; the PCIe throughput call (20 ms per GPU on a real driver) decides nothing here.
  nvml::BackendOptions reading;
  reading.read_pcie_throughput = false;
  auto backend = open_backend(inv, reading);
  if (!backend) return backend.error();
  const auto& all = (*backend)->gpus();
  auto selected = select_gpus(options->ids, all);
  if (!selected) return usage_error(inv.err, fmt::format("unknown GPU '{}' in -i", selected.error()));
  if (selected->empty()) {
    inv.err << "gpuscope: no GPUs found: nothing passed the check\n";
    return kExitRuntime;
  }
  std::vector<model::GpuInfo> gpus;
  for (auto pos : *selected) gpus.push_back(all[pos]);
  const model::Snapshot snapshot = (*backend)->sample();
  const auto report = analysis::check_health(snapshot, gpus, (*backend)->system(), health);

  if (options->json) {
    inv.out << exporter::json_line(analysis::health_report_json(report)) << '\n';
  } else {
    inv.out << analysis::health_report_text(report);
  }
  inv.out.flush();
  if (!inv.out) return kExitRuntime;
  return report.healthy() ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli
