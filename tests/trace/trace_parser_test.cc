// The streaming parser: structure found across window boundaries, the header read wherever it is, and
// every class of bad input reported with its byte offset (or skipped and counted with --lenient).
#include "trace/trace_parser.h"

#include <gtest/gtest.h>

#include <cctype>
#include <limits>
#include <optional>
#include <random>

#include "trace/json_structure_scanner.h"
#include "trace/trace_event_decoder.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::parse_text;

// Every scanner test runs twice: with the code chosen at run time (AVX2 on this machine) and with the
// portable code (SSE2 on x86-64) that CPUs without AVX2 run.
class JsonStructureScannerCode : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { avx2_ = JsonStructureScanner::use_avx2(GetParam()); }
  void TearDown() override { JsonStructureScanner::use_avx2(true); }
  bool avx2_ = false;
};

INSTANTIATE_TEST_SUITE_P(Scanner, JsonStructureScannerCode, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "RunTimeChoice" : "Portable"; });

TEST_P(JsonStructureScannerCode, UsesTheCodeAskedFor) {
#if defined(__x86_64__)
  const bool cpu_has_avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("popcnt");
#else
  const bool cpu_has_avx2 = false;
#endif
  EXPECT_EQ(avx2_, GetParam() && cpu_has_avx2);
}

TEST_P(JsonStructureScannerCode, IgnoresBracketsInsideStringsAndEscapedQuotes) {
  // 130 bytes: crosses two 64-byte blocks, with a string that spans a block boundary.
  std::string text = R"({"a": "x{[\"]}\\", "b": [1, {"c": "})" + std::string(80, ' ') + R"("}]})";
  JsonStructureScanner scanner;
  std::string found;
  scanner.scan(text.data(), 0, text.size(), true, [&](JsonBracket b) {
    found += b.byte;
    return false;
  });
  EXPECT_EQ(found, "{[{}]}");
}

TEST_P(JsonStructureScannerCode, CarriesStringStateAcrossCalls) {
  std::string text = "[\"" + std::string(62, '{') + std::string(64, '}') + "\"]" + std::string(62, ' ');
  JsonStructureScanner scanner;
  std::string found;
  auto visit = [&](JsonBracket b) {
    found += b.byte;
    return false;
  };
  const std::size_t stop = scanner.scan(text.data(), 0, 64, false, visit);
  EXPECT_EQ(stop, 64u);
  EXPECT_TRUE(scanner.inside_string());
  scanner.scan(text.data(), stop, text.size(), true, visit);
  EXPECT_EQ(found, "[]");
}

TEST_P(JsonStructureScannerCode, BackslashRunsAtABlockEdge) {
  // An even run of backslashes ending exactly at byte 63 escapes nothing; the quote after it closes.
  std::string text = "[\"" + std::string(60, 'a') + "\\\\" + "\"]";
  text.resize(192, ' ');
  JsonStructureScanner scanner;
  std::string found;
  scanner.scan(text.data(), 0, text.size(), true, [&](JsonBracket b) {
    found += b.byte;
    return false;
  });
  EXPECT_EQ(found, "[]");
}

// scan_top_level skips the blocks that stay inside a value; what it reports must be exactly the depth
// crossings a bracket-by-bracket walk finds, whatever the nesting, strings and block boundaries. The
// texts run to ~70 blocks, past the 16 classified per call, and the visitor sometimes stops the scan
// (as the parser does at the end of the events) and resumes where it stopped: the string state of the
// blocks classified beyond the stop must not leak into the rest.
TEST_P(JsonStructureScannerCode, TopLevelCrossingsMatchABracketByBracketWalk) {
  std::mt19937 random(7);
  const std::string pieces[] = {"{", "}", "[", "]", "\"{[}]\"", "\"\\\"{\"", ",", "  ", "\"ph\": \"X\"", "1.5", "\n"};
  for (int round = 0; round < 300; ++round) {
    std::string text = "[";
    int depth = 0;
    const int length = 20 + static_cast<int>(random() % 1500);
    for (int i = 0; i < length; ++i) {
      const std::string& piece = pieces[random() % std::size(pieces)];
      if ((piece == "}" || piece == "]") && depth == 0) continue;  // keep it inside the outer array
      depth += piece == "{" || piece == "[" ? 1 : piece == "}" || piece == "]" ? -1 : 0;
      text += piece;
    }
    text += std::string(static_cast<std::size_t>(depth), '}') + "]" + std::string(random() % 70, ' ');
    std::string expected;
    {
      JsonStructureScanner scanner;
      std::int64_t d = 0;
      scanner.scan(text.data(), 1, text.size(), true, [&](JsonBracket b) {
        const bool open = b.byte == '{' || b.byte == '[';
        if (open && d++ == 0) expected += "+" + std::to_string(b.position);
        if (!open && d == 0) expected += "!" + std::to_string(b.position);
        if (!open && d > 0 && --d == 0) expected += "-" + std::to_string(b.position);
        return false;
      });
    }
    // In pieces, so the depth and string state are carried from one call to the next as in the parser.
    std::string found;
    JsonStructureScanner scanner;
    std::int64_t d = 0;
    std::size_t at = 1;
    for (std::size_t end = 64; at < text.size(); end = std::min(text.size(), end + 64 + random() % 200)) {
      at = scanner.scan_top_level(text.data(), at, end, end == text.size(), d,
                                  [&](JsonBracket b, JsonStructureScanner::Crossing c) {
                                    using C = JsonStructureScanner::Crossing;
                                    found += (c == C::kOpen ? "+" : c == C::kClose ? "-" : "!") + std::to_string(b.position);
                                    return random() % 4 == 0;
                                  });
    }
    ASSERT_EQ(found, expected) << text;
    ASSERT_NE(expected.find('!'), std::string::npos);  // the outer array's ']' at depth 0
  }
}

