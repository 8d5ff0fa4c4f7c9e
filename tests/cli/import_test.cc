// `gpuscope import`: recordings loaded into a data directory and read back through the store and
// `eval --data-dir`: the real H100 recording (Prometheus query_range JSON), nvidia-smi CSV logs with
// units, [N/A] and bad lines, idempotence, files that are not recordings, and an agent's locked dir.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/data_dir_lock.h"
#include "cli/cli_runner.h"
#include "store/label_matcher.h"
#include "store/tsdb.h"
#include "cli/scratch_dir.h"

namespace gpuscope::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_gpuscope;

// The agent's own query_range answer over a real H100 run (see its README.md).
const std::string kRealH100 = GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/history.json.gz";
// What that file holds (counted with a JSON reader): 140 series, 24032 points, power at its first second.
constexpr std::size_t kRealH100Series = 140;
constexpr std::size_t kRealH100Samples = 24032;
constexpr std::int64_t kRealH100FirstMs = 1795603808000;

using testing::ScratchDir;

std::vector<store::SeriesSamples> read_all(const std::string& data_dir, const std::string& name_regex = ".+") {
  store::TsdbOptions o;
  o.data_dir = data_dir;
  o.read_only = true;
  auto tsdb = store::Tsdb::open(std::move(o), kRealH100FirstMs);
  EXPECT_TRUE(tsdb.has_value()) << tsdb.error();
  if (!tsdb) return {};
  std::vector<store::LabelMatcher> m{*store::LabelMatcher::make(store::LabelMatcher::Op::kRegex, "__name__", name_regex)};
  auto all = (*tsdb)->select(m, 0, std::numeric_limits<std::int64_t>::max() / 2);
  EXPECT_TRUE(all.has_value());
  return all ? *all : std::vector<store::SeriesSamples>{};
}

std::size_t sample_count(const std::vector<store::SeriesSamples>& series) {
  std::size_t n = 0;
  for (const auto& s : series) n += s.samples.size();
  return n;
}

TEST(Import, TheRealH100RecordingIsReadBackWhole) {
  ASSERT_TRUE(fs::exists(kRealH100)) << kRealH100;
  ScratchDir dir;
  auto r = run_gpuscope({"import", "--data-dir", dir.data_dir(), kRealH100});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("140 series, 24032 samples imported, 0 already present, 0 lines skipped"));

  const auto all = read_all(dir.data_dir());
  EXPECT_EQ(all.size(), kRealH100Series);
  EXPECT_EQ(sample_count(all), kRealH100Samples);

  // The labels are the agent's, as recorded; the value at the first second is the idle GPU's 73.796 W.
  auto e = run_gpuscope({"eval", "--data-dir", dir.data_dir(), "DCGM_FI_DEV_POWER_USAGE", "--time", "1795603808"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_THAT(e.out, HasSubstr("DCGM_FI_DEV_POWER_USAGE{Hostname=\"vm\", UUID=\"GPU-c759a157-aadd-4937-dac5-cc2084d9e920\""));
  EXPECT_THAT(e.out, HasSubstr("=> 73.796 @[1795603808.000]"));
  // During the bf16 phase the power sits at the 700 W cap (README: 698 W mean).
  auto cap = run_gpuscope({"eval", "--data-dir", dir.data_dir(),
                           "avg_over_time(DCGM_FI_DEV_POWER_USAGE[10s]) > 650", "--time", "1795603843"});
  ASSERT_EQ(cap.code, 0) << cap.err;
  EXPECT_THAT(cap.out, HasSubstr("gpu=\"0\", modelName=\"NVIDIA H100 80GB HBM3\", pci_bus_id=\"00000000:00:06.0\"} => 698.0675 @[1795603843.000]"));
}

TEST(Import, ImportingTwiceAddsNothing) {
  ScratchDir dir;
  ASSERT_EQ(run_gpuscope({"import", "--data-dir", dir.data_dir(), kRealH100}).code, 0);
  auto again = run_gpuscope({"import", "--data-dir", dir.data_dir(), kRealH100});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("140 series, 0 samples imported, 24032 already present, 0 lines skipped"));
  const auto all = read_all(dir.data_dir());
  EXPECT_EQ(all.size(), kRealH100Series);
  EXPECT_EQ(sample_count(all), kRealH100Samples);
}

