// Training events as clients/README.md specifies them: every field of each kind, and each reason an
// event is turned away, with the field the message names.
#include "analysis/training_event.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace gpuscope::analysis {
namespace training_event_test {

// Parses `line` and expects it turned away for `reason`, with a message that starts with `field`.
void expect_rejected(std::string_view line, EventRejectReason reason, std::string_view field) {
  TrainingEventParser parser;
  const auto event = parser.parse(line);
  ASSERT_FALSE(event.has_value()) << "accepted: " << line;
  EXPECT_EQ(reject_reason_id(event.error().reason), reject_reason_id(reason)) << line << ": " << event.error().message;
  EXPECT_THAT(event.error().message, ::testing::StartsWith(field)) << line;
  EXPECT_EQ(event.error().message.find('\n'), std::string::npos) << "one line";
}

void expect_invalid(std::string_view line, std::string_view field) {
  expect_rejected(line, EventRejectReason::kInvalid, std::string(field) + ":");
}

TrainingEvent parse_ok(std::string_view line) {
  TrainingEventParser parser;
  auto event = parser.parse(line);
  EXPECT_TRUE(event.has_value()) << line << ": " << (event ? "" : event.error().message);
  return event.value_or(TrainingEvent{});
}

constexpr std::string_view kStep = R"("event":"step","job":"j","step":1,"duration_s":0.5)";

std::string step_with(std::string_view more) { return fmt::format("{{{},{}}}", kStep, more); }

TEST(TrainingEvent, StepWithEveryField) {
  const auto e = parse_ok(
      R"({"event":"step","job":"llama-ft","rank":3,"world_size":4,"local_rank":1,"pid":4242,"gpu":3,)"
      R"("time":1700000000.25,"step":120,"duration_s":0.512,"loss":2.31,"scalars":{"lr":0.0003,"grad_norm_2":1.5}})");
  EXPECT_EQ(e.kind, TrainingEventKind::kStep);
  EXPECT_EQ(e.job, "llama-ft");
  EXPECT_EQ(e.rank, 3U);
  EXPECT_EQ(e.world_size, 4U);
  EXPECT_EQ(e.local_rank, 1U);
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(e.gpu, "3");
  ASSERT_TRUE(e.time_s.has_value());
  EXPECT_DOUBLE_EQ(*e.time_s, 1700000000.25);
  EXPECT_EQ(e.step, 120U);
  EXPECT_DOUBLE_EQ(e.duration_s, 0.512);
  ASSERT_TRUE(e.loss.has_value());
  EXPECT_DOUBLE_EQ(*e.loss, 2.31);
  const std::vector<std::pair<std::string, double>> scalars{{"lr", 0.0003}, {"grad_norm_2", 1.5}};
  EXPECT_EQ(e.scalars, scalars);
  EXPECT_FALSE(e.allocated_bytes.has_value());
}

TEST(TrainingEvent, EpochStartWithEveryField) {
  const auto e = parse_ok(
      R"({"event":"epoch_start","job":"j","rank":1,"world_size":2,"local_rank":1,"pid":7,"gpu":"GPU-1b2c-44",)"
      R"("time":1700000001,"epoch":2,"allocated_bytes":21474836480,"reserved_bytes":32212254720,)"
      R"("peak_allocated_bytes":30064771072})");
  EXPECT_EQ(e.kind, TrainingEventKind::kEpochStart);
  EXPECT_EQ(e.job, "j");
  EXPECT_EQ(e.rank, 1U);
  EXPECT_EQ(e.world_size, 2U);
  EXPECT_EQ(e.local_rank, 1U);
  EXPECT_EQ(e.pid, 7);
  EXPECT_EQ(e.gpu, "GPU-1b2c-44");
  EXPECT_EQ(e.time_s, 1700000001.0);
  EXPECT_EQ(e.epoch, 2U);
  EXPECT_EQ(e.allocated_bytes, 21474836480.0);
  EXPECT_EQ(e.reserved_bytes, 32212254720.0);
  EXPECT_EQ(e.peak_allocated_bytes, 30064771072.0);
  EXPECT_FALSE(e.loss.has_value());
}

TEST(TrainingEvent, EpochEndWithEveryField) {
  const auto e = parse_ok(
      R"({"event":"epoch_end","job":"llama-ft","rank":3,"world_size":4,"local_rank":3,"pid":99,"gpu":0,)"
      R"("time":1700000002.5,"epoch":0,"loss":2.05,"allocated_bytes":1,"reserved_bytes":0,"peak_allocated_bytes":3.5})");
  EXPECT_EQ(e.kind, TrainingEventKind::kEpochEnd);
  EXPECT_EQ(e.job, "llama-ft");
  EXPECT_EQ(e.rank, 3U);
  EXPECT_EQ(e.gpu, "0");
  EXPECT_EQ(e.epoch, 0U);
  EXPECT_EQ(e.loss, 2.05);
  EXPECT_EQ(e.allocated_bytes, 1.0);
  EXPECT_EQ(e.reserved_bytes, 0.0);
  EXPECT_EQ(e.peak_allocated_bytes, 3.5);
}

TEST(TrainingEvent, DefaultsForOptionalFields) {
  const auto e = parse_ok(fmt::format("{{{}}}", kStep));
  EXPECT_EQ(e.rank, 0U);
  EXPECT_FALSE(e.world_size.has_value());
  EXPECT_FALSE(e.local_rank.has_value());
  EXPECT_FALSE(e.pid.has_value());
  EXPECT_FALSE(e.gpu.has_value());
  EXPECT_FALSE(e.time_s.has_value());
  EXPECT_FALSE(e.loss.has_value());
  EXPECT_TRUE(e.scalars.empty());
}

TEST(TrainingEvent, UnknownFieldsAreIgnored) {
  const auto e = parse_ok(
      R"({"host":"n1","event":"step","nested":{"a":[1,{"b":null}],"c":"}"},"job":"j","step":5,"list":[1,2,3],)"
      R"("duration_s":1,"flag":true,"rank":2})");
  EXPECT_EQ(e.job, "j");
  EXPECT_EQ(e.step, 5U);
  EXPECT_EQ(e.rank, 2U);
  EXPECT_DOUBLE_EQ(e.duration_s, 1);
}

