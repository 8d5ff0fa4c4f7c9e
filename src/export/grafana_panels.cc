#include "export/grafana_panels.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace gpuscope::exporter {

PanelQuery range_query(std::string expr, std::string legend) {
  PanelQuery q;
  q.expr = std::move(expr);
  q.legend = std::move(legend);
  return q;
}

PanelQuery instant_query(std::string expr, std::string legend) {
  PanelQuery q = range_query(std::move(expr), std::move(legend));
  q.instant = true;
  return q;
}

PanelQuery table_query(std::string expr) {
  PanelQuery q = instant_query(std::move(expr), "");
  q.table = true;
  return q;
}

namespace {

// dcgm-exporter's label names (gpuscope exports the same): the dashboard works on either's fleet.
constexpr std::string_view kGpuLegend = "GPU {{gpu}} {{Hostname}}";
constexpr std::string_view kJobLegend = "{{training_job}} {{Hostname}}";
constexpr std::string_view kRankLegend = "{{training_job}} rank {{rank}} {{Hostname}}";
// A GPU in MIG mode has its memory and profiling fields only per GPU instance (GPU_I_PROFILE, GPU_I_ID, as
// dcgm-exporter): panels of those fields draw whole GPUs and instances as separate queries, each with its
// legend. A missing label matches "", so GPU_I_ID="" selects whole GPUs on gpuscope and dcgm-exporter alike.
constexpr std::string_view kWholeGpu = "GPU_I_ID=\"\"";
constexpr std::string_view kMigInstance = "GPU_I_ID!=\"\"";
constexpr std::string_view kInstanceLegend = "GPU {{gpu}} MIG {{GPU_I_PROFILE}} #{{GPU_I_ID}} {{Hostname}}";
// The rule pack's idle test (GpuIdle) per MIG instance: SM active under 5 %, at most 1 GiB held.
constexpr double kIdleSmActive = 0.05;
constexpr double kIdleMemoryMiB = 1024;

// Temperatures: 75 °C is where an H100/A100 in a well-cooled chassis should stay under load; 85 °C is
// the rule pack's GpuTemperatureHigh (clocks start to drop a few degrees above).
constexpr double kTemperatureWarmC = 75;
constexpr double kTemperatureHotC = 85;
// Utilization minus SM active: above 0.3 "busy" mostly means "a kernel was resident", not "working".
constexpr double kUtilizationLieWarn = 0.3;
constexpr double kUtilizationLieBad = 0.5;
// Memory: the rule pack's GpuMemoryNearlyFull.
constexpr double kMemoryNearlyFull = 0.95;
// Idle share of the bill: a fifth idle is worth a look, half is a parked node.
constexpr double kIdleShareWarn = 0.2;
constexpr double kIdleShareBad = 0.5;
// The training straggler threshold (std / mean of the ranks' step times), as the agent and rule pack use.
constexpr double kStragglerCv = 0.1;

constexpr std::array<std::string_view, 10> kVerdicts{"idle",          "transfer_bound", "launch_bound",
                                                     "input_starved", "no_tensor_cores", "memory_bound",
                                                     "compute_bound", "network_bound",  "unhealthy",
                                                     "unknown"};
constexpr std::array<std::string_view, 10> kVerdictColors{"blue",  "orange",     "yellow",     "dark-orange", "purple",
                                                          "green", "dark-green", "dark-purple", "red",        "text"};

// Every GPU series of the selected hosts and GPUs.
std::string gpu(std::string_view metric, std::string_view extra = "") {
  return fmt::format("{}{{{}=~\"${}\", {}=~\"${}\"{}{}}}", metric, kHostVariable, kHostVariable, kGpuVariable,
                     kGpuVariable, extra.empty() ? "" : ", ", extra);
}

// Series of the selected hosts without a GPU label (training jobs).
std::string host(std::string_view metric) {
  return fmt::format("{}{{{}=~\"${}\"}}", metric, kHostVariable, kHostVariable);
}

std::string legend(std::string_view prefix) { return fmt::format("{} {}", prefix, kGpuLegend); }
std::string instance_legend(std::string_view prefix) { return fmt::format("{} {}", prefix, kInstanceLegend); }

// A field's whole-GPU series and its MIG instances' series, as two queries (whole GPUs first).
std::vector<PanelQuery> whole_and_instances(std::string_view metric, std::string_view prefix = "") {
  return {range_query(gpu(metric, kWholeGpu), prefix.empty() ? std::string(kGpuLegend) : legend(prefix)),
          range_query(gpu(metric, kMigInstance),
                      prefix.empty() ? std::string(kInstanceLegend) : instance_legend(prefix))};
}

std::string fb_used_ratio(std::string_view selector) {
  return fmt::format("{0} / ({0} + {1})", gpu("DCGM_FI_DEV_FB_USED", selector), gpu("DCGM_FI_DEV_FB_FREE", selector));
}

ThresholdStep base(std::string color) { return {std::nullopt, std::move(color)}; }
ThresholdStep from(double value, std::string color) { return {value, std::move(color)}; }

DashboardPanel panel(PanelKind kind, std::string title, std::string unit, int width, int height) {
  DashboardPanel p;
  p.kind = kind;
  p.title = std::move(title);
  p.unit = std::move(unit);
  p.width = width;
  p.height = height;
  return p;
}

SeriesStyle dashed(std::string ref_id) {
  SeriesStyle s;
  s.ref_id = std::move(ref_id);
  s.dashed = true;
  return s;
}

DashboardRow health() {
  DashboardRow row{"Health", {}};
  auto temp = panel(PanelKind::kTimeSeries, "GPU temperature", "celsius", 12, 8);
  temp.description = fmt::format(
      "Core temperature. Above {:.0f} °C look at airflow; at {:.0f} °C the rule pack's GpuTemperatureHigh fires and "
      "clocks are about to drop (thermal slowdown).",
      kTemperatureWarmC, kTemperatureHotC);
  temp.queries = {range_query(gpu("DCGM_FI_DEV_GPU_TEMP"), std::string(kGpuLegend))};
  temp.thresholds = {base("green"), from(kTemperatureWarmC, "orange"), from(kTemperatureHotC, "red")};
  temp.draw_thresholds = true;
  row.panels.push_back(std::move(temp));

  auto power = panel(PanelKind::kTimeSeries, "Power draw vs limit", "watt", 12, 8);
  power.description =
      "Power draw with the enforced power limit (dashed). Flat near the limit: the GPU is power-capped and works "
      "flat out. A sawtooth far below it: the GPU waits between bursts (input pipeline, communication) - starvation.";
  power.queries = {range_query(gpu("DCGM_FI_DEV_POWER_USAGE"), std::string(kGpuLegend)),
                   range_query(gpu("DCGM_FI_DEV_ENFORCED_POWER_LIMIT") + " or " + gpu("DCGM_FI_DEV_POWER_MGMT_LIMIT"),
                               legend("limit"))};
  power.series_styles = {dashed("B")};
  power.min = 0;
  row.panels.push_back(std::move(power));

  auto xid = panel(PanelKind::kStat, "Last XID", "none", 6, 7);
  xid.description =
      "The last XID error the driver reported per GPU (0: none). 48, 63, 64, 74, 79, 92, 94, 95: the GPU needs "
      "attention (79 is fallen off the bus); see the rule pack's GpuXid* alerts.";
  xid.queries = {instant_query(fmt::format("max by (Hostname, gpu) ({})", gpu("DCGM_FI_DEV_XID_ERRORS")),
                               std::string(kGpuLegend))};
  xid.thresholds = {base("green"), from(1, "red")};
  xid.value_texts = {{"0", "none", "green"}};
  row.panels.push_back(std::move(xid));

  auto xid_events = panel(PanelKind::kTimeSeries, "XID events", "short", 6, 7);
  xid_events.description = "XID errors counted per GPU (gpuscope only: dcgm-exporter exports the last XID alone).";
  xid_events.queries = {range_query(
      fmt::format("sum by (Hostname, gpu) (increase({}[$__rate_interval]))", gpu("gpuscope_xid_events_total")),
      std::string(kGpuLegend))};
  xid_events.bars = true;
  xid_events.min = 0;
  row.panels.push_back(std::move(xid_events));

  auto ecc = panel(PanelKind::kTimeSeries, "ECC errors", "short", 6, 7);
  ecc.description =
      "Volatile ECC errors since the driver loaded, new in each interval. A double-bit error (DBE) kills the job that "
      "hit it; single-bit errors (SBE) are corrected, but a rising rate precedes row remapping.";
  ecc.queries = {range_query(fmt::format("increase({}[$__rate_interval])", gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")),
                             legend("DBE")),
                 range_query(fmt::format("increase({}[$__rate_interval])", gpu("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")),
                             legend("SBE"))};
  ecc.bars = true;
  ecc.min = 0;
  ecc.thresholds = {base("green"), from(1, "red")};
  row.panels.push_back(std::move(ecc));

  auto remap = panel(PanelKind::kTimeSeries, "Remapped rows", "short", 6, 7);
  remap.description =
      "HBM rows remapped after uncorrectable (and correctable) errors, and remap failures. Any uncorrectable remap or "
      "a failure: drain and reset the GPU; a failure means it needs replacing.";
  remap.queries = {range_query(gpu("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"), legend("uncorrectable")),
                   range_query(gpu("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"), legend("correctable")),
                   range_query(gpu("DCGM_FI_DEV_ROW_REMAP_FAILURE"), legend("remap failure"))};
  remap.min = 0;
  row.panels.push_back(std::move(remap));
  return row;
}

DashboardRow throughput() {
  DashboardRow row{"Throughput", {}};
  auto lie = panel(PanelKind::kTimeSeries, "Utilization vs SM active", "percentunit", 12, 8);
  lie.description =
      "GPU utilization (nvidia-smi's number) only says a kernel was running; SM active (dashed) says what fraction of "
      "the SMs worked. 100 % utilization at 20 % SM active is a GPU mostly waiting.";
  lie.description +=
      " A GPU in MIG mode has no utilization: its instances' SM active (C) each count on their own SMs.";
  lie.queries = {range_query(gpu("DCGM_FI_DEV_GPU_UTIL") + " / 100", legend("utilization"))};
  for (PanelQuery& q : whole_and_instances("DCGM_FI_PROF_SM_ACTIVE", "SM active")) lie.queries.push_back(std::move(q));
  lie.series_styles = {dashed("B"), dashed("C")};
  lie.min = 0;
  lie.max = 1;
  row.panels.push_back(std::move(lie));

  auto gap = panel(PanelKind::kTimeSeries, "Utilization minus SM active", "percentunit", 12, 8);
  gap.description = fmt::format(
      "How much of the reported utilization is not SM work. Above {:.0f} %: small kernels, launch overhead or "
      "waiting inside kernels (see the Diagnosis row).",
      kUtilizationLieWarn * 100);
  gap.queries = {range_query(gpu("DCGM_FI_DEV_GPU_UTIL") + " / 100 - " + gpu("DCGM_FI_PROF_SM_ACTIVE", kWholeGpu),
                             std::string(kGpuLegend))};
  gap.thresholds = {base("green"), from(kUtilizationLieWarn, "orange"), from(kUtilizationLieBad, "red")};
  gap.draw_thresholds = true;
  row.panels.push_back(std::move(gap));

  auto occupancy = panel(PanelKind::kTimeSeries, "SM occupancy", "percentunit", 12, 8);
  occupancy.description =
      "Resident warps over the maximum the SMs hold. Low with high SM active is normal for large GEMMs; low with low "
      "SM active: too few blocks or threads per launch.";
  occupancy.queries = whole_and_instances("DCGM_FI_PROF_SM_OCCUPANCY");
  occupancy.min = 0;
  occupancy.max = 1;
  row.panels.push_back(std::move(occupancy));

  auto tensor = panel(PanelKind::kTimeSeries, "Tensor core active", "percentunit", 12, 8);
  tensor.description =
      "Fraction of cycles the tensor pipes worked. Near zero on a busy training GPU: FP32 math where bf16/fp16 "
      "(autocast) or TF32 would use the tensor cores.";
  tensor.queries = whole_and_instances("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE");
  tensor.min = 0;
  tensor.max = 1;
  row.panels.push_back(std::move(tensor));
  return row;
}

DashboardRow bottlenecks() {
  DashboardRow row{"Bottlenecks", {}};
  auto pcie = panel(PanelKind::kTimeSeries, "PCIe RX vs DRAM active", "percentunit", 12, 8);
  pcie.description =
      "Host-to-GPU traffic (right axis) over the GPU's memory activity (left). PCIe busy while DRAM idles: the GPU "
      "waits for its input (pin memory, more loader workers, prefetch). DRAM near 100 %: memory-bound kernels.";
  pcie.queries = {range_query(gpu("DCGM_FI_PROF_PCIE_RX_BYTES"), legend("PCIe RX"))};
  for (PanelQuery& q : whole_and_instances("DCGM_FI_PROF_DRAM_ACTIVE", "DRAM active")) {
    pcie.queries.push_back(std::move(q));
  }
  SeriesStyle rx;
  rx.ref_id = "A";
  rx.unit = "Bps";
  rx.right_axis = true;
  rx.axis_label = "PCIe RX";
  SeriesStyle dram;
  dram.ref_id = "B";
  dram.axis_label = "DRAM active";
  SeriesStyle instance_dram = dram;
  instance_dram.ref_id = "C";
  pcie.series_styles = {rx, dram, instance_dram};
  pcie.min = 0;
  row.panels.push_back(std::move(pcie));

  auto reasons = panel(PanelKind::kStateTimeline, "Throttle reasons", "none", 12, 8);
  reasons.description =
      "When each clock-limiting reason was active (gpuscope only; dcgm-exporter's DCGM_FI_DEV_CLOCK_THROTTLE_REASONS "
      "is the same as a bitmask). Idle and application-clock reasons are left out: they are not problems.";
  reasons.queries = {range_query(
      fmt::format("max by (Hostname, gpu, reason) ({}) > 0",
                  gpu("gpuscope_throttle_reason_active",
                      "reason!~\"gpu_idle|applications_clocks_setting|display_clock_setting\"")),
      "GPU {{gpu}} {{Hostname}} {{reason}}")};
  reasons.value_texts = {{"1", "active", "orange"}};
  reasons.no_value = "not throttled";
  row.panels.push_back(std::move(reasons));

  auto violation = panel(PanelKind::kTimeSeries, "Time throttled by power and heat", "percentunit", 12, 8);
  violation.description =
      "Fraction of time the clocks were held down by the power cap or by temperature (DCGM's violation counters, "
      "microseconds). The rule pack warns above 50 % (power) and 10 % (thermal) for 10 minutes.";
  violation.queries = {
      range_query(fmt::format("rate({}[$__rate_interval]) / 1e6", gpu("DCGM_FI_DEV_POWER_VIOLATION")), legend("power")),
      range_query(fmt::format("rate({}[$__rate_interval]) / 1e6", gpu("DCGM_FI_DEV_THERMAL_VIOLATION")),
                  legend("thermal"))};
  violation.min = 0;
  violation.max = 1;
  row.panels.push_back(std::move(violation));

  auto clocks = panel(PanelKind::kTimeSeries, "SM clock vs maximum", "rotmhz", 12, 8);
  clocks.description =
      "SM clock under its maximum (dashed). One GPU clocked below its peers is the straggler every synchronous job "
      "waits for.";
  clocks.queries = {range_query(gpu("DCGM_FI_DEV_SM_CLOCK"), std::string(kGpuLegend)),
                    range_query(gpu("DCGM_FI_DEV_MAX_SM_CLOCK"), legend("max"))};
  clocks.series_styles = {dashed("B")};
  clocks.min = 0;
  row.panels.push_back(std::move(clocks));

  auto memory = panel(PanelKind::kTimeSeries, "GPU memory used", "percentunit", 12, 8);
  memory.description =
      "Framebuffer used over total. A steady climb across epochs is a leak; near the top, the next allocation fails. "
      "A GPU in MIG mode: each instance over its own memory.";
  memory.queries = {range_query(fb_used_ratio(kWholeGpu), std::string(kGpuLegend)),
                    range_query(fb_used_ratio(kMigInstance), std::string(kInstanceLegend))};
  memory.thresholds = {base("green"), from(kMemoryNearlyFull, "red")};
  memory.draw_thresholds = true;
  memory.min = 0;
  memory.max = 1;
  row.panels.push_back(std::move(memory));
  return row;
}

// GPUs in MIG mode: how they are split, how busy each instance and each MIG GPU is, and which instances sit
// idle (and who holds them). Empty on GPUs without MIG, and on dcgm-exporter for the gpuscope_mig_* series.
DashboardRow mig_row() {
  DashboardRow row{"MIG", {}};
  auto count = panel(PanelKind::kBarGauge, "MIG instances per GPU", "none", 6, 8);
  count.description =
      "GPU instances on each GPU in MIG mode (gpuscope only: gpuscope_mig_instance_slices). A GPU that is not "
      "listed is not in MIG mode.";
  count.queries = {instant_query(fmt::format("count by (Hostname, gpu) ({})", gpu("gpuscope_mig_instance_slices")),
                                 std::string(kGpuLegend))};
  count.no_value = "no MIG";
  row.panels.push_back(std::move(count));

  auto weighted = panel(PanelKind::kTimeSeries, "SM active per MIG GPU", "percentunit", 9, 8);
  weighted.description =
      "Each GPU in MIG mode as one number: its instances' SM active weighted by their SMs "
      "(gpuscope_mig_instance_sms), comparable with a whole GPU's SM active.";
  weighted.queries = {range_query(
      fmt::format("sum by (Hostname, gpu) ({0} * on (Hostname, gpu, GPU_I_ID) group_left () {1}) / sum by (Hostname, "
                  "gpu) ({1} and on (Hostname, gpu, GPU_I_ID) {0})",
                  gpu("DCGM_FI_PROF_SM_ACTIVE", kMigInstance), gpu("gpuscope_mig_instance_sms")),
      std::string(kGpuLegend))};
  weighted.min = 0;
  weighted.max = 1;
  row.panels.push_back(std::move(weighted));

  auto sm = panel(PanelKind::kTimeSeries, "SM active per MIG instance", "percentunit", 9, 8);
  sm.description = "Fraction of each instance's own SMs that worked.";
  sm.queries = {range_query(gpu("DCGM_FI_PROF_SM_ACTIVE", kMigInstance), std::string(kInstanceLegend))};
  sm.min = 0;
  sm.max = 1;
  row.panels.push_back(std::move(sm));

  auto memory = panel(PanelKind::kTimeSeries, "Memory used per MIG instance", "percentunit", 12, 8);
  memory.description =
      "Each instance's framebuffer used over its own total (the rule pack's GpuMemoryNearlyFull, per instance).";
  memory.queries = {range_query(fb_used_ratio(kMigInstance), std::string(kInstanceLegend))};
  memory.thresholds = {base("green"), from(kMemoryNearlyFull, "red")};
  memory.draw_thresholds = true;
  memory.min = 0;
  memory.max = 1;
  row.panels.push_back(std::move(memory));

  auto idle = panel(PanelKind::kTable, "Idle MIG instances over the time range", "none", 12, 8);
  idle.description = fmt::format(
      "Instances whose SMs stayed under {:.0f} % active with at most {:.0f} MiB held over the whole time range "
      "(the rule pack's GpuIdle, per instance), with the pod that holds each; the value is its compute slices (of 7, "
      "4 on an A30): its share of the GPU's price.",
      kIdleSmActive * 100, kIdleMemoryMiB);
  idle.queries = {table_query(fmt::format(
      "{} and on (Hostname, gpu, GPU_I_ID) max_over_time({}[$__range]) < {} and on (Hostname, gpu, GPU_I_ID) "
      "max_over_time({}[$__range]) <= {}",
      gpu("gpuscope_mig_instance_slices"), gpu("DCGM_FI_PROF_SM_ACTIVE", kMigInstance), kIdleSmActive,
      gpu("DCGM_FI_DEV_FB_USED", kMigInstance), kIdleMemoryMiB))};
  idle.hidden_columns = {"Time", "__name__", "job", "instance"};
  idle.no_value = "no idle instance";
  row.panels.push_back(std::move(idle));
  return row;
}

DashboardRow cost() {
  DashboardRow row{"Cost and waste", {}};
  auto now = panel(PanelKind::kStat, "Spend rate now ($/h)", "currencyUSD", 6, 5);
  now.description = "What the selected GPUs cost per hour at the agent's price catalog and tier (gpuscope only).";
  now.queries = {instant_query(fmt::format("sum({})", gpu("gpuscope_gpu_hourly_price_dollars")), "$/h")};
  now.no_value = "no price";
  row.panels.push_back(std::move(now));

  const std::string paid = fmt::format("sum(increase({}[$__range]))", gpu("gpuscope_cost_dollars_total"));
  auto today = panel(PanelKind::kStat, "Cost today", "currencyUSD", 6, 5);
  today.description = "Dollars paid for the selected GPUs since midnight (dashboard time zone).";
  today.queries = {instant_query(paid, "cost")};
  today.relative_time = "now/d";
  row.panels.push_back(std::move(today));

  auto range = panel(PanelKind::kStat, "Cost over the time range", "currencyUSD", 6, 5);
  range.description = "Dollars paid for the selected GPUs over the dashboard's time range.";
  range.queries = {instant_query(paid, "cost")};
  row.panels.push_back(std::move(range));

  auto idle = panel(PanelKind::kStat, "Idle share of the cost", "percentunit", 6, 5);
  idle.description =
      "Of the dollars over the time range, the share paid while the GPUs ran no kernel and no copy at all.";
  idle.queries = {instant_query(
      fmt::format("sum(increase({}[$__range])) / {}", gpu("gpuscope_cost_idle_dollars_total"), paid), "idle share")};
  idle.thresholds = {base("green"), from(kIdleShareWarn, "orange"), from(kIdleShareBad, "red")};
  idle.min = 0;
  idle.max = 1;
  row.panels.push_back(std::move(idle));

  auto rate = panel(PanelKind::kTimeSeries, "Spend rate: paid, idle, unused ($/h)", "currencyUSD", 12, 8);
  rate.description =
      "Dollars per hour per host: all paid, paid while idle, and unused (idle plus the busy time the SMs did not "
      "work: busy x (1 - SM active)).";
  const auto per_hour = [](std::string_view metric) {
    return fmt::format("sum by (Hostname) (rate({}[$__rate_interval])) * 3600", gpu(metric));
  };
  rate.queries = {range_query(per_hour("gpuscope_cost_dollars_total"), "paid {{Hostname}}"),
                  range_query(per_hour("gpuscope_cost_idle_dollars_total"), "idle {{Hostname}}"),
                  range_query(per_hour("gpuscope_cost_unused_dollars_total"), "unused {{Hostname}}")};
  rate.min = 0;
  row.panels.push_back(std::move(rate));

  auto wasters = panel(PanelKind::kBarGauge, "Unused dollars over the time range, by GPU", "currencyUSD", 12, 8);
  wasters.description = "The GPUs that wasted the most: dollars paid for SM time nobody used.";
  wasters.queries = {instant_query(
      fmt::format("sort_desc(sum by (Hostname, gpu) (increase({}[$__range])))", gpu("gpuscope_cost_unused_dollars_total")),
      std::string(kGpuLegend))};
  wasters.thresholds = {base("green"), from(1, "orange"), from(10, "red")};
  row.panels.push_back(std::move(wasters));
  return row;
}

// gpuscope_diagnosis_info carries the verdict as a label; a state timeline needs it as the value, so each
// verdict's series is multiplied by its code and the value mapping turns the code back into the word.
std::string verdict_code_expr() {
  std::string terms;
  for (std::size_t i = 0; i < kVerdicts.size(); ++i) {
    if (!terms.empty()) terms += " or ";
    terms += fmt::format("{} * {}", gpu("gpuscope_diagnosis_info", fmt::format("verdict=\"{}\"", kVerdicts[i])), i + 1);
  }
  return fmt::format("max by (Hostname, gpu) ({})", terms);
}

DashboardRow diagnosis() {
  DashboardRow row{"Diagnosis", {}};
  auto timeline = panel(PanelKind::kStateTimeline, "Verdict per GPU", "none", 16, 9);
  timeline.description =
      "Why each GPU is slow or wasted, as the agent's diagnosis decided over time (gpuscope only). "
      "`gpuscope diagnose` and GET /api/v1/diagnosis give the evidence and the fix.";
  timeline.queries = {range_query(verdict_code_expr(), std::string(kGpuLegend))};
  for (std::size_t i = 0; i < kVerdicts.size(); ++i) {
    timeline.value_texts.push_back({std::to_string(i + 1), std::string(kVerdicts[i]), std::string(kVerdictColors[i])});
  }
  timeline.no_value = "no diagnosis";
  row.panels.push_back(std::move(timeline));

  auto now = panel(PanelKind::kTable, "Verdict now", "none", 8, 9);
  now.description = "Each GPU's current verdict.";
  now.queries = {table_query(fmt::format("max by (Hostname, gpu, verdict) ({})", gpu("gpuscope_diagnosis_info")))};
  now.hidden_columns = {"Time", "Value"};
  row.panels.push_back(std::move(now));
  return row;
}

DashboardRow training() {
  DashboardRow row{"Training", {}};
  auto cv = panel(PanelKind::kTimeSeries, "Step time spread across ranks (CV)", "none", 8, 8);
  cv.description = fmt::format(
      "Standard deviation over mean of the ranks' mean step times over 5 minutes, per job (gpuscope's step events). "
      "Above {:.1f} the slowest rank is a straggler.",
      kStragglerCv);
  cv.queries = {range_query(host("gpuscope_training_step_time_cv"), std::string(kJobLegend))};
  cv.thresholds = {base("green"), from(kStragglerCv, "red")};
  cv.draw_thresholds = true;
  cv.min = 0;
  row.panels.push_back(std::move(cv));

  auto stalled = panel(PanelKind::kStateTimeline, "Stalled jobs", "none", 8, 8);
  stalled.description =
      "A job that took no step for the stall time (--training.stall-after, 5 minutes) while its processes still "
      "hold their GPUs.";
  stalled.queries = {range_query(host("gpuscope_training_stalled"), std::string(kJobLegend))};
  stalled.value_texts = {{"0", "stepping", "green"}, {"1", "stalled", "red"}};
  row.panels.push_back(std::move(stalled));

  auto stragglers = panel(PanelKind::kTable, "Stragglers", "none", 8, 8);
  stragglers.description =
      "Each job's straggler rank, its GPU and the cause the agent found: gpu_clock, gpu_throttled, gpu_hot, or host "
      "(its GPU looks like the others': data loading, CPU, network).";
  stragglers.queries = {table_query(host("gpuscope_training_straggler_info"))};
  stragglers.hidden_columns = {"Time", "Value", "__name__", "job", "instance"};
  stragglers.no_value = "no straggler";
  row.panels.push_back(std::move(stragglers));

  auto steps = panel(PanelKind::kTimeSeries, "Step time per rank", "s", 12, 8);
  steps.description = "Each rank's last step time, as its training loop reported it.";
  steps.queries = {range_query(host("training_batch_duration_seconds"), std::string(kRankLegend))};
  steps.min = 0;
  row.panels.push_back(std::move(steps));

  auto memory = panel(PanelKind::kTimeSeries, "Memory kept across epochs", "bytes", 12, 8);
  memory.description =
      "How much a rank's memory between epochs grew over the last epoch boundaries, when it grew at each: tensors "
      "kept from one epoch to the next (GpuTrainingMemoryNotReleased).";
  memory.queries = {range_query(host("gpuscope_training_memory_not_released_bytes"), std::string(kRankLegend))};
  memory.min = 0;
  memory.no_value = "none kept";
  row.panels.push_back(std::move(memory));
  return row;
}

}  // namespace

std::vector<DashboardRow> dashboard_rows() {
  return {health(), throughput(), bottlenecks(), mig_row(), cost(), diagnosis(), training()};
}

std::span<const std::string_view> diagnosis_verdict_codes() { return kVerdicts; }

}  // namespace gpuscope::exporter