TEST(MicrosecondsText, ExactNanoseconds) {
  EXPECT_EQ(microseconds_text_to_ns("1682725898082228"), 1682725898082228000);
  EXPECT_EQ(microseconds_text_to_ns("1682725898082228.5"), 1682725898082228500);
  EXPECT_EQ(microseconds_text_to_ns("12.3456"), 12345);
  EXPECT_EQ(microseconds_text_to_ns("-3.5"), -3500);
  EXPECT_EQ(microseconds_text_to_ns("3e2"), 300000);
  EXPECT_EQ(microseconds_text_to_ns("0"), 0);
  EXPECT_FALSE(microseconds_text_to_ns("x").has_value());
  EXPECT_FALSE(microseconds_text_to_ns("1.").has_value());
  EXPECT_FALSE(microseconds_text_to_ns("99999999999999999999").has_value());
  // The int64 edge: 9223372036854775.807 us is the largest number of nanoseconds there is.
  EXPECT_EQ(microseconds_text_to_ns("9223372036854775.807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(microseconds_text_to_ns("9223372036854775.808").has_value());
  EXPECT_FALSE(microseconds_text_to_ns("9223372036854776").has_value());
  EXPECT_EQ(microseconds_text_to_ns("-9223372036854775"), -9223372036854775000);
  // Whatever follows the number (the token's trailing whitespace, a comma) is not read.
  EXPECT_EQ(microseconds_text_to_ns("1661203463029566,\n"), 1661203463029566000);
  EXPECT_EQ(microseconds_text_to_ns("12345678x1"), 12345678000);
}

// Digits are read eight at a time where eight are there; against a digit-by-digit reference on random
// numbers of every length (leading zeros, a sign, fractions, a non-digit inside a group of eight).
TEST(MicrosecondsText, EightAtATimeMatchesDigitByDigit) {
  // Digit by digit, every step checked for int64 overflow.
  auto reference = [](const std::string& text) -> std::optional<std::int64_t> {
    std::size_t i = text.starts_with('-') ? 1 : 0;
    std::int64_t whole = 0;
    const std::size_t first = i;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      if (__builtin_mul_overflow(whole, 10, &whole) || __builtin_add_overflow(whole, text[i] - '0', &whole)) {
        return std::nullopt;
      }
    }
    if (i == first) return std::nullopt;
    std::int64_t ns = 0;
    if (__builtin_mul_overflow(whole, 1000, &ns)) return std::nullopt;
    if (i < text.size() && text[i] == '.') {
      const std::size_t f = ++i;
      for (int scale = 100; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, scale /= 10) {
        if (__builtin_add_overflow(ns, (text[i] - '0') * scale, &ns)) return std::nullopt;
      }
      if (i == f) return std::nullopt;
    }
    return text.starts_with('-') ? -ns : ns;
  };
  std::mt19937 random(11);
  for (int round = 0; round < 20000; ++round) {
    std::string text = random() % 4 == 0 ? "-" : "";
    const int digits = 1 + static_cast<int>(random() % 21);
    for (int d = 0; d < digits; ++d) text += static_cast<char>('0' + (d == 0 && random() % 2 ? 9 : random() % 10));
    if (random() % 3 == 0) {
      text += '.';
      for (int d = 1 + static_cast<int>(random() % 5); d > 0; --d) text += static_cast<char>('0' + random() % 10);
    }
    if (random() % 5 == 0) text[random() % text.size()] = "x.,/:"[random() % 5];
    if (random() % 2 == 0) text += ",\n  ";
    const auto expected = reference(text);
    const auto got = microseconds_text_to_ns(text);
    ASSERT_EQ(got.has_value(), expected.has_value()) << text;
    if (expected) {
      ASSERT_EQ(*got, *expected) << text;
    }
  }
}

TEST(TraceParser, ReadsHeaderBeforeOrAfterTheEventsAndCountsEvents) {
  auto parsed = parse_text(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2},
      {"ph": "M", "name": "process_name", "args": {"name": "x"}}],
      "deviceProperties": [{"id": 3, "name": "H100"}], "distributedInfo": {"rank": 7, "world_size": 16}, "x": [true, null]})");
  ASSERT_TRUE(parsed.summary.has_value()) << parsed.summary.error().what();
  EXPECT_EQ(parsed.timeline.header.rank, 7);
  EXPECT_EQ(parsed.timeline.header.world_size, 16);
  EXPECT_EQ(parsed.timeline.header.device_names.at(3), "H100");
  EXPECT_EQ(parsed.summary->event_objects, 2u);
  EXPECT_EQ(parsed.summary->complete_events, 1u);  // the cpu_op: the op attribution reads it
  EXPECT_EQ(parsed.summary->unparsed_events, 1u);  // the metadata event: no analysis reads it
}

