// The plain decoder against simdjson's: on every event of the real traces, on hand-written edge cases and
// on thousands of mutated events, read member by member and by a learned shape, it must decode exactly
// what decode_trace_event decodes, or decline. It may never accept what decode_trace_event reports.
#include "trace/plain_event_decoder.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "trace/json_structure_scanner.h"
#include "trace/trace_byte_reader.h"
#include "trace/trace_event_decoder.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

// decode_trace_event on one event: the outcome, or nullopt for an error (or JSON simdjson rejects).
struct Reference {
  std::optional<DecodeOutcome> outcome;
  TraceEvent event;
  std::string name;  // event.name points into simdjson's buffers
};

Reference simdjson_decode(std::string_view bytes, const DecodeOptions& options = {}) {
  static simdjson::ondemand::parser parser;
  Reference ref;
  simdjson::padded_string padded(bytes);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(object)) return ref;
  auto outcome = decode_trace_event(object, options, ref.event);
  if (outcome) {
    ref.outcome = *outcome;
    ref.name = std::string(ref.event.name);
  }
  return ref;
}

// Empty when the plain decoder's answer agrees with simdjson's (or it declined where simdjson decoded),
// else what differs.
std::string disagreement(const std::optional<DecodeOutcome>& plain, const TraceEvent& event, const Reference& ref) {
  if (!plain) return "";
  if (!ref.outcome) return "accepted an event decode_trace_event reports";
  if (*plain != *ref.outcome) return "another outcome";
  if (*plain == DecodeOutcome::kIgnored) return "";
  const TraceEvent& e = ref.event;
  if (event.category != e.category) return "category";
  if (event.name != ref.name) return "name '" + std::string(event.name) + "' vs '" + ref.name + "'";
  if (event.start_ns != e.start_ns) return "ts";
  if (event.duration_ns != e.duration_ns) return "dur";
  if (event.device != e.device) return "device";
  if (event.stream != e.stream) return "stream";
  if (event.correlation != e.correlation) return "correlation";
  if (event.tid != e.tid) return "tid";
  if (event.bytes != e.bytes) return "bytes";
  return "";
}

// The elements of a trace's traceEvents array, cut out with the scanner.
std::vector<std::string_view> events_of(const std::string& json) {
  std::vector<std::string_view> out;
  const std::size_t array = json.find("\"traceEvents\"");
  if (array == std::string::npos) return out;
  JsonStructureScanner scanner;
  std::int64_t depth = 0;
  std::size_t start = 0;
  scanner.scan_top_level(json.data(), json.find('[', array) + 1, json.size(), true, depth,
                         [&](JsonBracket b, JsonStructureScanner::Crossing c) {
                           if (c == JsonStructureScanner::Crossing::kUnmatchedClose) return true;
                           if (c == JsonStructureScanner::Crossing::kOpen) {
                             start = b.position;
                           } else {
                             out.emplace_back(json.data() + start, b.position + 1 - start);
                           }
                           return false;
                         });
  return out;
}

std::string json_of(const std::string& path) {
  auto reader = TraceByteReader::open(path);
  if (!reader) return {};
  return testing::read_all(*reader).value_or(std::string());
}

TEST(PlainEventDecoder, EveryEventOfTheRealTracesAsSimdjsonDecodesIt) {
  for (const char* name : {"trace_diff__control__control.json.gz", "trace_filter__sampled_rank-0.json.gz",
                           "trace_filter__sampled_rank-1.json.gz"}) {
    const std::string json = json_of(testing::conformance_trace(name));
    ASSERT_FALSE(json.empty()) << name;
    const auto events = events_of(json);
    ASSERT_GT(events.size(), 1000u) << name;
    // All events through one decoder; those the parser hands on (it skips cpu_op, python_function,
    // flow and metadata events unread) through another, as in a parse.
    PlainEventDecoder all, analysed;
    std::size_t kernels = 0, handed_on = 0;
    for (std::string_view bytes : events) {
      TraceEvent event;
      const auto plain = all.decode(bytes, event);
      const Reference ref = simdjson_decode(bytes);
      ASSERT_TRUE(ref.outcome.has_value()) << bytes;
      ASSERT_TRUE(plain.has_value()) << "declined: " << bytes;
      ASSERT_EQ(disagreement(plain, event, ref), "") << bytes;
      kernels += *plain == DecodeOutcome::kEvent && event.category == EventCategory::kKernel;
      if (*ref.outcome == DecodeOutcome::kEvent && ref.event.category != EventCategory::kCpuOp) {
        ++handed_on;
        ASSERT_EQ(disagreement(analysed.decode(bytes, event), event, ref), "") << bytes;
      }
    }
    EXPECT_GT(kernels, 100u) << name;
    EXPECT_EQ(all.counts().declined, 0u) << name;
    // A handful of shapes covers what the analyses read: almost every event is read by comparing with one.
    EXPECT_EQ(analysed.counts().declined, 0u) << name;
    EXPECT_LT(analysed.counts().shapes_learned, 40u) << name;
    EXPECT_GT(analysed.counts().by_shape, handed_on * 95 / 100) << name;
  }
}