TEST(TrainingEvent, NullIsAbsent) {
  const auto e = parse_ok(step_with(
      R"("rank":null,"world_size":null,"local_rank":null,"pid":null,"gpu":null,"time":null,"loss":null,)"
      R"("scalars":null,"allocated_bytes":null)"));
  EXPECT_EQ(e.rank, 0U);
  EXPECT_FALSE(e.world_size.has_value());
  EXPECT_FALSE(e.local_rank.has_value());
  EXPECT_FALSE(e.pid.has_value());
  EXPECT_FALSE(e.gpu.has_value());
  EXPECT_FALSE(e.time_s.has_value());
  EXPECT_FALSE(e.loss.has_value());
  EXPECT_TRUE(e.scalars.empty());
  EXPECT_FALSE(e.allocated_bytes.has_value());
  // A required field sent as null is missing.
  expect_invalid(R"({"event":"step","job":"j","step":null,"duration_s":1})", "step");
  expect_invalid(R"({"event":null,"job":"j","step":1,"duration_s":1})", "event");
  expect_invalid(R"({"event":"step","job":null,"step":1,"duration_s":1})", "job");
}

TEST(TrainingEvent, WholeNumberDoublesAreAccepted) {
  const auto e = parse_ok(R"({"event":"step","job":"j","rank":3.0,"world_size":4.0,"step":7.0,"duration_s":1,"pid":12.0,"gpu":1.0})");
  EXPECT_EQ(e.rank, 3U);
  EXPECT_EQ(e.world_size, 4U);
  EXPECT_EQ(e.step, 7U);
  EXPECT_EQ(e.pid, 12);
  EXPECT_EQ(e.gpu, "1");
  expect_invalid(step_with(R"("rank":3.5)"), "rank");
}

TEST(TrainingEvent, EscapedJobNamesAreUnescaped) {
  const auto e = parse_ok(R"({"event":"step","job":"r\u00e9sum\u00e9 \"v2\"\/a","step":1,"duration_s":1})");
  EXPECT_EQ(e.job, "r\xc3\xa9sum\xc3\xa9 \"v2\"/a");
  // Escaped keys are read as their text.
  const auto k = parse_ok(R"({"event":"step","j\u006fb":"k","step":1,"duration_s":1})");
  EXPECT_EQ(k.job, "k");
}

