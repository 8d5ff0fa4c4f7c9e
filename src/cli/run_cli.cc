#include "cli/run_cli.h"

#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/backtest_verb.h"
#include "cli/check_verb.h"
#include "cli/cost_verb.h"
#include "cli/diagnose_verb.h"
#include "cli/dmon_verb.h"
#include "cli/eval_verb.h"
#include "cli/grafana_verb.h"
#include "cli/import_verb.h"
#include "cli/info_verb.h"
#include "cli/invocation.h"
#include "cli/list_verb.h"
#include "cli/pmon_verb.h"
#include "cli/query_verb.h"
#include "cli/serve_verb.h"
#include "cli/stop_signal.h"
#include "cli/rules_verb.h"
#include "cli/select_verb.h"
#include "cli/top_verb.h"
#include "cli/trace_verb.h"

namespace gpuscope::cli {
namespace {

constexpr std::string_view kVersion = "gpuscope " GPUSCOPE_VERSION;

// Every verb, in the order of the usage text: the errors for a missing or unknown one name them.
constexpr std::string_view kVerbs =
    "list, info, query, dmon, pmon, top, check, select, serve, eval, diagnose, cost, import, trace, rules, backtest, grafana-dashboard";

constexpr std::string_view kUsage =
    "Usage: gpuscope [global options] <command> [options]\n"
    "\n"
    "Tells what NVIDIA GPUs are doing, through NVML (the driver's library, or gpuscope's simulator).\n"
    "\n"
    "Commands:\n"
    "  list      one line per GPU, like nvidia-smi -L\n"
    "  info      driver, NVML library loaded, each GPU's identity, memory, clocks and limits\n"
    "  query     nvidia-smi --query-gpu / --query-compute-apps: same names and CSV, or numeric JSON\n"
    "  dmon      nvidia-smi dmon: one row per GPU per interval, or NDJSON\n"
    "  pmon      nvidia-smi pmon: one row per process per GPU per interval\n"
    "  top       full-screen live view like nvtop: GPU util beside SM active, verdicts, processes\n"
    "  check     pre-flight health gate for a job: ECC, XIDs, row remaps, PCIe link, thermal,\n"
    "            persistence mode, driver vs CUDA runtime; exit 1 when a check fails\n"
    "  select    the N least busy healthy GPUs as CUDA_VISIBLE_DEVICES=... for a launch script\n"
    "  serve     the node agent: a web dashboard at /, /metrics for Prometheus (dcgm-exporter's names),\n"
    "            /healthz, /api/v1/gpus, history and Prometheus's query API (/api/v1/query, query_range)\n"
    "  eval      a PromQL query over the agent's history (a running agent, or its data directory)\n"
    "  diagnose  why each GPU is slow or wasted: a verdict per GPU with evidence and fix, or a timeline\n"
    "  cost      what the GPUs cost and wasted (per GPU, process, job or label), a monthly projection\n"
    "            with a budget check, the top wasters, and the cheaper GPU that would carry the same work\n"
    "  import    load recorded history (Prometheus query_range JSON, nvidia-smi CSV logs) into a data dir\n"
    "  trace     analyse PyTorch profiler or nsys traces: idle, steps, ops, critical path; trace diff A B\n"
    "  rules     check Prometheus rule files and run their unit tests (promtool check rules / test rules)\n"
    "  backtest  a scenario through the agent and its rules on a virtual clock: the alert timeline\n"
    "  grafana-dashboard  Grafana dashboard JSON by failure mode (gpuscope and dcgm-exporter series)\n"
    "\n"
    "Global options (before or after the command):\n"
    "  --simulate[=SCENARIO]  use gpuscope's simulated NVML library, optionally with a scenario file\n"
    "  --nvml-lib PATH        load this NVML library instead of the driver's libnvidia-ml.so.1\n"
    "  -h, --help             this help; 'gpuscope <command> --help' shows a command's options\n"
    "  --version              print the version\n"
    "\n"
    "Exit codes:\n"
    "  0  success (also when a loop is ended by Ctrl-C or SIGTERM)\n"
    "  1  runtime failure: NVML not initialized or the GPUs not discovered (NVML's error is printed)\n"
    "  2  usage error: unknown command, flag or value, unknown field name or GPU id (one line on stderr)\n"
    "  3  no NVML library found: install the NVIDIA driver, name it with --nvml-lib, or use --simulate\n"
    "\n"
    "Example:\n"
    "  gpuscope --simulate query --query-gpu=index,name,utilization.gpu,memory.used --format=csv -l 1\n";

}  // namespace

std::expected<CommandLine, std::string> parse_command_line(std::span<const char* const> argv) {
  CommandLine cl;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string_view a = argv[i] != nullptr ? argv[i] : "";
    if (a == "--simulate") {
      cl.global.simulate = true;
    } else if (a.starts_with("--simulate=")) {
      cl.global.simulate = true;
      cl.global.scenario = std::string(a.substr(11));
      if (cl.global.scenario.empty()) return std::unexpected("--simulate= needs a scenario file after '='");
    } else if (a == "--nvml-lib") {
      if (i + 1 >= argv.size() || argv[i + 1] == nullptr || *argv[i + 1] == '\0') {
        return std::unexpected("--nvml-lib needs a library path");
      }
      cl.global.nvml_lib = argv[++i];
    } else if (a.starts_with("--nvml-lib=")) {
      cl.global.nvml_lib = std::string(a.substr(11));
      if (cl.global.nvml_lib.empty()) return std::unexpected("--nvml-lib needs a library path");
    } else if (a == "--version") {
      cl.version = true;
    } else if (cl.verb.empty()) {
      if (a == "-h" || a == "--help" || a == "help") {
        cl.help = true;
      } else if (a.starts_with("-")) {
        return std::unexpected(fmt::format("unknown option '{}' (see 'gpuscope --help')", a));
      } else {
        cl.verb = std::string(a);
      }
    } else {
      cl.verb_args.emplace_back(a);
    }
  }
  return cl;
}