TEST(TraceParser, UnusedEventsAreSkippedUnparsedUnlessAsked) {
  // A python_function with a string for its duration: not read by default, an error with
  // parse_unused_events. (cpu_op events are read now, for the op attribution: see CpuEvents.*.)
  const std::string json = R"({"traceEvents": [{"ph": "X", "dur": "x", "cat": "python_function", "name": "a", "ts": 1},
      {"ph": "f", "id": 1, "ts": "not checked"}, {"cat": "python_function", "ph": "X", "ts": 1, "dur": 1},
      {"name": "x", "ph": "X", "cat": "kernel", "ts": 1, "dur": 1},
      {"ph":"X","cat":"python_function","dur":-1}, {
        "ph": "X",
        "cat": "python_function", "dur": -1}, {"ph": "X", "cat": "cpu\u005fop", "ts": 1, "dur": 1}]})";
  auto fast = parse_text(json);
  ASSERT_TRUE(fast.summary.has_value()) << fast.summary.error().what();
  // The members' order and spacing do not matter. A category with an escape is parsed (and is then
  // "cpu\u005fop", no category an analysis knows).
  EXPECT_EQ(fast.summary->unparsed_events, 5u);
  EXPECT_EQ(fast.summary->complete_events, 2u);
  ParseOptions all;
  all.parse_unused_events = true;
  auto checked = parse_text(json, all);
  ASSERT_FALSE(checked.summary.has_value());
  EXPECT_EQ(checked.summary.error().kind, TraceErrorKind::kBadField);
  // An event whose first members are not recognisable is parsed.
  auto nested = parse_text(R"({"traceEvents": [{"args": {"ph": "M"}, "ph": "X", "cat": "kernel", "ts": 1, "dur": "x"}]})");
  ASSERT_FALSE(nested.summary.has_value());
  EXPECT_EQ(nested.summary.error().kind, TraceErrorKind::kBadField);
}

TEST(TraceParser, AcceptsTheBareArrayFormatAndEmptyTraces) {
  auto bare = parse_text(R"([{"ph": "X", "cat": "user_annotation", "name": "a", "ts": 1, "dur": 2}])");
  ASSERT_TRUE(bare.summary.has_value());
  EXPECT_EQ(bare.summary->complete_events, 1u);
  auto empty = parse_text("\xEF\xBB\xBF{\"traceEvents\": [ ]}\n");
  ASSERT_TRUE(empty.summary.has_value()) << empty.summary.error().what();
  EXPECT_EQ(empty.summary->event_objects, 0u);
}

TEST(TraceParser, StringsWithBracketsAndEscapesInEvents) {
  auto parsed = parse_text(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k<{]}\"\\>", "ts": 1, "dur": 2,
      "args": {"device": 0, "stream": 1, "correlation": 1, "grid": [1, {"x": "]"}]}}]})");
  ASSERT_TRUE(parsed.summary.has_value()) << parsed.summary.error().what();
  ASSERT_EQ(parsed.timeline.names.size(), 1u);
  EXPECT_EQ(parsed.timeline.names[0], "k<{]}\"\\>");
}

struct BadInput {
  const char* label;
  std::string json;
  TraceErrorKind kind;
  std::int64_t offset;  // -1: check only that one is given
};

