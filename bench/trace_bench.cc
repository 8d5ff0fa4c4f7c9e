// gpuscope trace's parser and analyses on the ~35 MB real trace (decompressed once into memory and a temp
// file): throughput in bytes of JSON per second on one core, for the bracket scanner alone, the parse
// alone (events dropped), and the whole file-to-report path. bench/trace_throughput.sh adds the
// multi-GB synthetic trace, peak RSS and the Python baseline.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "trace/json_structure_scanner.h"
#include "trace/trace_analyzer.h"
#include "trace/trace_byte_reader.h"
#include "trace/trace_parser.h"

namespace {

using namespace gpuscope::trace;

const std::string& control_json() {
  static const std::string json = [] {
    std::string out;
    auto reader = TraceByteReader::open(GPUSCOPE_SOURCE_DIR "/../shared/conformance/traces/trace_diff__control__control.json.gz");
    if (!reader) return out;
    std::string chunk(1 << 20, '\0');
    for (;;) {
      auto n = reader->read(chunk.data(), chunk.size());
      if (!n || *n == 0) break;
      out.append(chunk.data(), *n);
    }
    return out;
  }();
  return json;
}

const std::string& control_file() {
  static const std::string path = [] {
    const std::string p = (std::filesystem::temp_directory_path() / "gpuscope-trace-bench-control.json").string();
    std::ofstream(p, std::ios::binary) << control_json();
    return p;
  }();
  return path;
}

class NullSink : public TraceEventSink {
 public:
  void on_event(const TraceEvent& event) override { benchmark::DoNotOptimize(event.start_ns); }
};

void BM_TraceStructureScan(benchmark::State& state) {
  const std::string& json = control_json();
  for (auto _ : state) {
    JsonStructureScanner scanner;
    std::size_t brackets = 0;
    scanner.scan(json.data(), 0, json.size(), true, [&](JsonBracket) {
      ++brackets;
      return false;
    });
    benchmark::DoNotOptimize(brackets);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
}
BENCHMARK(BM_TraceStructureScan)->Unit(benchmark::kMillisecond);

void BM_TraceParseInMemory(benchmark::State& state) {
  const std::string& json = control_json();
  for (auto _ : state) {
    auto reader = TraceByteReader::from_memory(json.data(), json.size());
    NullSink sink;
    TraceHeader header;
    auto summary = parse_trace(reader, sink, header, {});
    if (!summary) state.SkipWithError(summary.error().what().c_str());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
}
BENCHMARK(BM_TraceParseInMemory)->Unit(benchmark::kMillisecond);

void BM_TraceAnalyzeFile(benchmark::State& state) {
  const std::string& file = control_file();
  for (auto _ : state) {
    auto report = analyze_trace_file(file, {});
    if (!report) state.SkipWithError(report.error().what().c_str());
    benchmark::DoNotOptimize(report);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * control_json().size()));
}
BENCHMARK(BM_TraceAnalyzeFile)->Unit(benchmark::kMillisecond);

}  // namespace
