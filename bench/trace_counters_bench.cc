// The counters over time of issue 22 on the ~35 MB real trace: the launch-queue and memory-bandwidth
// analyses alone (the part of `gpuscope trace` they add; BM_TraceAnalyzeFile has them in), with the
// series an augmented trace needs, and writing the augmented trace (plain, and gzip from gzip).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <regex>
#include <string>

#include "trace/counters_report.h"
#include "trace/memory_bandwidth.h"
#include "trace/queue_length.h"
#include "trace/rank_analysis.h"
#include "trace/trace_analyzer.h"
#include "trace/trace_byte_reader.h"
#include "trace/trace_overlay.h"
#include "trace/trace_parser.h"

namespace {

using namespace gpuscope::trace;

const std::string kCountersControlGz = GPUSCOPE_SOURCE_DIR "/../shared/conformance/traces/trace_diff__control__control.json.gz";

// The real trace's timeline after analyze_rank (activities sorted by device and start, launches joined).
const RankTimeline& counters_timeline() {
  static const RankTimeline timeline = [] {
    RankTimeline t;
    static const std::regex pattern("DataLoader");
    auto reader = TraceByteReader::open(kCountersControlGz);
    if (!reader) return t;
    TimelineBuilder builder(t, pattern);
    if (!parse_trace(*reader, builder, t.header, {})) return t;
    analyze_rank(t, {});
    return t;
  }();
  return timeline;
}

void counters_run(benchmark::State& state, bool series) {
  const RankTimeline& t = counters_timeline();
  const std::span<const GpuActivity> acts(t.activities);
  for (auto _ : state) {
    auto q = analyze_queue_length(acts, {.series = series});
    auto b = analyze_memory_bandwidth(acts, t.names, series);
    benchmark::DoNotOptimize(q);
    benchmark::DoNotOptimize(b);
  }
  state.counters["activities"] = static_cast<double>(acts.size());
}

void BM_TraceCounters(benchmark::State& state) { counters_run(state, false); }
BENCHMARK(BM_TraceCounters)->Unit(benchmark::kMillisecond);

void BM_TraceCountersWithSeries(benchmark::State& state) { counters_run(state, true); }
BENCHMARK(BM_TraceCountersWithSeries)->Unit(benchmark::kMillisecond);

// analyze_trace_file with the series, then the augmented trace written: what `--augment` costs.
void counters_overlay_run(benchmark::State& state, const std::string& input, const std::string& output) {
  TraceAnalysisOptions options;
  options.analysis.counter_series = true;
  for (auto _ : state) {
    auto report = analyze_trace_file(input, options);
    if (!report) {
      state.SkipWithError(report.error().what().c_str());
      return;
    }
    auto written = write_trace_overlay(input, output, counter_overlay_events(*report));
    if (!written) state.SkipWithError(written.error().what().c_str());
  }
  std::filesystem::remove(output);
}

void BM_TraceAugmentGzipToGzip(benchmark::State& state) {
  counters_overlay_run(state, kCountersControlGz,
                       (std::filesystem::temp_directory_path() / "gpuscope-bench-augmented.json.gz").string());
}
BENCHMARK(BM_TraceAugmentGzipToGzip)->Unit(benchmark::kMillisecond);

void BM_TraceAugmentGzipToPlain(benchmark::State& state) {
  counters_overlay_run(state, kCountersControlGz, (std::filesystem::temp_directory_path() / "gpuscope-bench-augmented.json").string());
}
BENCHMARK(BM_TraceAugmentGzipToPlain)->Unit(benchmark::kMillisecond);

}  // namespace