TEST(PlainEventDecoder, LearnsAShapeAndReadsTheNextEventsByIt) {
  const std::string first = R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 1, "tid": 7,
    "ts": 1661203463029566, "dur": 7,
    "args": {"External id": 5, "device": 3, "stream": 7, "correlation": 1869557, "grid": [64, 1, 1], "ok": true}})";
  const std::string second = R"({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 1, "tid": 7,
    "ts": 1661203463029999.5, "dur": 0.25,
    "args": {"External id": 6, "device": 2, "stream": 21, "correlation": 1869600, "grid": [1, 12, 1], "ok": true}})";
  PlainEventDecoder decoder;
  TraceEvent event;
  ASSERT_EQ(decoder.decode(first, event), DecodeOutcome::kEvent);
  EXPECT_EQ(decoder.counts().by_reader, 1u);
  EXPECT_EQ(decoder.counts().shapes_learned, 1u);
  ASSERT_EQ(decoder.decode(second, event), DecodeOutcome::kEvent);
  EXPECT_EQ(decoder.counts().by_shape, 1u);
  EXPECT_EQ(event.category, EventCategory::kKernel);
  EXPECT_EQ(event.name, "ncclKernel_AllReduce");
  EXPECT_EQ(event.start_ns, 1661203463029999500);
  EXPECT_EQ(event.duration_ns, 250);
  EXPECT_EQ(event.device, 2);
  EXPECT_EQ(event.stream, 21);
  EXPECT_EQ(event.correlation, 1869600);
  EXPECT_EQ(event.bytes, -1);
  // The same keys with "ok": false, or one more member: not that shape, read member by member.
  std::string other = second;
  other.replace(other.find("true"), 4, "false");
  ASSERT_EQ(decoder.decode(other, event), DecodeOutcome::kEvent);
  EXPECT_EQ(decoder.counts().by_shape, 1u);
  EXPECT_EQ(decoder.counts().by_reader, 2u);
  EXPECT_EQ(event.correlation, 1869600);
}

// Each case: the plain decoder's answer, by the reader and (after a same-shaped event taught it the
// shape) by the shape, is simdjson's or a decline, as stated.
struct EdgeCase {
  const char* label;
  std::string json;
  bool declined;
};

void PrintTo(const EdgeCase& c, std::ostream* os) { *os << c.label; }

class PlainEventDecoderEdges : public ::testing::TestWithParam<EdgeCase> {};

TEST_P(PlainEventDecoderEdges, AgreesWithSimdjsonOrDeclines) {
  const EdgeCase& c = GetParam();
  const Reference ref = simdjson_decode(c.json);
  TraceEvent event;
  PlainEventDecoder fresh;
  const auto plain = fresh.decode(c.json, event);
  EXPECT_EQ(!plain.has_value(), c.declined) << c.json;
  EXPECT_EQ(disagreement(plain, event, ref), "") << c.json;
}

const EdgeCase kEdgeCases[] = {
    {"kernel", R"({"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"args":{"device":0,"stream":7,"correlation":9}})", false},
    {"runtime call: name not kept", R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 2, "args": {"correlation": 4}})", false},
    {"name before cat, cleared", R"({"name": "cudaLaunchKernel", "ph": "X", "cat": "cuda_runtime", "ts": 1, "dur": 2})", false},
    {"args before cat: every member read", R"({"args": {"device": 1, "bytes": 1.0e6, "stream": 2}, "ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 1, "dur": 2})", false},
    {"duplicate ts: the last", R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "ts": 5})", false},
    {"duplicate args member: the first", R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "args": {"device": 1, "device": "x"}})", false},
    {"phase not X", R"({"ph": "i", "cat": "kernel", "ts": "not read"})", false},
    {"python_function ignored", R"({"ph": "X", "cat": "python_function", "name": "f", "ts": 1, "dur": -3})", false},
    {"empty object", "{}", false},
    {"whitespace everywhere", "{ \t\r\n\"ph\" :\n\"X\" , \"cat\":\"kernel\",\"ts\" : 1.5e1 , \"dur\":-0 }", false},
    {"literals and nesting skipped", R"({"ph":"X","cat":"kernel","ts":1,"dur":1,"x":[null,true,false,{"a":[[],{}]}],"y":"\/\n"})", false},
    {"escape in the name", R"({"ph": "X", "cat": "kernel", "name": "a\"b", "ts": 1, "dur": 2})", true},
    {"unicode escape", R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "x": "\u00e9"})", true},
    {"non-ASCII", "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\xc3\xa9\", \"ts\": 1, \"dur\": 2}", true},
    {"invalid UTF-8", "{\"ph\": \"X\", \"cat\": \"kernel\", \"x\": \"\xff\", \"ts\": 1, \"dur\": 2}", true},
    {"control character in a string", "{\"ph\": \"X\", \"cat\": \"kernel\", \"x\": \"a\tb\", \"ts\": 1, \"dur\": 2}", true},
    {"negative duration", R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": -2})", true},
    {"ts a string", R"({"ph": "X", "cat": "kernel", "ts": "1", "dur": 2})", true},
    {"no dur", R"({"ph": "X", "cat": "kernel", "ts": 1})", true},
    {"leading zero", R"({"ph": "X", "cat": "kernel", "ts": 01, "dur": 2})", true},
    {"letters after a number", R"({"ph": "X", "cat": "kernel", "ts": 12a, "dur": 2})", true},
    {"device not a number", R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "args": {"device": "0"}})", true},
    {"args not an object", R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "args": []})", true},
    {"number out of range", R"({"ph": "X", "cat": "kernel", "ts": 1e999, "dur": 2})", true},
    {"missing comma", R"({"ph": "X" "cat": "kernel", "ts": 1, "dur": 2})", true},
    {"trailing comma", R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": 2,})", true},
    {"bracket kinds crossed", R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "x": [1}]})", true},
    {"too deep", R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "x": )" + std::string(40, '[') + std::string(40, ']') + "}", true},
    {"not an object", R"([1, 2])", true},
};

