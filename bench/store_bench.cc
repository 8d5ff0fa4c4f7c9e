// The store on real-shaped data: one hour of 1 s readings of 8 simulated H100s (every DCGM field of the
// default /metrics set, one series per GPU and field, labelled as /metrics labels them). Reports the
// XorChunk bytes per sample by kind and its append cost, the Head's ingest cost per sample and memory
// per sample, and the bytes per sample on disk after the Tsdb flushed the hour.
#include <benchmark/benchmark.h>

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "export/metric_set.h"
#include "nvml/nvml_backend.h"
#include "store/head.h"
#include "store/tsdb.h"
#include "store/xor_chunk.h"

namespace {

using namespace gpuscope;

struct Readings {
  std::vector<std::vector<double>> series;  // [series][reading]
  std::vector<bool> integral;               // whether every value of the series is a whole number
  std::vector<store::Labels> labels;        // [series], as /metrics labels it
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
          if (added) {
            r.series.emplace_back();
            const auto& gpus = (*backend)->gpus();
            const auto found = std::find_if(gpus.begin(), gpus.end(), [&](const auto& i) { return i.index == g.index; });
            const model::GpuInfo info = found != gpus.end() ? *found : model::GpuInfo{};
            const auto name = f.name.empty() ? std::string(model::FieldCatalog::get(f.id).dcgm_name) : f.name;
            r.labels.push_back(store::Labels{{"__name__", name},
                                             {"gpu", std::to_string(g.index)},
                                             {"UUID", info.uuid},
                                             {"device", "nvidia" + std::to_string(g.index)},
                                             {"modelName", info.name},
                                             {"pci_bus_id", info.pci_bus_id},
                                             {"Hostname", "gpu-node-01"}});
          }
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

constexpr std::int64_t kHourStartMs = 1767225600000;

// One reading (every series at second i) as the sampler hands it to the store.
std::vector<store::LabeledValue> reading_at(const Readings& r, std::size_t i) {
  std::vector<store::LabeledValue> out;
  out.reserve(r.series.size());
  for (std::size_t k = 0; k < r.series.size(); ++k) out.push_back({r.labels[k], r.series[k][i]});
  return out;
}

// The sampler's path: an hour of readings through Head::append_reading (series lookup by labels,
// staleness bookkeeping, chunk cutting). Items are samples, so the time per item is ns per sample.
void BM_HeadIngestHourOfGpuReadings(benchmark::State& state) {
  const auto& r = hour_of_readings();
  if (r.series.empty()) {
    state.SkipWithError("simulator did not load");
    return;
  }
  std::vector<std::vector<store::LabeledValue>> readings;
  for (std::size_t i = 0; i < r.series[0].size(); ++i) readings.push_back(reading_at(r, i));
  store::HeadStats st;
  std::size_t samples = 0;
  for (auto _ : state) {
    auto head = std::make_unique<store::Head>();
    for (std::size_t i = 0; i < readings.size(); ++i) {
      head->append_reading(kHourStartMs + static_cast<std::int64_t>(i) * 1000, readings[i]);
    }
    state.PauseTiming();
    st = head->stats();
    samples = st.samples;
    head.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * samples));
  state.counters["series"] = static_cast<double>(st.series);
  // A rate of (samples / 1e9) inverted: seconds / (samples / 1e9), the ingest cost in ns per sample.
  state.counters["ns_per_sample"] = benchmark::Counter(static_cast<double>(state.iterations() * samples) * 1e-9,
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["mem_chunk_bytes_per_sample"] = st.bytes_per_sample;
  state.counters["mem_bytes_per_sample_with_labels"] =
      static_cast<double>(st.chunk_bytes + st.label_bytes) / static_cast<double>(st.samples);
  state.counters["label_bytes_per_series"] = static_cast<double>(st.label_bytes) / static_cast<double>(st.series);
}
BENCHMARK(BM_HeadIngestHourOfGpuReadings)->Unit(benchmark::kMillisecond);

// The hour through the Tsdb as the agent runs it: flushed every 60 s (sealed chunks plus open-chunk
// snapshots, one transaction each), then the SQLite file (and log) size per sample. Time per item is
// the ingest cost per sample including the flushes.
void BM_TsdbHourOnDisk(benchmark::State& state) {
  const auto& r = hour_of_readings();
  if (r.series.empty()) {
    state.SkipWithError("simulator did not load");
    return;
  }
  std::vector<std::vector<store::LabeledValue>> readings;
  for (std::size_t i = 0; i < r.series[0].size(); ++i) readings.push_back(reading_at(r, i));
  std::string tmpl = (std::filesystem::temp_directory_path() / "gpuscope_store_bench_XXXXXX").string();
  const std::filesystem::path dir = mkdtemp(tmpl.data());
  std::uint64_t disk_bytes = 0, disk_bytes_checkpointed = 0;
  std::size_t samples = 0;
  for (auto _ : state) {
    std::filesystem::remove_all(dir / store::kChunkDatabaseFileName);
    store::TsdbOptions o;
    o.data_dir = dir;
    auto tsdb = store::Tsdb::open(o, kHourStartMs);
    if (!tsdb) {
      state.SkipWithError(tsdb.error().c_str());
      break;
    }
    std::int64_t t = kHourStartMs;
    for (std::size_t i = 0; i < readings.size(); ++i) {
      t = kHourStartMs + static_cast<std::int64_t>(i) * 1000;
      (*tsdb)->append_reading(t, readings[i]);
      if (auto f = (*tsdb)->flush_if_due(t); !f) state.SkipWithError(f.error().c_str());
    }
    (void)(*tsdb)->flush(t);
    state.PauseTiming();
    samples = readings.size() * r.series.size();
    disk_bytes = (*tsdb)->stats().disk_bytes;
    tsdb->reset();  // closing checkpoints the log into the file
    std::error_code ec;
    disk_bytes_checkpointed = std::filesystem::file_size(dir / store::kChunkDatabaseFileName, ec);
    state.ResumeTiming();
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * samples));
  state.counters["ns_per_sample_with_flushes"] = benchmark::Counter(
      static_cast<double>(state.iterations() * samples) * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["disk_bytes_per_sample"] = static_cast<double>(disk_bytes_checkpointed) / static_cast<double>(samples);
  state.counters["disk_bytes_per_sample_with_wal"] = static_cast<double>(disk_bytes) / static_cast<double>(samples);
}
BENCHMARK(BM_TsdbHourOnDisk)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

namespace {

// Reading-to-publish latency while a flush of 2 hours of 8-GPU history runs (issue 14). Two hours of
// readings (the simulated hour twice over) sit unflushed in the head; then readings are scheduled every
// kReadingPeriod of real time (the sampler's 1 s compressed, so a flush meets many of them) and each
// one's latency is from its scheduled time to the end of its append: queueing included, as the sampler
// would see it. Arg 0 ("before"): the appending thread flushes, as HistoryRecorder did (append, then
// flush_if_due, which is due); readings scheduled during the flush wait for it. Arg 1 ("after"): a
// second thread flushes, as TsdbFlusher does. Arg 2 (the control): a second thread only burns CPU for
// kControlSpin, touching nothing of the store: the latency tail the machine itself adds to a thread
// that shares its cores (on a busy 2-core machine, most of arg 1's p99). Percentiles over the readings
// scheduled from the start to the end of the flush.
constexpr auto kReadingPeriod = std::chrono::milliseconds(1);
constexpr auto kControlSpin = std::chrono::milliseconds(80);  // about as long as the flush takes here

void BM_ReadingLatencyDuringFlushOf2hOf8Gpus(benchmark::State& state) {
  const auto& r = hour_of_readings();
  if (r.series.empty()) {
    state.SkipWithError("simulator did not load");
    return;
  }
  const bool flush_on_its_own_thread = state.range(0) >= 1;
  const bool control = state.range(0) == 2;
  const std::size_t hour = r.series[0].size();
  std::vector<std::vector<store::LabeledValue>> readings;
  for (std::size_t i = 0; i < hour; ++i) readings.push_back(reading_at(r, i));
  std::string tmpl = (std::filesystem::temp_directory_path() / "gpuscope_flush_latency_XXXXXX").string();
  const std::filesystem::path dir = mkdtemp(tmpl.data());
  std::vector<double> latencies_us;
  double flush_ms = 0;
  std::size_t chunks = 0;
  for (auto _ : state) {
    std::filesystem::remove_all(dir / store::kChunkDatabaseFileName);
    store::TsdbOptions o;
    o.data_dir = dir;
    o.flush_interval_ms = 2LL * 3600 * 1000;  // nothing flushes while the 2 h are appended
    auto opened = store::Tsdb::open(o, kHourStartMs);
    if (!opened) {
      state.SkipWithError(opened.error().c_str());
      break;
    }
    store::Tsdb& tsdb = **opened;
    std::int64_t t = kHourStartMs;
    for (std::size_t i = 0; i < 2 * hour; ++i, t += 1000) tsdb.append_reading(t, readings[i % hour]);

    std::atomic<bool> flushing{true};
    std::chrono::steady_clock::time_point flush_start, flush_end;
    std::expected<store::FlushResult, std::string> flushed = store::FlushResult{};
    auto flush = [&] {
      flush_start = std::chrono::steady_clock::now();
      if (control) {
        while (std::chrono::steady_clock::now() < flush_start + kControlSpin) {
        }
      } else {
        flushed = tsdb.flush_if_due(t);
      }
      flush_end = std::chrono::steady_clock::now();
      flushing = false;
    };
    std::thread flusher;
    if (flush_on_its_own_thread) flusher = std::thread(flush);
    latencies_us.clear();
    const auto first = std::chrono::steady_clock::now();
    for (std::size_t i = 0;; ++i, t += 1000) {
      const auto scheduled = first + i * kReadingPeriod;
      if (!flushing && scheduled > flush_end) break;
      std::this_thread::sleep_until(scheduled);  // returns at once for a reading already late
      tsdb.append_reading(t, readings[i % hour]);
      latencies_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - scheduled).count());
      if (!flush_on_its_own_thread && i == 0) flush();  // the sampler's old path: flush after the append
    }
    if (flusher.joinable()) flusher.join();
    if (!flushed) {
      state.SkipWithError(flushed.error().c_str());
      break;
    }
    chunks = flushed->chunks_written;
    flush_ms = std::chrono::duration<double, std::milli>(flush_end - flush_start).count();
  }
  std::filesystem::remove_all(dir);
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) {
    return latencies_us.empty() ? 0.0 : latencies_us[static_cast<std::size_t>(p * static_cast<double>(latencies_us.size() - 1))];
  };
  state.counters["series"] = static_cast<double>(r.series.size());
  state.counters["chunks_flushed"] = static_cast<double>(chunks);
  state.counters["flush_ms"] = flush_ms;
  state.counters["readings"] = static_cast<double>(latencies_us.size());
  state.counters["p50_us"] = pct(0.5);
  state.counters["p99_us"] = pct(0.99);
  state.counters["max_us"] = latencies_us.empty() ? 0.0 : latencies_us.back();
}
BENCHMARK(BM_ReadingLatencyDuringFlushOf2hOf8Gpus)->ArgName("flush_thread")->Arg(0)->Arg(1)->Arg(2)->Iterations(1)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