// A query_range answer that overlaps what is stored: only the new points are added, and a point that
// is not a [time, "value"] pair is reported where it is and skipped.
TEST(Import, OverlappingJsonAddsOnlyTheNewPointsAndSkipsBadOnes) {
  ScratchDir dir;
  const auto first = dir.write("a.json", R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"values":[[1000,"10"],[1001,"11"]]}]}})");
  const auto second = dir.write("b.json", R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"values":[[1001,"11"],[1002,"x"],[1003,"+Inf"],[1002.5,"12"]]}]}})");
  ASSERT_EQ(run_gpuscope({"import", "--data-dir", dir.data_dir(), first}).code, 0);
  auto r = run_gpuscope({"import", "--data-dir", dir.data_dir(), second});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 series, 2 samples imported, 1 already present, 1 lines skipped"));
  EXPECT_EQ(r.err, "gpuscope: " + second + ": result[0].values[1]: value 'x' is not a number; skipped\n");
  const auto all = read_all(dir.data_dir());
  ASSERT_EQ(all.size(), 1u);
  ASSERT_EQ(all[0].samples.size(), 4u);
  EXPECT_EQ(all[0].samples[2].t_ms, 1002500);  // sorted by time, fractional seconds kept
  EXPECT_EQ(all[0].samples[3].value, std::numeric_limits<double>::infinity());
}

constexpr std::string_view kSmiLog =
    "timestamp, index, name, uuid, pci.bus_id, utilization.gpu [%], memory.used [MiB], power.draw [W], "
    "clocks.gr [MHz], pstate, clocks_event_reasons.active\n"
    "2026/11/25 10:00:00.000, 0, NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:00:06.0, 45 %, 1234 MiB, 250.12 W, "
    "1980 MHz, P0, 0x0000000000000004\n"
    "2026/11/25 10:00:00.000, 1, NVIDIA H100 80GB HBM3, GPU-bbbb, 00000000:00:07.0, [N/A], 10 MiB, [N/A], "
    "1980 MHz, P8, 0x0000000000000001\n"
    "2026/11/25 10:00:01.000, 0, NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:00:06.0, oops %, 1234 MiB, 250.12 W, "
    "1980 MHz, P0, 0x0000000000000004\n"
    "2026/11/25 10:00:02.000, 0, NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:00:06.0, 50 %, 2000 MiB\n"
    "\n"
    "2026/11/25 10:00:03.000, 0, NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:00:06.0, 60 %, 4096 MiB, 300.5 W, "
    "1980 MHz, P2, 0x0000000000000000\n";
// 2026-11-25T10:00:00Z
constexpr std::int64_t kLogStartMs = 1795600800000;

TEST(Import, NvidiaSmiCsvLogBecomesDcgmSeriesInDcgmUnits) {
  ScratchDir dir;
  const auto log = dir.write("gpu-stats.csv", std::string(kSmiLog));
  auto r = run_gpuscope({"import", "--data-dir", dir.data_dir(), "--hostname", "node7", log});
  ASSERT_EQ(r.code, 0) << r.err;
  // GPU 0: 5 fields x 2 good lines; GPU 1: memory, pstate, reasons (utilization and power are [N/A]).
  EXPECT_THAT(r.out, HasSubstr("8 series, 13 samples imported, 0 already present, 2 lines skipped"));
  EXPECT_THAT(r.err, HasSubstr("gpuscope: " + log + ": line 4: utilization.gpu: 'oops' is not a value; skipped\n"));
  EXPECT_THAT(r.err, HasSubstr("gpuscope: " + log + ": line 5: 7 values for 11 columns; skipped\n"));
  EXPECT_THAT(r.err, HasSubstr("columns without a DCGM name left out: clocks.gr\n"));

  // A bad line's bytes are escaped on the way to the terminal.
  const auto binary = dir.write("binary.csv", "timestamp, index, memory.used [MiB]\n2026/11/25 10:00:00.000, 0, \x1b[2J\n");
  auto escaped = run_gpuscope({"import", "--data-dir", dir.data_dir(), binary});
  EXPECT_THAT(escaped.err, HasSubstr(": line 2: memory.used: '\\x1b[2J' is not a value; skipped\n"));

  const auto fb = read_all(dir.data_dir(), "DCGM_FI_DEV_FB_USED");
  ASSERT_EQ(fb.size(), 2u);
  const auto& gpu0 = fb[0].labels.get("gpu") == "0" ? fb[0] : fb[1];
  EXPECT_EQ(gpu0.labels.get("Hostname"), "node7");
  EXPECT_EQ(gpu0.labels.get("UUID"), "GPU-aaaa");
  EXPECT_EQ(gpu0.labels.get("modelName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu0.labels.get("pci_bus_id"), "00000000:00:06.0");
  ASSERT_EQ(gpu0.samples.size(), 2u);
  // dcgm-exporter's FB_USED is in MiB, as nvidia-smi prints it: the agent's /metrics unit.
  EXPECT_EQ(gpu0.samples[0].t_ms, kLogStartMs);
  EXPECT_EQ(gpu0.samples[0].value, 1234);
  EXPECT_EQ(gpu0.samples[1].t_ms, kLogStartMs + 3000);
  EXPECT_EQ(gpu0.samples[1].value, 4096);

  const auto power = read_all(dir.data_dir(), "DCGM_FI_DEV_POWER_USAGE");
  ASSERT_EQ(power.size(), 1u);  // GPU 1's [N/A] is no sample, not a zero
  EXPECT_DOUBLE_EQ(power[0].samples[0].value, 250.12);
  const auto pstate = read_all(dir.data_dir(), "DCGM_FI_DEV_PSTATE");
  ASSERT_EQ(pstate.size(), 2u);
  const auto reasons = read_all(dir.data_dir(), "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS");
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ((reasons[0].labels.get("gpu") == "0" ? reasons[0] : reasons[1]).samples[0].value, 4);

  auto again = run_gpuscope({"import", "--data-dir", dir.data_dir(), "--hostname", "node7", log});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("8 series, 0 samples imported, 13 already present, 2 lines skipped"));
}

TEST(Import, UtcOffsetSaysWhichZoneTheLogWasPrintedIn) {
  ScratchDir dir;
  const auto log = dir.write("gpu-stats.csv",
                            "timestamp, index, memory.used [MiB]\n2026/11/25 11:00:00.250, 0, 5 MiB\n");
  auto r = run_gpuscope({"import", "--data-dir", dir.data_dir(), "--utc-offset", "+01:00", log});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto fb = read_all(dir.data_dir());
  ASSERT_EQ(fb.size(), 1u);
  EXPECT_EQ(fb[0].samples.at(0).t_ms, kLogStartMs + 250);
  EXPECT_EQ(run_gpuscope({"import", "--data-dir", dir.data_dir(), "--utc-offset", "1h", log}).code, 2);
}

// nvidia-smi restarted into the same log repeats its header, maybe with other columns: each header
// applies to the lines below it, and is not a bad line.
TEST(Import, ARepeatedHeaderAppliesToTheLinesBelowIt) {
  ScratchDir dir;
  const auto log = dir.write("gpu-stats.csv",
                            "timestamp, index, memory.used [MiB]\n"
                            "2026/11/25 10:00:00.000, 0, 5 MiB\n"
                            "timestamp, index, temperature.gpu, memory.used [MiB]\n"
                            "2026/11/25 10:00:01.000, 0, 40, 6 MiB\n");
  auto r = run_gpuscope({"import", "--data-dir", dir.data_dir(), log});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("2 series, 3 samples imported, 0 already present, 0 lines skipped"));
  const auto temp = read_all(dir.data_dir(), "DCGM_FI_DEV_GPU_TEMP");
  ASSERT_EQ(temp.size(), 1u);
  EXPECT_EQ(temp[0].samples.at(0).value, 40);
}