TEST(TrainingEvent, MalformedLines) {
  expect_rejected("not json", EventRejectReason::kMalformed, "not");
  expect_rejected("", EventRejectReason::kMalformed, "not");
  expect_rejected("[1,2,3]", EventRejectReason::kMalformed, "not");
  expect_rejected(R"("step")", EventRejectReason::kMalformed, "not");
  expect_rejected("42", EventRejectReason::kMalformed, "not");
  expect_rejected(R"({"event":"step" "job":"j"})", EventRejectReason::kMalformed, "not");
  expect_rejected(R"({"event":"step","job":"j)", EventRejectReason::kMalformed, "not");
}

TEST(TrainingEvent, BrokenValuesAreTurnedAway) {
  // On Demand reads a value only when its field is read: a known field's broken value shows as that
  // field's wrong type.
  TrainingEventParser parser;
  const auto e = parser.parse(R"({"event":"step","job":})");
  ASSERT_FALSE(e.has_value());
  EXPECT_THAT(e.error().message, ::testing::StartsWith("job:"));
}

TEST(TrainingEvent, TrailingTextIsMalformed) {
  expect_rejected(fmt::format("{{{}}} x", kStep), EventRejectReason::kMalformed, "not");
  expect_rejected(fmt::format("{{{}}},", kStep), EventRejectReason::kMalformed, "not");
  // Text after the object that happens to end in a brace: a second object, or a stray one.
  expect_rejected(fmt::format("{{{}}} {{\"b\":2}}", kStep), EventRejectReason::kMalformed, "not");
  expect_rejected(fmt::format("{{{}}}}}", kStep), EventRejectReason::kMalformed, "not");
}

TEST(TrainingEvent, TooLarge) {
  // Exactly the limit is accepted; a byte more is not.
  const std::string head = fmt::format("{{{},\"pad\":\"", kStep);
  std::string at_limit = head + std::string(kMaxEventBytes - head.size() - 2, 'x') + "\"}";
  ASSERT_EQ(at_limit.size(), kMaxEventBytes);
  EXPECT_EQ(parse_ok(at_limit).job, "j");
  std::string over = head + std::string(kMaxEventBytes - head.size() - 1, 'x') + "\"}";
  ASSERT_EQ(over.size(), kMaxEventBytes + 1);
  expect_rejected(over, EventRejectReason::kTooLarge, "4097 bytes");
}

TEST(TrainingEvent, MissingRequiredFields) {
  expect_invalid(R"({"job":"j","step":1,"duration_s":1})", "event");
  expect_invalid(R"({"event":"step","step":1,"duration_s":1})", "job");
  expect_invalid(R"({"event":"step","job":"j","duration_s":1})", "step");
  expect_invalid(R"({"event":"step","job":"j","step":1})", "duration_s");
  expect_invalid(R"({"event":"epoch_start","job":"j"})", "epoch");
  expect_invalid(R"({"event":"epoch_end","job":"j","step":1,"duration_s":1})", "epoch");
  expect_invalid("{}", "event");
}

TEST(TrainingEvent, UnknownEventKind) {
  expect_invalid(R"({"event":"batch","job":"j","step":1,"duration_s":1})", "event");
  expect_invalid(R"({"event":"Step","job":"j","step":1,"duration_s":1})", "event");
  expect_invalid(R"({"event":1,"job":"j","step":1,"duration_s":1})", "event");
  TrainingEventParser parser;
  const auto e = parser.parse(R"({"event":"batch","job":"j"})");
  ASSERT_FALSE(e.has_value());
  EXPECT_THAT(e.error().message, ::testing::HasSubstr("batch"));
}

TEST(TrainingEvent, RankOutOfRange) {
  EXPECT_EQ(parse_ok(step_with(R"("rank":65535)")).rank, 65535U);
  expect_invalid(step_with(R"("rank":65536)"), "rank");
  expect_invalid(step_with(R"("rank":70000)"), "rank");
  expect_invalid(step_with(R"("rank":-1)"), "rank");
  expect_invalid(step_with(R"("rank":"3")"), "rank");
  expect_invalid(step_with(R"("rank":1e30)"), "rank");
  expect_invalid(step_with(R"("local_rank":65536)"), "local_rank");
  expect_invalid(step_with(R"("world_size":0)"), "world_size");
  EXPECT_EQ(parse_ok(step_with(R"("world_size":65536)")).world_size, 65536U);
  TrainingEventParser parser;
  const auto e = parser.parse(step_with(R"("rank":70000)"));
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().message, "rank: 70000 is above 65535");
}

