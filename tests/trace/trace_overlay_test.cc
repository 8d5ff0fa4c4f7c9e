// The augmented trace: write_trace_overlay on hand-made and real traces, plain and gzip, read
// back by gpuscope's own reader, by nlohmann::json and by Python's json module; `gpuscope trace
// --augment` and its one-line errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "counters_test_support.h"
#include "e2e/command_runner.h"
#include "trace/counters_report.h"
#include "trace/trace_analyzer.h"
#include "trace/trace_overlay.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

namespace fs = std::filesystem;

std::string overlay_read_json(const std::string& path) {
  auto reader = TraceByteReader::open(path);
  EXPECT_TRUE(reader.has_value());
  if (!reader) return {};
  auto text = testing::read_all(*reader);
  EXPECT_TRUE(text.has_value());
  return text ? *text : std::string();
}

std::vector<OverlayEvent> overlay_sample_events() {
  std::vector<OverlayEvent> events;
  append_counter_track("Queue length stream 7", "gpuscope", 3, "queued",
                       std::vector<CounterPoint>{{1'000'001, 1}, {1'000'500, 0}}, events);
  OverlayEvent span;
  span.phase = OverlayEvent::Phase::kComplete;
  span.name = "critical \"path\" \\ step\t1";
  span.category = "gpuscope";
  span.pid = 3;
  span.tid = 7;
  span.ts_ns = 1'661'203'462'600'456'123;
  span.duration_ns = 2'500;
  span.args = {{"share", 0.25}, {"kernels", std::int64_t{12}}, {"bound", std::string("cpu")}};
  events.push_back(span);
  return events;
}

std::vector<std::string> overlay_files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(TraceOverlay, EventJsonIsExact) {
  const auto events = overlay_sample_events();
  EXPECT_EQ(overlay_event_json(events[0]),
            R"({"ph":"C","name":"Queue length stream 7","cat":"gpuscope","pid":3,"tid":0,"ts":1000.001,"args":{"queued":1}})");
  const auto span = nlohmann::json::parse(overlay_event_json(events[2]));
  EXPECT_EQ(span["ph"], "X");
  EXPECT_EQ(span["name"], "critical \"path\" \\ step\t1");
  EXPECT_EQ(span["dur"], 2.5);
  EXPECT_EQ(span["args"]["kernels"], 12);
  EXPECT_EQ(span["args"]["bound"], "cpu");
  // Nanoseconds past 2^53 survive as the decimal text.
  EXPECT_NE(overlay_event_json(events[2]).find("\"ts\":1661203462600456.123"), std::string::npos);
}

TEST(TraceOverlay, InsertsIntoTraceEventsOfHandMadeTraces) {
  testing::TempDir dir;
  struct Case {
    std::string name;
    std::string json;
    std::size_t original_events;
  };
  const std::vector<Case> cases{
      {"empty array", R"({"traceEvents":[]})", 0},
      {"bare array", R"([ {"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1} ])", 1},
      // A nested traceEvents key, a string value "traceEvents", escapes and brackets in strings come first.
      {"decoys",
       R"({"meta":{"traceEvents":[1,2]},"note":"traceEvents","q":"a\"]}[{\\","traceEvents" : [{"ph":"i","name":"x","ts":5}, {"ph":"i","name":"y","ts":6}],"tail":true})",
       2},
  };
  for (const auto& c : cases) {
    const std::string in = dir.write("in.json", c.json);
    const std::string out = dir.path() + "/out.json";
    auto written = write_trace_overlay(in, out, overlay_sample_events());
    ASSERT_TRUE(written.has_value()) << c.name << ": " << written.error().what();
    EXPECT_EQ(written->added_events, 3u);
    const auto doc = nlohmann::json::parse(overlay_read_json(out));
    const auto& events = doc.is_array() ? doc : doc["traceEvents"];
    ASSERT_EQ(events.size(), c.original_events + 3) << c.name;
    EXPECT_EQ(events[0]["ph"], "C") << c.name;
    EXPECT_EQ(events[2]["ph"], "X") << c.name;
    if (c.name == "decoys") {
      EXPECT_EQ(doc["meta"]["traceEvents"].size(), 2u);
      EXPECT_EQ(doc["q"], "a\"]}[{\\");
      EXPECT_EQ(events[4]["name"], "y");
      EXPECT_EQ(doc["tail"], true);
    }
  }
  // No events: the copy is the input, byte for byte.
  const std::string in = dir.write("same.json", cases[2].json);
  ASSERT_TRUE(write_trace_overlay(in, dir.path() + "/same-out.json", {}).has_value());
  EXPECT_EQ(overlay_read_json(dir.path() + "/same-out.json"), cases[2].json);
}