TEST(Import, AFileThatIsNoRecordingIsOneLineNamingItAndNothingIsWritten) {
  ScratchDir dir;
  const auto good = dir.write("good.csv", "timestamp, index, memory.used [MiB]\n2026/11/25 11:00:00.000, 0, 5 MiB\n");
  for (const std::string text : {"hello\nworld\n", "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\"}}",
                                  "{not json", "", "index, memory.used [MiB]\n0, 5 MiB\n"}) {
    const auto bad = dir.write("bad.txt", text);
    auto r = run_gpuscope({"import", "--data-dir", dir.data_dir(), good, bad});
    EXPECT_EQ(r.code, 2) << text;
    EXPECT_THAT(r.err, ::testing::StartsWith("gpuscope: " + bad + ": ")) << text;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(fs::exists(dir.data_dir())) << text;  // the good file was not loaded either
  }
  auto missing = run_gpuscope({"import", "--data-dir", dir.data_dir(), (dir.path / "absent.json").string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("absent.json: cannot open"));
}

TEST(Import, ADataDirectoryARunningAgentHoldsIsRefused) {
  ScratchDir dir;
  auto lock = agent::DataDirLock::acquire(dir.data_dir());
  ASSERT_TRUE(lock.has_value()) << lock.error();
  const auto log = dir.write("gpu-stats.csv", "timestamp, index, memory.used [MiB]\n2026/11/25 11:00:00.000, 0, 5 MiB\n");
  auto r = run_gpuscope({"import", "--data-dir", dir.data_dir(), log});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(fmt::format("(pid {})", ::getpid())));
  EXPECT_FALSE(fs::exists(fs::path(dir.data_dir()) / store::kChunkDatabaseFileName));
  lock->reset();
  EXPECT_EQ(run_gpuscope({"import", "--data-dir", dir.data_dir(), log}).code, 0);
}

TEST(Import, NeedsADataDirAndFiles) {
  EXPECT_EQ(run_gpuscope({"import", "x.json"}).code, 2);
  EXPECT_EQ(run_gpuscope({"import", "--data-dir", "/tmp/x"}).code, 2);
}

}  // namespace
}  // namespace gpuscope::cli
