// libFuzzer entry point for the trace parser: any bytes, strict and lenient, must end in a report or a
// TraceError, never a crash, a hang or a sanitizer finding. Built with clang's -fsanitize=fuzzer it
// fuzzes; here (g++) fuzz_replay_main.cc drives it over the corpus and mutations of it.
#include <cstddef>
#include <cstdint>
#include <regex>

#include "trace/rank_analysis.h"
#include "trace/rank_timeline.h"
#include "trace/trace_byte_reader.h"
#include "trace/trace_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuscope::trace;
  static const std::regex kPattern("DataLoader");
  for (const bool lenient : {false, true}) {
    auto reader = TraceByteReader::from_memory(reinterpret_cast<const char*>(data), size);
    RankTimeline timeline;
    TimelineBuilder builder(timeline, kPattern);
    ParseOptions options;
    options.lenient = lenient;
    options.python_functions = lenient;
    options.parse_unused_events = !lenient;
    auto summary = parse_trace(reader, builder, timeline.header, options);
    if (summary) {
      RankReport report = analyze_rank(timeline, AnalysisOptions{});
      (void)report;
    } else if (summary.error().what().empty()) {
      __builtin_trap();  // every error must say something
    }
  }
  return 0;
}