TEST(TraceOverlay, KeyAcrossReadBoundaries) {
  // The reader hands out 256 KiB at a time: put "traceEvents" and its '[' across that boundary.
  testing::TempDir dir;
  for (const std::size_t shift : {0, 3, 6, 11, 13, 15}) {
    const std::size_t boundary = 256u << 10;
    const std::string head = R"({"pad":")";
    std::string pad(boundary - head.size() - 3 - 2 - shift + 1, 'x');  // the key's quote lands near the boundary
    const std::string json = head + pad + R"(",  "traceEvents": [{"ph":"i","name":"x","ts":5}]})";
    const std::string in = dir.write("big.json", json);
    const std::string out = dir.path() + "/big-out.json";
    auto written = write_trace_overlay(in, out, overlay_sample_events());
    ASSERT_TRUE(written.has_value()) << written.error().what();
    const auto doc = nlohmann::json::parse(overlay_read_json(out));
    ASSERT_EQ(doc["traceEvents"].size(), 4u) << shift;
    EXPECT_EQ(doc["pad"].get<std::string>().size(), pad.size());
  }
}

TEST(TraceOverlay, ErrorsAreOneLineAndLeaveNothingBehind) {
  testing::TempDir dir;
  const std::string in = dir.write("in.json", R"({"traceEvents":[]})");
  const auto events = overlay_sample_events();
  const auto expect_error = [&](const std::string& out, const std::string& input, const std::string& needle) {
    auto r = write_trace_overlay(input, out, events);
    ASSERT_FALSE(r.has_value()) << out;
    const std::string what = r.error().what();
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  };
  expect_error(dir.path() + "/out.txt", in, "must be named .json or .json.gz");
  expect_error(dir.path() + "/no/such/dir/out.json", in, "cannot be written");
  expect_error(in, in, "is the input trace");
  expect_error(dir.path() + "/out.json", dir.write("not.json", R"({"events":[1]})"), "no top-level traceEvents array");
  expect_error(dir.path() + "/out.json", dir.write("cut.json", R"({"traceEvents":[   )"), "ends inside its traceEvents array");
  expect_error(dir.path() + "/out.json", dir.path() + "/missing.json", "missing.json");
  expect_error(dir.path() + "/out.json.gz", dir.write("cut.json.gz", testing::gzip_text(R"({"traceEvents":[{"a":1}]})").substr(0, 20)),
               "cut.json.gz");
  // Only the inputs written above: no output, no temporary file.
  EXPECT_EQ(overlay_files_in(dir.path()), (std::vector<std::string>{"cut.json", "cut.json.gz", "in.json", "not.json"}));
  // An unwritable directory (root writes anywhere: then this part is moot).
  if (::geteuid() != 0) {
    fs::create_directory(dir.path() + "/ro");
    fs::permissions(dir.path() + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    expect_error(dir.path() + "/ro/out.json", in, "cannot be written");
  }
}

// The real trace augmented with its own counters, in every combination of plain and gzip: gpuscope reads
// the copy to the same report, the original events are all there in order, and the counters are as the
// analysis computed them.
TEST(TraceOverlay, RealTraceRoundTrip) {
  testing::TempDir dir;
  const std::string gz = testing::conformance_trace("trace_diff__control__control.json.gz");
  const std::string original_text = overlay_read_json(gz);
  const std::string plain = dir.write("control.json", original_text);
  TraceAnalysisOptions options;
  options.analysis.counter_series = true;
  auto original = analyze_trace_file(gz, options);
  ASSERT_TRUE(original.has_value());
  const auto events = counter_overlay_events(*original);
  std::size_t expected_points = 0;
  for (const auto& s : original->devices[0].queue_length.streams) expected_points += s.series.size();
  for (const auto& d : original->devices[0].memory_bandwidth.directions) expected_points += d.series.size();
  ASSERT_EQ(events.size(), expected_points);
  ASSERT_GT(events.size(), 10000u);

  const auto original_doc = nlohmann::json::parse(original_text);
  for (const auto& [input, output] : std::vector<std::pair<std::string, std::string>>{
           {gz, "a.json.gz"}, {gz, "b.json"}, {plain, "c.json.gz"}, {plain, "d.json"}}) {
    const std::string out = dir.path() + "/" + output;
    auto written = write_trace_overlay(input, out, events);
    ASSERT_TRUE(written.has_value()) << written.error().what();
    EXPECT_EQ(written->gzip, output.ends_with(".gz"));
    std::ifstream f(out, std::ios::binary);
    const bool gzip_magic = f.get() == 0x1f && f.get() == 0x8b;
    EXPECT_EQ(gzip_magic, output.ends_with(".gz")) << output;
    EXPECT_EQ(written->output_file_bytes, fs::file_size(out));

    auto again = analyze_trace_file(out, options);
    ASSERT_TRUE(again.has_value()) << again.error().what();
    ASSERT_EQ(again->devices.size(), original->devices.size());
    const auto& d0 = original->devices[0];
    const auto& d1 = again->devices[0];
    EXPECT_EQ(d1.busy_ns, d0.busy_ns);
    EXPECT_EQ(d1.kernel_count, d0.kernel_count);
    EXPECT_EQ(again->span_ns(), original->span_ns());
    ASSERT_EQ(d1.queue_length.streams.size(), d0.queue_length.streams.size());
    EXPECT_EQ(d1.queue_length.streams[0].mean, d0.queue_length.streams[0].mean);
    // The whole document, for two of the four (a DOM of the 37 MB trace takes a while).
    if (output == "b.json" || output == "c.json.gz") continue;
    const auto doc = nlohmann::json::parse(overlay_read_json(out));
    const auto& all = doc["traceEvents"];
    const auto& before = original_doc["traceEvents"];
    ASSERT_EQ(all.size(), before.size() + events.size()) << output;
    EXPECT_EQ(all[events.size()], before[0]);
    EXPECT_EQ(all[all.size() - 1], before[before.size() - 1]);
    EXPECT_EQ(doc["distributedInfo"], original_doc["distributedInfo"]);
    std::size_t counters = 0;
    for (std::size_t i = 0; i < events.size(); ++i) counters += all[i]["ph"] == "C" ? 1 : 0;
    EXPECT_EQ(counters, events.size());
  }
}

TEST(TraceOverlay, PythonReadsTheAugmentedTrace) {
  std::string python;
  for (const char* candidate : {"/usr/bin/python3", "/usr/local/bin/python3"}) {
    if (fs::exists(candidate)) python = candidate;
  }
  if (python.empty()) GTEST_SKIP() << "no python3";
  testing::TempDir dir;
  const std::string gz = testing::conformance_trace("trace_filter__sampled_rank-0.json.gz");
  for (const std::string output : {"out.json.gz", "out.json"}) {
    const std::string out = dir.path() + "/" + output;
    auto r = e2e::run_command({GPUSCOPE_EXE, "trace", gz, "--augment", out}, {{"LD_LIBRARY_PATH", "/nonexistent"}}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("wrote " + out), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.starts_with("== ")) << r.out;  // stdout stays the report alone
    EXPECT_NE(r.out.find("launch queue per stream"), std::string::npos);
    // Python checks what a viewer needs: the file loads as JSON, the original events come after the new
    // ones unchanged, and each counter event has ph C, a name, pid, a numeric ts and one numeric arg.
    const std::string check = R"(
import gzip, json, sys
def load(p):
    return json.load(gzip.open(p, 'rt') if open(p, 'rb').read(2) == b'\x1f\x8b' else open(p))
aug, orig = load(sys.argv[1]), load(sys.argv[2])
a, o = aug['traceEvents'], orig['traceEvents']
n = len(a) - len(o)
assert n > 0 and a[n:] == o, 'original events changed'
assert {k: v for k, v in aug.items() if k != 'traceEvents'} == {k: v for k, v in orig.items() if k != 'traceEvents'}
names = set()
for e in a[:n]:
    assert e['ph'] == 'C' and isinstance(e['ts'], float) and isinstance(e['pid'], int), e
    (value,) = e['args'].values()
    assert isinstance(value, (int, float)) and value >= 0, e
    names.add(e['name'])
print(n, len(names), ';'.join(sorted(names)))
)";
    auto p = e2e::run_command({python, "-c", check, out, gz}, {}, 120);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("Queue length stream 7"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("Memory bandwidth H2D"), std::string::npos) << p.out;
  }
}