TEST(TrainingEvent, StepMustBeAWholeNumberFromZero) {
  EXPECT_EQ(parse_ok(R"({"event":"step","job":"j","step":0,"duration_s":1})").step, 0U);
  expect_invalid(R"({"event":"step","job":"j","step":-1,"duration_s":1})", "step");
  expect_invalid(R"({"event":"step","job":"j","step":1.5,"duration_s":1})", "step");
  expect_invalid(R"({"event":"step","job":"j","step":"1","duration_s":1})", "step");
  expect_invalid(R"({"event":"epoch_end","job":"j","epoch":-2})", "epoch");
  expect_invalid(R"({"event":"epoch_end","job":"j","epoch":0.5})", "epoch");
}

TEST(TrainingEvent, DurationMustBeAboveZeroAndAtMostADay) {
  expect_invalid(R"({"event":"step","job":"j","step":1,"duration_s":0})", "duration_s");
  expect_invalid(R"({"event":"step","job":"j","step":1,"duration_s":-0.5})", "duration_s");
  expect_invalid(R"({"event":"step","job":"j","step":1,"duration_s":86400.5})", "duration_s");
  expect_invalid(R"({"event":"step","job":"j","step":1,"duration_s":"1"})", "duration_s");
  EXPECT_DOUBLE_EQ(parse_ok(R"({"event":"step","job":"j","step":1,"duration_s":86400})").duration_s, 86400);
  EXPECT_DOUBLE_EQ(parse_ok(R"({"event":"step","job":"j","step":1,"duration_s":1e-6})").duration_s, 1e-6);
}

TEST(TrainingEvent, LossMustBeANumber) {
  expect_invalid(step_with(R"("loss":"2.3")"), "loss");
  expect_invalid(step_with(R"("loss":[2.3])"), "loss");
  expect_invalid(step_with(R"("loss":true)"), "loss");
  EXPECT_EQ(parse_ok(step_with(R"("loss":-1.5e-3)")).loss, -1.5e-3);
}

TEST(TrainingEvent, JobNameRules) {
  expect_invalid(R"({"event":"step","job":"","step":1,"duration_s":1})", "job");
  expect_invalid(R"({"event":"step","job":5,"step":1,"duration_s":1})", "job");
  const std::string at_limit(kMaxJobNameBytes, 'a');
  EXPECT_EQ(parse_ok(fmt::format(R"({{"event":"step","job":"{}","step":1,"duration_s":1}})", at_limit)).job, at_limit);
  expect_invalid(fmt::format(R"({{"event":"step","job":"{}","step":1,"duration_s":1}})", std::string(129, 'a')), "job");
  // 128 bytes of UTF-8 (64 two-byte characters) is the limit, not 128 characters.
  std::string two_byte;
  for (int i = 0; i < 65; ++i) two_byte += "\\u00e9";
  expect_invalid(fmt::format(R"({{"event":"step","job":"{}","step":1,"duration_s":1}})", two_byte), "job");
  expect_invalid(R"({"event":"step","job":"a\tb","step":1,"duration_s":1})", "job");
  expect_invalid(R"({"event":"step","job":"a\u0001b","step":1,"duration_s":1})", "job");
  expect_invalid(R"({"event":"step","job":"a\u007fb","step":1,"duration_s":1})", "job");
  expect_invalid(R"({"event":"step","job":"a\nb","step":1,"duration_s":1})", "job");
}

TEST(TrainingEvent, ScalarRules) {
  expect_rejected(step_with(R"("scalars":{"1lr":1})"), EventRejectReason::kInvalid, "scalars");
  expect_rejected(step_with(R"("scalars":{"l-r":1})"), EventRejectReason::kInvalid, "scalars");
  expect_rejected(step_with(R"("scalars":{"":1})"), EventRejectReason::kInvalid, "scalars");
  expect_rejected(step_with(fmt::format(R"("scalars":{{"{}":1}})", std::string(65, 'a'))), EventRejectReason::kInvalid,
                  "scalars");
  EXPECT_EQ(parse_ok(step_with(fmt::format(R"("scalars":{{"{}":1}})", std::string(64, 'a')))).scalars.size(), 1U);
  expect_rejected(step_with(R"("scalars":{"lr":"x"})"), EventRejectReason::kInvalid, "scalars.lr");
  expect_rejected(step_with(R"("scalars":[1,2])"), EventRejectReason::kInvalid, "scalars");

  std::string fields;
  for (int i = 0; i < 32; ++i) fields += fmt::format("{}\"s{}\":{}", i == 0 ? "" : ",", i, i);
  const auto e = parse_ok(step_with(fmt::format(R"("scalars":{{{}}})", fields)));
  ASSERT_EQ(e.scalars.size(), 32U);
  EXPECT_EQ(e.scalars[31].first, "s31");
  EXPECT_DOUBLE_EQ(e.scalars[31].second, 31);
  TrainingEventParser parser;
  const auto over = parser.parse(step_with(fmt::format(R"("scalars":{{{},"s32":32}})", fields)));
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().reason, EventRejectReason::kInvalid);
  EXPECT_EQ(over.error().message, "scalars: more than 32");
}

