#include "tools/history_fixture.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string_view>

#include <fmt/format.h>

namespace gpuscope::bench {

namespace {

// The families written, in this order; names as the agent's /metrics writes them.
enum Metric : std::size_t {
  kSmClock,
  kMemoryTemp,
  kGpuTemp,
  kPowerUsage,
  kTotalEnergy,
  kGpuUtil,
  kMemCopyUtil,
  kFbFree,
  kFbUsed,
  kSmActive,
  kDramActive,
  kTensorActive,
  kMetricCount,
};
constexpr std::array<std::string_view, kMetricCount> kMetricNames = {
    "DCGM_FI_DEV_SM_CLOCK",     "DCGM_FI_DEV_MEMORY_TEMP",  "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",  "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_GPU_UTIL",     "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_USED",      "DCGM_FI_PROF_SM_ACTIVE",   "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
};
// The label order of /metrics (tests/e2e/golden/metrics.txt), used for the OpenMetrics lines.
constexpr std::array<std::string_view, 7> kLabelOrder = {"gpu",       "UUID",     "pci_bus_id",
                                                         "device",    "modelName", "Hostname",
                                                         "DCGM_FI_DRIVER_VERSION"};

// An H100 80GB HBM3 as the simulator's catalog describes it (src/sim/gpu_catalog.cc).
constexpr double kFbUsableMib = 81559 - 539;  // total - reserved = used + free
constexpr double kIdleW = 72, kTdpW = 700;
constexpr std::array<std::string_view, 8> kPciBusIds = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0",
                                                        "00000000:5D:00.0", "00000000:9A:00.0", "00000000:AB:00.0",
                                                        "00000000:BA:00.0", "00000000:DB:00.0"};

enum class Job { kIdle, kTraining, kMemoryBound, kInference };

// One GPU's state between readings.
struct GpuState {
  Job job = Job::kIdle;
  std::size_t job_end = 0;     // reading index at which the next job starts
  std::size_t job_start = 0;
  double fb_level = 1;         // MiB the job settles at
  double leak_mib_per_s = 0;   // > 0: the job leaks device memory
  double temp = 30;            // lags power
  double burst = 0;            // inference load, an AR(1) walk in [0, 100]
  double energy_mj = 0;        // since the driver loaded
};

double clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

std::string uuid(std::mt19937_64& rng) {
  const auto a = rng(), b = rng();
  return fmt::format("GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff,
                     b >> 48, b & 0xffffffffffffULL);
}

}  // namespace

std::int64_t HistoryFixture::last_ms() const {
  return options_.first_ms + static_cast<std::int64_t>(options_.readings == 0 ? 0 : options_.readings - 1) *
                                 options_.interval_ms;
}

