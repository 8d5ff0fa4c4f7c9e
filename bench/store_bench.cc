// The store's compressed chunks on real-shaped data: one hour of 1 s readings of 8 simulated H100s
// (every DCGM field of the default /metrics set, one series per GPU and field) appended to XorChunks.
// Reports bytes per sample over all series and by kind, and the append cost per sample.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <vector>

#include "export/metric_set.h"
#include "nvml/nvml_backend.h"
#include "store/xor_chunk.h"

namespace {

using namespace gpuscope;

struct Readings {
  std::vector<std::vector<double>> series;  // [series][reading]
  std::vector<bool> integral;               // whether every value of the series is a whole number
};

// One hour at 1 s of every default field of every GPU, from the simulator's default node.
const Readings& hour_of_readings() {
  static const Readings readings = [] {
    Readings r;
    setenv("GPUSCOPE_SIM_TIME", "0", 1);
    nvml::BackendOptions o;
    o.simulate = true;
    o.library_path = GPUSCOPE_SIM_LIB;
    o.read_pcie_throughput = false;
    auto backend = nvml::NvmlBackend::open(o);
    unsetenv("GPUSCOPE_SIM_TIME");
    if (!backend) return r;
    const auto set = exporter::default_metric_set();
    const auto start = (*backend)->now();
    std::map<std::pair<unsigned, int>, std::size_t> index;
    for (int s = 0; s < 3600; ++s) {
      (*backend)->set_sim_time(start + std::chrono::seconds(s));
      const auto snap = (*backend)->sample();
      for (const auto& g : snap.gpus) {
        for (const auto& f : set.fields) {
          if (!g[f.id].valid()) continue;
          auto [it, added] = index.emplace(std::pair{g.index, static_cast<int>(f.id)}, r.series.size());
          if (added) r.series.emplace_back();
          r.series[it->second].push_back(g[f.id].value / model::FieldCatalog::get(f.id).dcgm_divisor);
        }
      }
    }
    for (const auto& s : r.series) {
      bool whole = true;
      for (double v : s) whole = whole && v == static_cast<double>(static_cast<long long>(v));
      r.integral.push_back(whole);
    }
    return r;
  }();
  return readings;
}

void BM_XorChunkHourOfGpuSeries(benchmark::State& state) {
  const auto& r = hour_of_readings();
  if (r.series.empty()) {
    state.SkipWithError("simulator did not load");
    return;
  }
  std::size_t bytes = 0, samples = 0, int_bytes = 0, int_samples = 0;
  for (auto _ : state) {
    bytes = samples = int_bytes = int_samples = 0;
    for (std::size_t k = 0; k < r.series.size(); ++k) {
      store::XorChunk chunk;
      // Readings are stamped with their scheduled tick, as Prometheus stamps scrapes.
      for (std::size_t i = 0; i < r.series[k].size(); ++i) {
        chunk.append(1767225600000 + static_cast<std::int64_t>(i) * 1000, r.series[k][i]);
      }
      bytes += chunk.bytes();
      samples += chunk.samples();
      if (r.integral[k]) {
        int_bytes += chunk.bytes();
        int_samples += chunk.samples();
      }
      benchmark::DoNotOptimize(chunk);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * samples));
  state.counters["series"] = static_cast<double>(r.series.size());
  state.counters["bytes_per_sample"] = static_cast<double>(bytes) / static_cast<double>(samples);
  state.counters["int_series_bytes_per_sample"] = static_cast<double>(int_bytes) / static_cast<double>(int_samples);
  state.counters["float_series_bytes_per_sample"] =
      static_cast<double>(bytes - int_bytes) / static_cast<double>(samples - int_samples);
}
BENCHMARK(BM_XorChunkHourOfGpuSeries)->Unit(benchmark::kMillisecond);

}  // namespace