namespace {

bool looks_like_scenario(std::string_view word) {
  return word.ends_with(".yaml") || word.ends_with(".yml") || word.find('/') != std::string_view::npos;
}

int dispatch(std::span<const char* const> argv, Invocation& inv) {
  auto cl = parse_command_line(argv);
  if (!cl) return usage_error(inv.err, cl.error());
  if (cl->version) {
    inv.out << kVersion << '\n';
    return kExitOk;
  }
  if (cl->help) {
    inv.out << kUsage;
    return kExitOk;
  }
  inv.global = cl->global;
  const auto& args = cl->verb_args;
  if (cl->verb == "list") return run_list(args, inv);
  if (cl->verb == "info") return run_info(args, inv);
  if (cl->verb == "query") return run_query(args, inv);
  if (cl->verb == "dmon") return run_dmon(args, inv);
  if (cl->verb == "pmon") return run_pmon(args, inv);
  if (cl->verb == "top") return run_top(args, inv);  // NVML, or an agent's API with --url
  if (cl->verb == "check") return run_health_check(args, inv);
  if (cl->verb == "select") return run_select(args, inv);
  if (cl->verb == "serve") return run_serve(args, inv);
  if (cl->verb == "eval") return run_eval(args, inv);  // an agent's API or a data directory: never NVML
  if (cl->verb == "diagnose") return run_diagnose(args, inv);  // an agent, a data dir or a scenario it runs itself
  if (cl->verb == "cost") return run_cost(args, inv);  // an agent, a data dir or a scenario it runs itself
  if (cl->verb == "import") return run_import(args, inv);  // files into a data directory: never NVML
  if (cl->verb == "trace") return run_trace(args, inv);  // reads files only: never opens NVML
  if (cl->verb == "rules") return run_rules(args, inv);  // rule files only: never opens NVML
  if (cl->verb == "backtest") return run_backtest(args, inv);  // always the simulator, on a virtual clock
  if (cl->verb == "grafana-dashboard") return run_grafana_dashboard(args, inv);  // prints JSON: never opens NVML
  if (cl->verb.empty()) return usage_error(inv.err, fmt::format("no command given ({}; see 'gpuscope --help')", kVerbs));
  if (cl->global.simulate && cl->global.scenario.empty() && looks_like_scenario(cl->verb)) {
    // `--simulate FILE` reads FILE as the command: the scenario needs '=' (a bare --simulate is valid alone).
    return usage_error(inv.err, fmt::format("unknown command '{}': to simulate that scenario, write --simulate={}",
                                            cl->verb, cl->verb));
  }
  return usage_error(inv.err,
                     fmt::format("unknown command '{}' ({}; see 'gpuscope --help')", cl->verb, kVerbs));
}

int run(std::span<const char* const> argv, std::ostream& out, std::ostream& err, const std::atomic<bool>& stop,
        bool handle_signals) {
  try {
    Invocation inv{GlobalOptions{}, out, err, stop, handle_signals};
    const int code = dispatch(argv, inv);
    out.flush();
    return code;
  } catch (const std::exception& e) {
    err << "gpuscope: internal error: " << e.what() << '\n';
  } catch (...) {
    err << "gpuscope: internal error\n";
  }
  return kExitRuntime;
}

}  // namespace

int run_cli(std::span<const char* const> argv, std::ostream& out, std::ostream& err) {
  return run(argv, out, err, process_stop_flag(), true);
}

int run_cli(std::span<const char* const> argv, std::ostream& out, std::ostream& err, const std::atomic<bool>& stop) {
  return run(argv, out, err, stop, false);
}

}  // namespace gpuscope::cli