HistoryFixture HistoryFixture::generate(const HistoryFixtureOptions& options) {
  HistoryFixture f;
  f.options_ = options;
  const unsigned gpus = options.gpus;
  std::mt19937_64 id_rng(options.seed);
  std::vector<std::string> uuids;
  for (unsigned g = 0; g < gpus; ++g) uuids.push_back(uuid(id_rng));
  for (std::size_t m = 0; m < kMetricCount; ++m) {
    for (unsigned g = 0; g < gpus; ++g) {
      FixtureSeries s;
      s.labels = store::Labels{{"__name__", std::string(kMetricNames[m])},
                               {"gpu", std::to_string(g)},
                               {"UUID", uuids[g]},
                               {"pci_bus_id", std::string(kPciBusIds[g % kPciBusIds.size()])},
                               {"device", fmt::format("nvidia{}", g)},
                               {"modelName", "NVIDIA H100 80GB HBM3"},
                               {"Hostname", options.hostname},
                               {"DCGM_FI_DRIVER_VERSION", "550.54.15"}};
      s.values.resize(options.readings);
      f.series_.push_back(std::move(s));
    }
  }

  const double dt_s = static_cast<double>(options.interval_ms) / 1000.0;
  const auto readings_for = [&](double seconds) {
    return std::max<std::size_t>(1, static_cast<std::size_t>(seconds / dt_s));
  };
  for (unsigned g = 0; g < gpus; ++g) {
    std::mt19937_64 rng(options.seed * 1000 + g + 1);
    std::normal_distribution<double> noise(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const auto between = [&](double lo, double hi) { return lo + (hi - lo) * uniform(rng); };
    GpuState st;
    st.energy_mj = std::round(between(1e8, 5e10));
    for (std::size_t i = 0; i < options.readings; ++i) {
      if (i >= st.job_end) {
        const double pick = uniform(rng);
        st.job = pick < 0.25 ? Job::kIdle : pick < 0.65 ? Job::kTraining : pick < 0.8 ? Job::kMemoryBound : Job::kInference;
        st.job_start = i;
        st.leak_mib_per_s = 0;
        switch (st.job) {
          case Job::kIdle:
            st.job_end = i + readings_for(between(600, 7200));
            st.fb_level = 1;
            break;
          case Job::kTraining:
            st.job_end = i + readings_for(between(3600, 8 * 3600));
            st.fb_level = std::round(between(55000, 76000));
            if (uniform(rng) < 0.25) st.leak_mib_per_s = between(2, 20) / 60.0;
            break;
          case Job::kMemoryBound:
            st.job_end = i + readings_for(between(1800, 3 * 3600));
            st.fb_level = std::round(between(40000, 76000));
            break;
          case Job::kInference:
            st.job_end = i + readings_for(between(1800, 4 * 3600));
            st.fb_level = std::round(between(15000, 40000));
            st.burst = 30;
            break;
        }
      }
      const double since_start_s = static_cast<double>(i - st.job_start) * dt_s;
      double util = 0, sm = 0, dram = 0, tensor = 0;
      switch (st.job) {
        case Job::kIdle:
          break;
        case Job::kTraining:
          util = std::round(std::clamp(97 + 2 * noise(rng), 0.0, 100.0));
          sm = clamp01(0.78 + 0.03 * noise(rng));
          dram = clamp01(0.42 + 0.04 * noise(rng));
          tensor = clamp01(0.55 + 0.05 * noise(rng));
          break;
        case Job::kMemoryBound:
          util = std::round(std::clamp(92 + 3 * noise(rng), 0.0, 100.0));
          sm = clamp01(0.18 + 0.05 * noise(rng));
          dram = clamp01(0.87 + 0.04 * noise(rng));
          tensor = clamp01(0.04 + 0.01 * noise(rng));
          break;
        case Job::kInference:
          st.burst = std::clamp(0.9 * st.burst + 0.1 * between(0, 100) + 4 * noise(rng), 0.0, 100.0);
          util = std::round(st.burst);
          sm = clamp01(st.burst / 100 * 0.55 + 0.02 * noise(rng));
          dram = clamp01(st.burst / 100 * 0.3 + 0.02 * noise(rng));
          tensor = clamp01(st.burst / 100 * 0.4 + 0.02 * noise(rng));
          break;
      }
      // Memory fills over the first minute of a job, then holds (or creeps up when the job leaks).
      double fb = st.fb_level;
      if (st.job != Job::kIdle) {
        fb = std::round(std::min(1.0, since_start_s / 60.0) * st.fb_level + st.leak_mib_per_s * since_start_s);
        fb = std::min(fb, kFbUsableMib);
      }
      const double power_w =
          st.job == Job::kIdle
              ? kIdleW + 1.5 * noise(rng)
              : std::clamp(kIdleW + 520 * sm + 160 * dram + 60 * tensor + 12 * noise(rng), kIdleW - 5, kTdpW);
      const double power = std::round(power_w * 1000) / 1000;  // NVML reports mW
      st.energy_mj += std::round(power * static_cast<double>(options.interval_ms));
      const double target_temp = 27 + 0.065 * power;
      st.temp += (target_temp - st.temp) * (1 - std::exp(-dt_s / 120.0));
      const double temp = std::round(st.temp + 0.4 * noise(rng));

      auto set = [&](Metric m, double v) { f.series_[m * gpus + g].values[i] = v; };
      set(kSmClock, st.job == Job::kIdle ? 345 : 1980);
      set(kMemoryTemp, temp + 5);
      set(kGpuTemp, temp);
      set(kPowerUsage, power);
      set(kTotalEnergy, st.energy_mj);
      set(kGpuUtil, util);
      set(kMemCopyUtil, std::round(dram * 100));
      set(kFbFree, kFbUsableMib - fb);
      set(kFbUsed, fb);
      set(kSmActive, sm);
      set(kDramActive, dram);
      set(kTensorActive, tensor);
    }
  }
  return f;
}

std::expected<store::TsdbStats, std::string> HistoryFixture::write_tsdb(const std::filesystem::path& data_dir) const {
  store::TsdbOptions o;
  o.data_dir = data_dir;
  o.retention_ms = 10LL * 365 * 24 * 3600 * 1000;
  o.flush_interval_ms = 3600 * 1000;
  o.warn = [](std::string_view line) { fmt::print(stderr, "history_fixture: store: {}\n", line); };
  auto tsdb = store::Tsdb::open(o, options_.first_ms);
  if (!tsdb) return std::unexpected(tsdb.error());
  // One reading's values, labels built once and reused (as the agent's HistoryRecorder does).
  std::vector<store::LabeledValue> reading;
  reading.reserve(series_.size());
  for (const auto& s : series_) reading.push_back({s.labels, 0.0});
  for (std::size_t i = 0; i < options_.readings; ++i) {
    const std::int64_t t = options_.first_ms + static_cast<std::int64_t>(i) * options_.interval_ms;
    for (std::size_t k = 0; k < series_.size(); ++k) reading[k].value = series_[k].values[i];
    const auto r = (*tsdb)->append_reading(t, reading);
    if (r.rejected != 0) return std::unexpected(fmt::format("append at {} rejected: {}", t, r.first_error));
    if (auto fl = (*tsdb)->flush_if_due(t); !fl) return std::unexpected(fl.error());
  }
  if (auto fl = (*tsdb)->flush(last_ms()); !fl) return std::unexpected(fl.error());
  return (*tsdb)->stats();
}

std::expected<std::uint64_t, std::string> HistoryFixture::write_openmetrics(const std::filesystem::path& file) const {
  std::unique_ptr<std::FILE, decltype(&std::fclose)> out(std::fopen(file.c_str(), "w"), &std::fclose);
  if (!out) return std::unexpected(fmt::format("cannot create {}", file.string()));
  std::uint64_t written = 0;
  fmt::memory_buffer buf;
  const auto drain = [&]() -> bool {
    written += buf.size();
    const bool ok = std::fwrite(buf.data(), 1, buf.size(), out.get()) == buf.size();
    buf.clear();
    return ok;
  };
  for (const auto& s : series_) {
    std::string prefix(s.labels.metric_name());
    prefix += '{';
    bool first = true;
    for (const auto name : kLabelOrder) {
      // Fixture label values need no escaping (no quote, backslash or newline).
      fmt::format_to(std::back_inserter(prefix), "{}{}=\"{}\"", first ? "" : ",", name, s.labels.get(name));
      first = false;
    }
    prefix += "} ";
    for (std::size_t i = 0; i < options_.readings; ++i) {
      const std::int64_t t = options_.first_ms + static_cast<std::int64_t>(i) * options_.interval_ms;
      // fmt's "{}" for a double is the shortest form that round-trips; Go's ParseFloat reads it back exactly.
      fmt::format_to(std::back_inserter(buf), "{}{} {}.{:03}\n", prefix, s.values[i], t / 1000, t % 1000);
      if (buf.size() > (1 << 20) && !drain()) return std::unexpected(fmt::format("write to {} failed", file.string()));
    }
  }
  fmt::format_to(std::back_inserter(buf), "# EOF\n");
  if (!drain() || std::fflush(out.get()) != 0) return std::unexpected(fmt::format("write to {} failed", file.string()));
  return written;
}

}  // namespace gpuscope::bench
