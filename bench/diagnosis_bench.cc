// The agent's diagnosis as it runs once per reading: 8 simulated H100s (scenarios/demo.yaml) recorded at 1 s into a head the
// way the agent's history records them (every series of the default /metrics set, processes and
// gpuscope's own GPU series), then one evaluation of the 30 s window ending at the last reading (read
// the signals, group them per GPU, diagnose), read from the head (the history) or from the recent
// window the agent's loop reads. Reports the p99 of one evaluation and the share of one core it takes
// at one evaluation per second, and what feeding the recent window costs the sampler per reading.
#include <benchmark/benchmark.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <vector>

#include "agent/history_recorder.h"
#include "analysis/diagnosis.h"
#include "analysis/reading_source.h"
#include "export/metric_set.h"
#include "log/logger.h"
#include "nvml/nvml_backend.h"
#include "store/head.h"
#include "store/recent_window.h"

namespace {

using namespace gpuscope;

constexpr std::int64_t kWindowMs = 30'000;
// The agent's span: the window and its margin (agent.cc's kRecentWindowMarginMs).
constexpr std::int64_t kRecentSpanMs = kWindowMs + 10'000;

struct RecordedNode {
  store::Head head;
  store::RecentWindow recent{analysis::signal_names(), kRecentSpanMs};
  std::int64_t last_ms = 0;
  std::size_t series = 0;
};

// The node bench/agent_footprint.sh runs: 8 H100s with training, starved and straggling GPUs and their
// processes.
std::unique_ptr<nvml::NvmlBackend> open_demo_node() {
  setenv("GPUSCOPE_SIM_SCENARIO", GPUSCOPE_SOURCE_DIR "/scenarios/demo.yaml", 1);
  setenv("GPUSCOPE_SIM_TIME", "0", 1);
  nvml::BackendOptions o;
  o.simulate = true;
  o.library_path = GPUSCOPE_SIM_LIB;
  o.read_pcie_throughput = false;
  auto backend = nvml::NvmlBackend::open(o);
  unsetenv("GPUSCOPE_SIM_TIME");
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  if (!backend) return nullptr;
  return std::move(*backend);
}

log::Logger& quiet_log() {
  static std::stringstream log_text;
  static log::Logger log(log_text, log::Level::kError);
  return log;
}

// `seconds` of history in the head when the diagnosis reads its last 30 s (the agent's head keeps
// hours; two minutes already makes every series of the node exist, which is what a select scans).
RecordedNode& recorded_node(int seconds) {
  static std::map<int, RecordedNode*> nodes;
  auto& node = nodes[seconds];
  if (node == nullptr) {
    auto* n = new RecordedNode;
    node = n;
    auto backend = open_demo_node();
    if (!backend) return *n;
    agent::HistoryRecorder recorder(n->head, backend->gpus(), backend->system(), {}, quiet_log());
    recorder.set_metric_set(std::make_shared<const exporter::MetricSet>(exporter::default_metric_set()));
    recorder.set_reading_listener([n](std::int64_t t_ms, std::span<const store::LabeledValue> values,
                                      std::uint64_t layout) { n->recent.append_reading(t_ms, values, layout); });
    const auto start = backend->now();
    for (int s = 0; s < seconds; ++s) {
      backend->set_sim_time(start + std::chrono::seconds(s));
      const auto snapshot = backend->sample();
      recorder.record(snapshot);
      n->last_ms = std::chrono::duration_cast<std::chrono::milliseconds>(snapshot.time.time_since_epoch()).count();
    }
    n->series = n->head.stats().series;
  }
  return *node;
}

void BM_DiagnosisOf8GpusOver30sFromTheStore(benchmark::State& state) {
  RecordedNode& node = recorded_node(static_cast<int>(state.range(0)));
  // read:1 reads the window from the head at each evaluation (the agent's loop before the recent
  // window: each chunk decoded from its start, under the head's lock); read:2 from the recent window,
  // as the loop does now; read:0 diagnoses the same window again and again: the diagnosis' own share.
  const bool read = state.range(1) != 0;
  const bool from_recent = state.range(1) == 2;
  const analysis::StoreSource source(from_recent ? static_cast<const store::Queryable&>(node.recent)
                                                 : static_cast<const store::Queryable&>(node.head));
  const analysis::Thresholds thresholds;
  const std::int64_t t = node.last_ms;
  auto once = analysis::read_histories(source, t - kWindowMs, t);
  if (!once) {
    state.SkipWithError(once.error().c_str());
    return;
  }
  // Both must give the diagnosis the same window, or the comparison means nothing.
  const auto from_head = analysis::read_histories(analysis::StoreSource(node.head), t - kWindowMs, t);
  const auto verdicts = [&](std::span<const analysis::GpuHistory> h) {
    std::vector<analysis::Verdict> v;
    for (const auto& g : analysis::diagnose(h, t, kWindowMs, thresholds).gpus) v.push_back(g.verdict);
    return v;
  };
  if (!from_head || verdicts(*from_head) != verdicts(*once)) {
    state.SkipWithError("the recent window's verdicts differ from the head's");
    return;
  }
  std::vector<double> seconds;
  std::size_t gpus = 0;
  for (auto _ : state) {
    const auto started = std::chrono::steady_clock::now();
    std::expected<std::vector<analysis::GpuHistory>, std::string> fresh;
    if (read) {
      fresh = analysis::read_histories(source, t - kWindowMs, t);
      if (!fresh) {
        state.SkipWithError(fresh.error().c_str());
        return;
      }
    }
    const std::span<const analysis::GpuHistory> histories = read ? std::span<const analysis::GpuHistory>(*fresh)
                                                                 : std::span<const analysis::GpuHistory>(*once);
    const auto d = analysis::diagnose(histories, t, kWindowMs, thresholds);
    benchmark::DoNotOptimize(d);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    gpus = d.gpus.size();
  }
  std::sort(seconds.begin(), seconds.end());
  double sum = 0;
  for (double s : seconds) sum += s;
  const double p99 = seconds[std::min(seconds.size() - 1, seconds.size() * 99 / 100)];
  state.counters["gpus"] = static_cast<double>(gpus);
  state.counters["head_series"] = static_cast<double>(node.series);
  state.counters["p50_ms"] = seconds[seconds.size() / 2] * 1e3;
  state.counters["p99_ms"] = p99 * 1e3;
  // One evaluation per 1 s reading: the mean evaluation over one second is the share of a core.
  state.counters["core_percent_at_1s"] = sum / static_cast<double>(seconds.size()) * 100;
}
BENCHMARK(BM_DiagnosisOf8GpusOver30sFromTheStore)
    ->ArgNames({"history_s", "read"})
    ->Args({120, 1})
    ->Args({3600, 1})
    ->Args({3600, 2})
    ->Args({3600, 0})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3);