INSTANTIATE_TEST_SUITE_P(Cases, PlainEventDecoderEdges, ::testing::ValuesIn(kEdgeCases));

// Thousands of mutants of real-looking events (bytes flipped, JSON punctuation and tokens inserted,
// pieces cut or repeated): whatever the plain decoder accepts, by the reader or by a shape it learned from
// the unmutated event, decode_trace_event decodes to the same event.
TEST(PlainEventDecoder, MutatedEventsAgreeWithSimdjsonOrAreDeclined) {
  const std::string templates[] = {
      R"({
    "ph": "X", "cat": "kernel", "name": "void at::native::{lambda(float)#1}<4>", "pid": 3, "tid": 7,
    "ts": 1661203463029566, "dur": 7,
    "args": {
      "External id": 1869557,
      "queued": 0, "device": 3, "context": 1,
      "stream": 7, "correlation": 1869557,
      "blocks per SM": 0.5925926,
      "grid": [64, 1, 1],
      "est. achieved occupancy %": 4
    }
  })",
      R"({
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 3113936, "tid": 3126441,
    "ts": 1661203463029548, "dur": 1,
    "args": {
      "External id": 1869554,
      "cbid": 251, "correlation": 1869554
    }
  })",
      R"json({"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":12.5,"dur":3,"args":{"device":0,"stream":7,"correlation":88,"bytes":4096,"memory bandwidth (GB/s)":1.5}})json",
      R"({"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "ts": 5, "dur": 120,
    "args": {"Trace name": "PyTorch Profiler", "Input Dims": [[], [3, 224]], "Call stack": ""}})",
  };
  static constexpr std::string_view kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "\\", " ", "\n", "-", ".", "e",
                                                 "0", "7", "1e400", "null", "true", "\"ts\": 3", "\"dur\": -5",
                                                 "\"ts\":\"x\"", "\"args\":[]", "\\u0041", "\xc3\xa9", "\xff", "\x01"};
  std::mt19937_64 rng(2026);
  int accepted_mutants = 0;
  for (int round = 0; round < 20000; ++round) {
    const std::string& original = templates[rng() % std::size(templates)];
    std::string s = original;
    for (int edit = 1 + static_cast<int>(rng() % 3); edit > 0; --edit) {
      const std::size_t at = rng() % (s.size() + 1);
      switch (rng() % 4) {
        case 0:
          if (at < s.size()) s[at] = static_cast<char>(s[at] ^ (1u << (rng() % 8)));
          break;
        case 1: s.insert(at, kTokens[rng() % std::size(kTokens)]); break;
        case 2:
          if (at < s.size()) s.erase(at, 1 + rng() % 8);
          break;
        default:
          if (at < s.size()) s.insert(at, s.substr(at, 1 + rng() % 24));
          break;
      }
    }
    const Reference ref = simdjson_decode(s);
    TraceEvent event;
    PlainEventDecoder fresh;
    const auto by_reader = fresh.decode(s, event);
    ASSERT_EQ(disagreement(by_reader, event, ref), "") << "reader on: " << s;
    PlainEventDecoder taught;
    TraceEvent ignored;
    taught.decode(original, ignored);
    const auto by_shape = taught.decode(s, event);
    ASSERT_EQ(disagreement(by_shape, event, ref), "") << "shape path on: " << s;
    accepted_mutants += by_shape.has_value() && taught.counts().by_shape == 1;
  }
  // Mutants inside a value (a digit changed, a string longer) still have the learned shape.
  EXPECT_GT(accepted_mutants, 500);
}

}  // namespace
}  // namespace gpuscope::trace
