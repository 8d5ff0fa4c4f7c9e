#include "top/local_reader.h"

#include <fmt/format.h>

#include "analysis/diagnosis.h"
#include "analysis/gpu_signals.h"
#include "export/metric_set.h"
#include "export/mig_instance_rows.h"
#include "export/nvml_error_text.h"

namespace gpuscope::top {
namespace {

// Beyond the window the diagnosis reads, what the recent window keeps (the agent keeps the same margin).
constexpr std::int64_t kWindowMarginMs = 10'000;

std::optional<double> field(const model::GpuSample& s, model::FieldId id, double scale = 1) {
  const auto& f = s[id];
  if (!f.valid()) return std::nullopt;
  return f.value * scale;
}

MigInstanceFrame mig_instance_frame(const model::MigInstanceSample& m) {
  using model::FieldId;
  const auto value = [&](FieldId id, double scale = 1) -> std::optional<double> {
    const auto& f = m[id];
    if (!f.valid()) return std::nullopt;
    return f.value * scale;
  };
  MigInstanceFrame out;
  out.gpu_instance_id = m.gpu_instance_id;
  out.profile = m.profile;
  out.uuid = m.uuid;
  out.memory_used_mib = value(FieldId::kFbUsed);
  out.memory_total_mib = value(FieldId::kFbTotal);
  out.sm_active = value(FieldId::kSmActive, 100);
  out.tensor_active = value(FieldId::kPipeTensorActive, 100);
  if (m.kubernetes_pod) out.pod = m.kubernetes_pod->namespace_name + "/" + m.kubernetes_pod->pod;
  return out;
}

std::int64_t unix_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

LocalReader::LocalReader(nvml::NvmlBackend& backend, LocalReaderOptions options)
    : backend_(backend),
      options_(std::move(options)),
      log_(log_text_, log::Level::kError),
      window_(analysis::signal_names(), options_.diagnosis_window.count() + kWindowMarginMs),
      recorder_(backend.gpus(), backend.system(), exporter::GpuMetricsOptions{}, log_),
      source_(window_) {
  recorder_.set_metric_set(std::make_shared<const exporter::MetricSet>(exporter::default_metric_set()));
  recorder_.set_reading_listener([this](std::int64_t t_ms, std::span<const store::LabeledValue> values,
                                        std::uint64_t layout) { window_.append_reading(t_ms, values, layout); });
}

Frame LocalReader::frame_of(const model::Snapshot& snapshot, const std::vector<model::GpuInfo>& gpus,
                            const model::SystemInfo& system, const std::set<unsigned>& only) {
  using model::FieldId;
  Frame frame;
  frame.time = snapshot.time;
  frame.host = system.hostname;
  for (const auto& s : snapshot.gpus) {
    if (!only.empty() && !only.contains(s.index)) continue;
    GpuFrame g;
    g.index = s.index;
    for (const auto& info : gpus) {
      if (info.index != s.index) continue;
      g.name = info.name;
      g.uuid = info.uuid;
    }
    g.up = s.up;
    if (!s.up) {
      g.down_reason = exporter::nvml_error_text(s.down_error_code);
      frame.gpus.push_back(std::move(g));
      continue;
    }
    g.value(Metric::kUtilization) = field(s, FieldId::kGpuUtil);
    g.value(Metric::kSmActive) = field(s, FieldId::kSmActive, 100);
    g.value(Metric::kTensorActive) = field(s, FieldId::kPipeTensorActive, 100);
    g.value(Metric::kDramActive) = field(s, FieldId::kDramActive, 100);
    g.value(Metric::kMemoryUsedMiB) = field(s, FieldId::kFbUsed);
    g.value(Metric::kMemoryTotalMiB) = field(s, FieldId::kFbTotal);
    g.value(Metric::kPowerWatts) = field(s, FieldId::kPowerUsage);
    g.value(Metric::kPowerLimitWatts) = field(s, FieldId::kEnforcedPowerLimit);
    if (!g.value(Metric::kPowerLimitWatts)) g.value(Metric::kPowerLimitWatts) = field(s, FieldId::kPowerLimit);
    g.value(Metric::kTemperatureC) = field(s, FieldId::kGpuTemp);
    g.value(Metric::kSmClockMHz) = field(s, FieldId::kSmClock);
    g.value(Metric::kMemClockMHz) = field(s, FieldId::kMemClock);
    g.value(Metric::kMaxSmClockMHz) = field(s, FieldId::kMaxSmClock);
    g.value(Metric::kSlowdownTempC) = field(s, FieldId::kSlowdownTemp);
    if (const auto& r = s[FieldId::kClocksEventReasons]; r.valid()) g.throttle_reasons = static_cast<std::uint64_t>(r.value);
    for (const auto& p : s.processes) {
      ProcessRow row;
      row.pid = p.pid;
      row.gpu = s.index;
      row.user = p.identity.user;
      row.command = p.identity.command_line.empty() ? p.identity.name : p.identity.command_line;
      row.memory_bytes = p.used_memory_bytes;
      row.sm_percent = p.sm_util_percent;
      if (s.mig_enabled) row.gpu_instance_id = p.gpu_instance_id;
      g.processes.push_back(std::move(row));
    }
    for (const auto* m : exporter::gpu_instances_of(s)) g.mig_instances.push_back(mig_instance_frame(*m));
    frame.gpus.push_back(std::move(g));
  }
  return frame;
}

void LocalReader::attach_verdicts(Frame& frame, const analysis::Diagnosis& diagnosis) {
  for (const auto& d : diagnosis.gpus) {
    VerdictLine v{std::string(analysis::verdict_id(d.verdict)), std::string(analysis::verdict_title(d.verdict)),
                  d.summary, {}};
    for (const auto& f : d.findings) v.findings.push_back(f.id);
    const std::string_view instance = d.identity.labels.get("GPU_I_ID");
    for (auto& g : frame.gpus) {
      if (d.identity.gpu != std::to_string(g.index)) continue;
      if (instance.empty()) {
        g.verdict = v;
        continue;
      }
      for (auto& m : g.mig_instances) {
        if (std::to_string(m.gpu_instance_id) == instance) m.verdict = v;
      }
    }
  }
}

std::expected<Frame, std::string> LocalReader::read() {
  model::Snapshot snapshot = backend_.sample();
  const auto now = std::chrono::steady_clock::now();
  // A frozen simulated clock (GPUSCOPE_SIM_TIME) stamps every reading alike, and the recent window
  // keeps one sample per time: the steady clock moves it on, as dmon's intervals do.
  if (last_time_ && snapshot.time <= *last_time_) {
    snapshot.time = *last_time_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(now - last_steady_);
  }
  last_time_ = snapshot.time;
  last_steady_ = now;
  recorder_.record(snapshot);
  Frame frame = frame_of(snapshot, backend_.gpus(), backend_.system(), options_.gpus);
  // The diagnosis reads every GPU (peers count for the imbalance finding), whatever -i shows.
  const std::int64_t at_ms = unix_ms(snapshot.time);
  const std::int64_t window_ms = options_.diagnosis_window.count();
  auto histories = analysis::read_histories(source_, at_ms - window_ms, at_ms);
  if (!histories) return frame;  // the verdicts wait for the next reading; the values are good
  attach_verdicts(frame, analysis::diagnose(*histories, at_ms, window_ms, options_.thresholds));
  return frame;
}

}  // namespace gpuscope::top