// The sampler's side: each reading of the demo node recorded (the exposition written into labeled
// values, as the agent's recorder does at every reading) and handed to the recent window. Reports the
// listener's time per reading (what the window adds to a reading with history) and the whole record
// into no store (what --no-history pays per reading to keep the diagnosis), both p50/p99 in µs.
void BM_RecentWindowFedAtEachReading(benchmark::State& state) {
  auto backend = open_demo_node();
  if (!backend) {
    state.SkipWithError("the simulator did not open");
    return;
  }
  store::RecentWindow recent(analysis::signal_names(), kRecentSpanMs);
  agent::HistoryRecorder recorder(backend->gpus(), backend->system(), {}, quiet_log());
  recorder.set_metric_set(std::make_shared<const exporter::MetricSet>(exporter::default_metric_set()));
  std::vector<double> listener_s, record_s;
  recorder.set_reading_listener([&](std::int64_t t_ms, std::span<const store::LabeledValue> values, std::uint64_t layout) {
    const auto started = std::chrono::steady_clock::now();
    recent.append_reading(t_ms, values, layout);
    listener_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  });
  const auto start = backend->now();
  int s = 0;
  for (auto _ : state) {
    backend->set_sim_time(start + std::chrono::seconds(s++));
    const auto snapshot = backend->sample();
    const auto started = std::chrono::steady_clock::now();
    recorder.record(snapshot);
    record_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  const auto percentile_us = [](std::vector<double>& v, std::size_t num, std::size_t den) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[std::min(v.size() - 1, v.size() * num / den)] * 1e6;
  };
  state.counters["window_series"] = static_cast<double>(recent.series_count());
  state.counters["window_samples"] = static_cast<double>(recent.sample_count());
  state.counters["listener_p50_us"] = percentile_us(listener_s, 1, 2);
  state.counters["listener_p99_us"] = percentile_us(listener_s, 99, 100);
  state.counters["record_p50_us"] = percentile_us(record_s, 1, 2);
  state.counters["record_p99_us"] = percentile_us(record_s, 99, 100);
}
BENCHMARK(BM_RecentWindowFedAtEachReading)->Unit(benchmark::kMicrosecond)->MinTime(3);

}  // namespace