TEST(TraceOverlay, CommandLineErrors) {
  testing::TempDir dir;
  const std::string gz = testing::conformance_trace("trace_filter__sampled_rank-0.json.gz");
  const auto run = [](std::vector<std::string> args) {
    args.insert(args.begin(), {GPUSCOPE_EXE, "trace"});
    return e2e::run_command(args, {{"LD_LIBRARY_PATH", "/nonexistent"}}, 120);
  };
  const auto one_line = [](const std::string& err) { return !err.empty() && err.find('\n') == err.size() - 1; };
  // A directory that does not exist, and the input itself: exit 1, one line, no report.
  auto r = run({gz, "--augment", dir.path() + "/missing/out.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("cannot be written"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::string copy = dir.write("copy.json.gz", overlay_read_json(gz));
  r = run({copy, "--augment", copy});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  // A name that is not .json or .json.gz, and a directory of ranks without --rank: usage errors.
  r = run({gz, "--augment", dir.path() + "/out.txt"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(".json.gz"), std::string::npos) << r.err;
  testing::TempDir ranks;
  for (const char* name : {"trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"}) {
    ranks.write(name, overlay_read_json(testing::conformance_trace(name)));
  }
  r = run({ranks.path(), "--augment", dir.path() + "/out.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--rank R"), std::string::npos) << r.err;
  r = run({ranks.path(), "--rank", "1", "--augment", dir.path() + "/rank1.json.gz"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir.path() + "/rank1.json.gz"));
  r = run({gz, "--max-queue-length", "0"});
  EXPECT_EQ(r.exit_code, 2);
  // A lower limit shows the full-queue time in the report.
  r = run({gz, "--max-queue-length", "20"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the CPU was blocked on a full launch queue for"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("launch queue per stream"), std::string::npos);
  EXPECT_NE(r.out.find("memory bandwidth over time"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::trace
