// libFuzzer entry point for the trace parser: any bytes, strict and lenient, must end in a report or a
// TraceError, never a crash, a hang or a sanitizer finding; and the parse with the plain event decoder
// must give exactly the answer of the parse that sends every event through simdjson (the same report,
// or the same error at the same byte). Built with clang's -fsanitize=fuzzer it fuzzes; here (g++)
// fuzz_replay_main.cc drives it over the corpus and mutations of it.
#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>

#include "trace/rank_analysis.h"
#include "trace/rank_timeline.h"
#include "trace/trace_byte_reader.h"
#include "trace/trace_parser.h"
#include "trace/trace_report_json.h"

namespace {

using namespace gpuscope::trace;

// The parse and analysis of `data` as one string: the report as JSON with the parse's counts, or the
// error.
std::string parse_and_analyse(const std::uint8_t* data, std::size_t size, ParseOptions options) {
  static const std::regex kPattern("DataLoader");
  auto reader = TraceByteReader::from_memory(reinterpret_cast<const char*>(data), size);
  RankTimeline timeline;
  TimelineBuilder builder(timeline, kPattern);
  auto summary = parse_trace(reader, builder, timeline.header, options);
  if (!summary) {
    if (summary.error().what().empty()) __builtin_trap();  // every error must say something
    return "error: " + summary.error().what();
  }
  TraceReport report;
  report.ranks.push_back(analyze_rank(timeline, AnalysisOptions{}));
  std::string out = trace_report_json(report).dump();
  for (auto n : {summary->event_objects, summary->complete_events, summary->unparsed_events, summary->skipped_events,
                 summary->skipped_bytes}) {
    out += " " + std::to_string(n);
  }
  for (const auto& problem : summary->problems) out += "\n" + problem;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const bool lenient : {false, true}) {
    ParseOptions options;
    options.lenient = lenient;
    options.python_functions = lenient;
    options.parse_unused_events = !lenient;
    const std::string plain = parse_and_analyse(data, size, options);
    options.plain_decoder = false;
    if (parse_and_analyse(data, size, options) != plain) __builtin_trap();
  }
  return 0;
}