TEST(TrainingEvent, PidRules) {
  expect_invalid(step_with(R"("pid":0)"), "pid");
  expect_invalid(step_with(R"("pid":-5)"), "pid");
  expect_invalid(step_with(R"("pid":4194305)"), "pid");
  EXPECT_EQ(parse_ok(step_with(R"("pid":4194304)")).pid, 4194304);
}

TEST(TrainingEvent, GpuAsIndexOrUuid) {
  EXPECT_EQ(parse_ok(step_with(R"("gpu":7)")).gpu, "7");
  EXPECT_EQ(parse_ok(step_with(R"("gpu":1023)")).gpu, "1023");
  EXPECT_EQ(parse_ok(step_with(R"("gpu":"GPU-8a4f2c1e-0000-1111-2222-333344445555")")).gpu,
            "GPU-8a4f2c1e-0000-1111-2222-333344445555");
  EXPECT_EQ(parse_ok(step_with(R"("gpu":"2")")).gpu, "2");
  expect_invalid(step_with(R"("gpu":1024)"), "gpu");
  expect_invalid(step_with(R"("gpu":-1)"), "gpu");
  expect_invalid(step_with(R"("gpu":1.5)"), "gpu");
  expect_invalid(step_with(R"("gpu":true)"), "gpu");
  expect_invalid(step_with(R"("gpu":"")"), "gpu");
  expect_invalid(step_with(R"("gpu":"GPU\u0000x")"), "gpu");
  expect_invalid(step_with(fmt::format(R"("gpu":"{}")", std::string(97, 'a'))), "gpu");
}

TEST(TrainingEvent, TimeRules) {
  expect_invalid(step_with(R"("time":0)"), "time");
  expect_invalid(step_with(R"("time":-1)"), "time");
  expect_invalid(step_with(R"("time":"now")"), "time");
}

TEST(TrainingEvent, AllocatorFiguresMustBeNonNegativeNumbers) {
  expect_invalid(R"({"event":"epoch_end","job":"j","epoch":1,"allocated_bytes":-1})", "allocated_bytes");
  expect_invalid(R"({"event":"epoch_end","job":"j","epoch":1,"reserved_bytes":"1"})", "reserved_bytes");
  expect_invalid(R"({"event":"epoch_end","job":"j","epoch":1,"peak_allocated_bytes":-0.5})", "peak_allocated_bytes");
}

TEST(TrainingEvent, RejectReasonIds) {
  EXPECT_EQ(reject_reason_id(EventRejectReason::kMalformed), "malformed");
  EXPECT_EQ(reject_reason_id(EventRejectReason::kTooLarge), "too_large");
  EXPECT_EQ(reject_reason_id(EventRejectReason::kInvalid), "invalid");
  EXPECT_EQ(reject_reason_id(EventRejectReason::kTooManyJobs), "too_many_jobs");
  EXPECT_EQ(reject_reason_id(EventRejectReason::kTooManyRanks), "too_many_ranks");
}

std::vector<std::pair<std::string, std::size_t>> lines_of(std::string_view text) {
  std::vector<std::pair<std::string, std::size_t>> out;
  for_each_event_line(text, [&](std::string_view line, std::size_t n) { out.emplace_back(std::string(line), n); });
  return out;
}

TEST(TrainingEventLines, SplitsOnNewlinesWithLineNumbers) {
  using Lines = std::vector<std::pair<std::string, std::size_t>>;
  EXPECT_EQ(lines_of("{\"a\":1}\r\n\r\n  {\"b\":2}\t \n\n{\"c\":3}"),
            (Lines{{"{\"a\":1}", 1}, {"{\"b\":2}", 3}, {"{\"c\":3}", 5}}));
  EXPECT_EQ(lines_of("x\ny\n"), (Lines{{"x", 1}, {"y", 2}}));
  EXPECT_EQ(lines_of("\n\n \r\n"), Lines{});
  EXPECT_EQ(lines_of(""), Lines{});
  EXPECT_EQ(lines_of("only"), (Lines{{"only", 1}}));
}