namespace {

// The head's side of the same: how long one append_reading takes while another thread keeps
// collecting a flush's chunks from 2 hours of 8-GPU history (Head::unpersisted_chunks, which takes
// the head's lock series by series). Arg 0 is the control: the other thread only spins. Without
// Head::let_appends_in, glibc's reader-preferring lock lets the walk retake it series after series
// while a woken append is still on its way: here (2 busy cores) the max over 300 appends was 0.3 to
// 2.1 ms in six runs and up to 7 ms in others; with it, 0.46 to 0.66 ms in six runs interleaved.
void BM_AppendWhileAFlushCollectsChunks(benchmark::State& state) {
  const auto& r = hour_of_readings();
  if (r.series.empty()) {
    state.SkipWithError("simulator did not load");
    return;
  }
  const std::size_t hour = r.series[0].size();
  std::vector<std::vector<store::LabeledValue>> readings;
  for (std::size_t i = 0; i < hour; ++i) readings.push_back(reading_at(r, i));
  store::Head head;
  std::int64_t t = kHourStartMs;
  for (std::size_t i = 0; i < 2 * hour; ++i, t += 1000) head.append_reading(t, readings[i % hour]);
  std::vector<double> us;
  for (auto _ : state) {
    std::atomic<bool> stop{false};
    std::thread collector([&] {
      while (!stop) {
        if (state.range(0) == 1) benchmark::DoNotOptimize(head.unpersisted_chunks());
      }
    });
    for (std::size_t i = 0; i < 300; ++i, t += 1000) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      const auto start = std::chrono::steady_clock::now();
      head.append_reading(t, readings[i % hour]);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    stop = true;
    collector.join();
  }
  std::sort(us.begin(), us.end());
  state.counters["append_p50_us"] = us[us.size() / 2];
  state.counters["append_p99_us"] = us[us.size() * 99 / 100];
  state.counters["append_max_us"] = us.back();
}
BENCHMARK(BM_AppendWhileAFlushCollectsChunks)->ArgName("collecting")->Arg(0)->Arg(1)->Iterations(1)->UseRealTime();

}  // namespace
