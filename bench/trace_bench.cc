// gpuscope trace's parser and analyses on the ~35 MB real trace (decompressed once into memory and a temp
// file): throughput in bytes of JSON per second on one core, for the bracket scanner alone, the parse
// alone (events dropped), and the whole file-to-report path. bench/trace_throughput.sh adds the
// multi-GB synthetic trace, peak RSS and the Python baseline.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "trace/json_structure_scanner.h"
#include "trace/trace_analyzer.h"
#include "trace/plain_event_decoder.h"
#include "trace/trace_event_decoder.h"
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

// The events of the real trace the analyses read (kernels, copies, runtime calls, annotations): 34,700
// of its 109,000, cut out with the scanner. The two decoders on each, one event at a time: from the
// bytes, and through simdjson On Demand (stage 1 and the walk), as the parser uses them.
const std::vector<std::string_view>& used_events() {
  static const std::vector<std::string_view> events = [] {
    std::vector<std::string_view> out;
    const std::string& json = control_json();
    const std::size_t array = json.find("\"traceEvents\"");
    if (array == std::string::npos) return out;
    const std::size_t open = json.find('[', array);
    JsonStructureScanner scanner;
    std::int64_t depth = 0;
    std::size_t start = 0;
    scanner.scan_top_level(json.data(), open + 1, json.size(), true, depth,
                           [&](JsonBracket b, JsonStructureScanner::Crossing c) {
                             if (c == JsonStructureScanner::Crossing::kUnmatchedClose) return true;
                             if (c == JsonStructureScanner::Crossing::kOpen) {
                               start = b.position;
                               return false;
                             }
                             const std::string_view event(json.data() + start, b.position + 1 - start);
                             const std::string_view lead = event.substr(0, 48);
                             if (lead.find("\"ph\": \"X\"") != std::string_view::npos &&
                                 lead.find("cpu_op") == std::string_view::npos &&
                                 lead.find("python_function") == std::string_view::npos) {
                               out.push_back(event);
                             }
                             return false;
                           });
    return out;
  }();
  return events;
}

std::int64_t used_event_bytes() {
  std::int64_t bytes = 0;
  for (auto e : used_events()) bytes += static_cast<std::int64_t>(e.size());
  return bytes;
}

void BM_TraceDecodePlain(benchmark::State& state) {
  const auto& events = used_events();
  TraceEvent event;
  PlainEventDecoder decoder;
  for (auto _ : state) {
    for (auto bytes : events) {
      auto outcome = decoder.decode(bytes, event);
      benchmark::DoNotOptimize(outcome);
      benchmark::DoNotOptimize(event.start_ns);
    }
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["events"] = static_cast<double>(events.size());
  state.counters["by_shape"] = static_cast<double>(decoder.counts().by_shape) / iterations;
  state.counters["declined"] = static_cast<double>(decoder.counts().declined) / iterations;
  state.counters["ns_per_event"] = benchmark::Counter(static_cast<double>(events.size()),
                                                      benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
  state.SetBytesProcessed(state.iterations() * used_event_bytes());
}
BENCHMARK(BM_TraceDecodePlain)->Unit(benchmark::kMillisecond);

void BM_TraceDecodeSimdjson(benchmark::State& state) {
  const auto& events = used_events();
  std::vector<simdjson::padded_string> padded(events.begin(), events.end());
  simdjson::ondemand::parser parser;
  TraceEvent event;
  for (auto _ : state) {
    for (auto& json : padded) {
      simdjson::ondemand::document doc;
      simdjson::ondemand::object object;
      if (parser.iterate(json).get(doc) || doc.get_object().get(object)) continue;
      auto outcome = decode_trace_event(object, {}, event);
      benchmark::DoNotOptimize(outcome);
    }
  }
  state.counters["ns_per_event"] = benchmark::Counter(static_cast<double>(events.size()),
                                                      benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
  state.SetBytesProcessed(state.iterations() * used_event_bytes());
}
BENCHMARK(BM_TraceDecodeSimdjson)->Unit(benchmark::kMillisecond);

}  // namespace