void PrintTo(const BadInput& bad, std::ostream* os) { *os << bad.label; }

class TraceParserErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(TraceParserErrors, OneLineWithTheByteOffset) {
  const BadInput& bad = GetParam();
  for (const std::size_t window : {std::size_t{8} << 20, std::size_t{64}}) {
    ParseOptions options;
    options.window_bytes = window;
    auto parsed = parse_text(bad.json, options);
    ASSERT_FALSE(parsed.summary.has_value()) << bad.label;
    const TraceError& e = parsed.summary.error();
    EXPECT_EQ(e.kind, bad.kind) << bad.label << ": " << e.what();
    if (bad.offset >= 0) {
      EXPECT_EQ(e.byte_offset, bad.offset) << bad.label << ": " << e.what();
    } else {
      EXPECT_GE(e.byte_offset, 0) << bad.label << ": " << e.what();
    }
    EXPECT_NE(e.what().find(" at byte "), std::string::npos) << e.what();
    EXPECT_EQ(e.what().find('\n'), std::string::npos) << e.what();
  }
}

const std::string kEvent = R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"device": 0, "stream": 7}})";

INSTANTIATE_TEST_SUITE_P(
    Classes, TraceParserErrors,
    ::testing::Values(
        BadInput{"truncated inside an event", R"({"traceEvents": [{"ph": "X", "ts": 1)", TraceErrorKind::kTruncated, 36},
        BadInput{"truncated after an event", R"({"traceEvents": [)" + kEvent, TraceErrorKind::kTruncated,
                 static_cast<std::int64_t>(17 + kEvent.size())},
        BadInput{"truncated in the header", R"({"distributedInfo": {"rank": )", TraceErrorKind::kTruncated, 29},
        BadInput{"empty", "", TraceErrorKind::kTruncated, 0},
        BadInput{"not JSON", "hello world", TraceErrorKind::kNotJson, 0},
        BadInput{"binary", std::string("\x00\x01\x02", 3), TraceErrorKind::kNotJson, 0},
        BadInput{"broken event", R"({"traceEvents": [{"ph": "X", "ts": 1,, "dur": 2}]})", TraceErrorKind::kNotJson, -1},
        BadInput{"missing comma", R"({"traceEvents": [{"ph": "M"} {"ph": "M"}]})", TraceErrorKind::kNotJson, 29},
        BadInput{"trailing comma", R"({"traceEvents": [{"ph": "M"},]})", TraceErrorKind::kNotJson, 28},
        BadInput{"bytes after the trace", R"({"traceEvents": []} x)", TraceErrorKind::kNotJson, 20},
        BadInput{"no traceEvents", R"({"schemaVersion": 1})", TraceErrorKind::kNotATrace, 19},
        BadInput{"traceEvents not an array", R"({"traceEvents": {"a": 1}})", TraceErrorKind::kNotATrace, 16},
        BadInput{"element not an object", R"({"traceEvents": [1, {"ph": "M"}]})", TraceErrorKind::kNotATrace, 17},
        BadInput{"element an array", R"({"traceEvents": [{"ph": "M"}, [1]]})", TraceErrorKind::kNotATrace, 30},
        BadInput{"a JSON number", "42", TraceErrorKind::kNotATrace, 0},
        BadInput{"ts a string", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "12", "dur": 2}]})",
                 TraceErrorKind::kBadField, 52},
        BadInput{"dur null", R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "ts": 1, "dur": null}]})", TraceErrorKind::kBadField, 71},
        BadInput{"stream a string", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "args": {"stream": "7"}}]})",
                 TraceErrorKind::kBadField, 84},
        BadInput{"ph a number", R"({"traceEvents": [{"ph": 1}]})", TraceErrorKind::kBadField, -1},
        BadInput{"negative duration", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": -5}]})",
                 TraceErrorKind::kBadValue, 62},
        BadInput{"complete event without ts", R"({"traceEvents": [{"ph": "X", "dur": 5}]})", TraceErrorKind::kBadField, -1},
        // Not numbers, though they start like one (simdjson hands the bytes up to the next comma over).
        BadInput{"letters after ts", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 12a, "dur": 2}]})",
                 TraceErrorKind::kNotJson, 52},
        BadInput{"two points in dur", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1.2.3}]})",
                 TraceErrorKind::kNotJson, 62},
        BadInput{"letters after a device", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "args": {"device": 3x}}]})",
                 TraceErrorKind::kNotJson, 84}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      std::string name = info.param.label;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(TraceParser, TruncatedGzipIsAnErrorWithTheJsonOffset) {
  std::string json = R"({"traceEvents": [)";
  for (int i = 0; i < 2000; ++i) json += kEvent + ",";
  json += kEvent + "]}";
  const std::string gz = testing::gzip_text(json);
  const std::string cut = gz.substr(0, gz.size() / 2);
  auto reader = TraceByteReader::from_memory(cut.data(), cut.size());
  RankTimeline timeline;
  const std::regex pattern("DataLoader");
  TimelineBuilder builder(timeline, pattern);
  auto summary = parse_trace(reader, builder, timeline.header, {});
  ASSERT_FALSE(summary.has_value());
  EXPECT_EQ(summary.error().kind, TraceErrorKind::kTruncated);
  EXPECT_GT(summary.error().byte_offset, 0);

  // Lenient: every whole event before the cut is kept.
  auto lenient_reader = TraceByteReader::from_memory(cut.data(), cut.size());
  RankTimeline kept;
  TimelineBuilder kept_builder(kept, pattern);
  ParseOptions lenient;
  lenient.lenient = true;
  auto partial = parse_trace(lenient_reader, kept_builder, kept.header, lenient);
  ASSERT_TRUE(partial.has_value()) << partial.error().what();
  EXPECT_TRUE(partial->truncated);
  EXPECT_GT(kept.activities.size(), 100u);
  EXPECT_LT(kept.activities.size(), 2001u);
}