TEST(TrainingEventLines, EachLineParsesAlone) {
  TrainingEventParser parser;
  std::vector<std::size_t> rejected;
  std::vector<std::uint64_t> steps;
  for_each_event_line(fmt::format("{{{}}}\r\nnot json\n\n{{\"event\":\"step\",\"job\":\"j\",\"step\":9,\"duration_s\":2}}\r\n",
                                  kStep),
                      [&](std::string_view line, std::size_t n) {
                        auto e = parser.parse(line);
                        if (e) {
                          steps.push_back(e->step);
                        } else {
                          rejected.push_back(n);
                        }
                      });
  EXPECT_EQ(steps, (std::vector<std::uint64_t>{1, 9}));
  EXPECT_EQ(rejected, std::vector<std::size_t>{2});
}

TEST(TrainingEvent, OneParserReadsManyEvents) {
  // The parser keeps its buffers between events: nothing of one event may show in the next.
  TrainingEventParser parser;
  for (int i = 0; i < 1000; ++i) {
    const std::string job = fmt::format("job-{}-{}", i, std::string(static_cast<std::size_t>(i % 37), 'x'));
    std::string line;
    switch (i % 4) {
      case 0:
        line = fmt::format(R"({{"event":"step","job":"{}","rank":{},"step":{},"duration_s":{},"loss":{},"scalars":{{"s{}":{}}}}})",
                           job, i % 100, i * 3, 0.001 * (i + 1), i * 0.5, i, i);
        break;
      case 1:
        line = fmt::format(R"({{"event":"epoch_start","job":"{}","epoch":{},"allocated_bytes":{},"gpu":"GPU-{}"}})", job,
                           i, i * 1024, i);
        break;
      case 2:
        line = fmt::format(R"({{"event":"epoch_end","job":"{}","epoch":{},"pid":{}}})", job, i, i + 1);
        break;
      default:
        // Turned away halfway through: what it set must not leak into the next event.
        line = fmt::format(R"({{"event":"step","job":"{}","rank":{},"gpu":{},"step":-1,"duration_s":1}})", job, i % 7, i % 8);
        break;
    }
    const auto e = parser.parse(line);
    SCOPED_TRACE(line);
    if (i % 4 == 3) {
      ASSERT_FALSE(e.has_value());
      EXPECT_THAT(e.error().message, ::testing::StartsWith("step:"));
      continue;
    }
    ASSERT_TRUE(e.has_value()) << e.error().message;
    EXPECT_EQ(e->job, job);
    switch (i % 4) {
      case 0:
        EXPECT_EQ(e->kind, TrainingEventKind::kStep);
        EXPECT_EQ(e->rank, static_cast<unsigned>(i % 100));
        EXPECT_EQ(e->step, static_cast<std::uint64_t>(i * 3));
        EXPECT_DOUBLE_EQ(e->duration_s, 0.001 * (i + 1));
        EXPECT_EQ(e->loss, i * 0.5);
        ASSERT_EQ(e->scalars.size(), 1U);
        EXPECT_EQ(e->scalars[0].first, fmt::format("s{}", i));
        EXPECT_FALSE(e->gpu.has_value());
        break;
      case 1:
        EXPECT_EQ(e->kind, TrainingEventKind::kEpochStart);
        EXPECT_EQ(e->rank, 0U);
        EXPECT_EQ(e->epoch, static_cast<std::uint64_t>(i));
        EXPECT_EQ(e->allocated_bytes, i * 1024.0);
        EXPECT_EQ(e->gpu, fmt::format("GPU-{}", i));
        EXPECT_TRUE(e->scalars.empty());
        EXPECT_FALSE(e->loss.has_value());
        break;
      case 2:
        EXPECT_EQ(e->kind, TrainingEventKind::kEpochEnd);
        EXPECT_EQ(e->epoch, static_cast<std::uint64_t>(i));
        EXPECT_EQ(e->pid, i + 1);
        EXPECT_FALSE(e->gpu.has_value());
        EXPECT_FALSE(e->allocated_bytes.has_value());
        break;
      default:
        break;
    }
  }
}

}  // namespace training_event_test
}  // namespace gpuscope::analysis