TEST(TraceParser, DamagedGzipIsNotJson) {
  std::string gz = testing::gzip_text(R"({"traceEvents": []})");
  gz[12] = static_cast<char>(gz[12] ^ 0x55);
  gz[13] = static_cast<char>(gz[13] ^ 0x55);
  auto reader = TraceByteReader::from_memory(gz.data(), gz.size());
  RankTimeline timeline;
  const std::regex pattern("DataLoader");
  TimelineBuilder builder(timeline, pattern);
  auto summary = parse_trace(reader, builder, timeline.header, {});
  ASSERT_FALSE(summary.has_value());
  EXPECT_TRUE(summary.error().kind == TraceErrorKind::kNotJson || summary.error().kind == TraceErrorKind::kTruncated)
      << summary.error().what();
}

TEST(TraceParser, LenientSkipsBadEventsAndCountsThem) {
  const std::string json = std::string(R"({"traceEvents": [)") + kEvent + "," +
                           R"({"ph": "X", "cat": "kernel", "ts": "bad", "dur": 2},)" + kEvent + "," +
                           R"({"ph": "X", "cat": "kernel", "ts": 1, "dur": -2},)" + R"(17, )" + kEvent + "," +
                           R"({"ph": "X", "ts": 1,, "dur": 2},)" + kEvent + "]}";
  ParseOptions options;
  options.lenient = true;
  for (const std::size_t window : {std::size_t{8} << 20, std::size_t{64}}) {
    options.window_bytes = window;
    auto parsed = parse_text(json, options);
    ASSERT_TRUE(parsed.summary.has_value()) << parsed.summary.error().what();
    EXPECT_EQ(parsed.timeline.activities.size(), 4u);
    EXPECT_EQ(parsed.summary->skipped_events, 4u);
    EXPECT_GT(parsed.summary->skipped_bytes, 0u);
    EXPECT_FALSE(parsed.summary->truncated);
    ASSERT_FALSE(parsed.summary->problems.empty());
    EXPECT_NE(parsed.summary->problems[0].find("at byte"), std::string::npos);
  }
}

TEST(TraceParser, LenientTruncatedPlainText) {
  const std::string json = std::string(R"({"traceEvents": [)") + kEvent + "," + kEvent + "," + kEvent.substr(0, 30);
  ParseOptions options;
  options.lenient = true;
  auto parsed = parse_text(json, options);
  ASSERT_TRUE(parsed.summary.has_value());
  EXPECT_TRUE(parsed.summary->truncated);
  EXPECT_EQ(parsed.timeline.activities.size(), 2u);
  EXPECT_EQ(parsed.summary->skipped_bytes, 31u);  // the "," before the cut event and its 30 bytes
}

TEST(TraceParser, LargeEventGrowsTheWindow) {
  const std::string big_name(5000, 'n');
  const std::string json = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")" + big_name +
                           R"(", "ts": 1, "dur": 2, "args": {"device": 0, "stream": 7}}]})";
  ParseOptions options;
  options.window_bytes = 64;
  auto parsed = parse_text(json, options);
  ASSERT_TRUE(parsed.summary.has_value()) << parsed.summary.error().what();
  ASSERT_EQ(parsed.timeline.names.size(), 1u);
  EXPECT_EQ(parsed.timeline.names[0].size(), 5000u);
}

}  // namespace
}  // namespace gpuscope::trace
