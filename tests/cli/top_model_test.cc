// `gpuscope top`'s pure parts: the history rings and sparklines, the process table's sort and filter,
// GPU selection and pause, the keys, the layout drawn into a buffer, the agent's answers read into a
// frame, and the reading feed's thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "top/reading_feed.h"
#include "top/remote_reader.h"
#include "top/screen_buffer.h"
#include "top/top_keys.h"
#include "top/top_model.h"
#include "top/top_screen.h"
#include "top/top_ui.h"

namespace gpuscope::top {
namespace {

using namespace std::chrono_literals;

ProcessRow process(unsigned pid, unsigned gpu, std::string user, std::optional<std::uint64_t> mem,
                   std::optional<double> sm) {
  return {pid, gpu, std::move(user), "python job" + std::to_string(pid) + ".py", mem, sm};
}

GpuFrame gpu(unsigned index, double util, double sm_active) {
  GpuFrame g;
  g.index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-" + std::to_string(index);
  g.value(Metric::kUtilization) = util;
  g.value(Metric::kSmActive) = sm_active;
  g.value(Metric::kTensorActive) = 43;
  g.value(Metric::kDramActive) = 29;
  g.value(Metric::kMemoryUsedMiB) = 63492;
  g.value(Metric::kMemoryTotalMiB) = 81559;
  g.value(Metric::kPowerWatts) = 619;
  g.value(Metric::kPowerLimitWatts) = 700;
  g.value(Metric::kTemperatureC) = 77;
  g.value(Metric::kSmClockMHz) = 1980;
  g.value(Metric::kMaxSmClockMHz) = 1980;
  g.value(Metric::kMemClockMHz) = 2619;
  g.throttle_reasons = 0;
  g.verdict = VerdictLine{"compute_bound", "compute bound", "SM active 83 %", {}};
  return g;
}

Frame frame_of(std::vector<GpuFrame> gpus) {
  Frame f;
  f.host = "node-1";
  f.gpus = std::move(gpus);
  return f;
}

Frame eight_gpus() {
  std::vector<GpuFrame> gpus;
  for (unsigned i = 0; i < 8; ++i) gpus.push_back(gpu(i, 97, 10.0 * i));
  gpus[0].processes = {process(100, 0, "alice", 4ull << 30, 90), process(101, 0, "bob", 1ull << 30, 95)};
  gpus[1].processes = {process(200, 1, "bob", 8ull << 30, 10)};
  gpus[2].processes = {process(300, 2, "carol", std::nullopt, std::nullopt)};
  return frame_of(std::move(gpus));
}

std::vector<unsigned> pids(const std::vector<ProcessRow>& rows) {
  std::vector<unsigned> out;
  for (const auto& r : rows) out.push_back(r.pid);
  return out;
}

TEST(TopHistoryRing, KeepsTheNewestValuesOldestFirstAndGapsAsMissing) {
  HistoryRing ring(3);
  ring.push(1);
  ring.push(std::nullopt);
  EXPECT_EQ(ring.size(), 2u);
  ring.push(3);
  ring.push(4);
  ASSERT_EQ(ring.size(), 3u);
  EXPECT_FALSE(ring.at(0).has_value());
  EXPECT_EQ(ring.at(1), 3);
  EXPECT_EQ(ring.at(2), 4);
  const auto newest = ring.newest(2);
  ASSERT_EQ(newest.size(), 2u);
  EXPECT_EQ(newest[0], 3);
  EXPECT_EQ(newest[1], 4);
  EXPECT_EQ(ring.newest(10).size(), 3u);
}

TEST(TopSparkline, ScalesToFullScaleClampsAndRightAligns) {
  const std::vector<std::optional<double>> values = {0, 100, 50, 150, std::nullopt, 1};
  EXPECT_EQ(sparkline(values, 6, 100), U" █▄█ ▁");
  // The newest values only when the line is narrower than the history; padded when wider.
  EXPECT_EQ(sparkline(values, 2, 100), U" ▁");
  EXPECT_EQ(sparkline(std::vector<std::optional<double>>{100}, 3, 100), U"  █");
  // Memory: MiB against the board's total.
  EXPECT_EQ(sparkline(std::vector<std::optional<double>>{40000, 80000}, 2, 80000), U"▄█");
  EXPECT_EQ(sparkline(values, 0, 100), U"");
}

TEST(TopModel, SortsProcessesByMemoryOrSmLargestFirstUnknownLast) {
  TopModel model;
  model.apply(eight_gpus());
  EXPECT_EQ(model.sort(), SortKey::kMemory);
  EXPECT_EQ(pids(model.process_rows()), (std::vector<unsigned>{200, 100, 101, 300}));
  model.set_sort(SortKey::kSmPercent);
  EXPECT_EQ(pids(model.process_rows()), (std::vector<unsigned>{101, 100, 200, 300}));
  model.cycle_sort();
  EXPECT_EQ(model.sort(), SortKey::kPid);
  EXPECT_EQ(pids(model.process_rows()), (std::vector<unsigned>{100, 101, 200, 300}));
  model.cycle_sort();
  EXPECT_EQ(model.sort(), SortKey::kMemory);
}

TEST(TopModel, FiltersProcessesByUserAndByTheFocusedGpu) {
  TopModel model;
  model.apply(eight_gpus());
  model.set_user_filter("bob");
  EXPECT_EQ(pids(model.process_rows()), (std::vector<unsigned>{200, 101}));
  model.set_user_filter("nobody");
  EXPECT_TRUE(model.process_rows().empty());
  model.set_user_filter("");
  ASSERT_TRUE(model.select_index(0));
  model.toggle_focus();
  EXPECT_EQ(pids(model.process_rows()), (std::vector<unsigned>{100, 101}));
}

TEST(TopModel, SelectionStaysWithinTheGpusAndNumbersNameIndices) {
  TopModel model;
  EXPECT_FALSE(model.select_index(0));  // nothing read yet
  EXPECT_EQ(model.selected_gpu(), nullptr);
  Frame f = frame_of({gpu(0, 1, 1), gpu(2, 1, 1), gpu(5, 1, 1)});  // -i 0,2,5
  model.apply(f);
  model.select_previous();
  EXPECT_EQ(model.selected(), 0u);
  model.select_next();
  model.select_next();
  model.select_next();
  EXPECT_EQ(model.selected_gpu()->index, 5u);
  EXPECT_TRUE(model.select_index(2));
  EXPECT_EQ(model.selected(), 1u);
  EXPECT_FALSE(model.select_index(1));
  EXPECT_EQ(model.selected(), 1u);
}

TEST(TopModel, PauseFreezesValuesAndHistoriesUntilResumed) {
  TopModel model(4);
  model.apply(frame_of({gpu(0, 10, 5)}));
  model.toggle_pause();
  EXPECT_FALSE(model.apply(frame_of({gpu(0, 90, 50)})));
  EXPECT_EQ(model.latest()->gpus[0].value(Metric::kUtilization), 10);
  EXPECT_EQ(model.history(0, Metric::kUtilization).size(), 1u);
  model.toggle_pause();
  EXPECT_TRUE(model.apply(frame_of({gpu(0, 90, 50)})));
  EXPECT_EQ(model.latest()->gpus[0].value(Metric::kUtilization), 90);
  EXPECT_EQ(model.history(0, Metric::kSmActive).size(), 2u);
}

TEST(TopModel, ALostGpuLeavesAGapInItsHistory) {
  TopModel model;
  model.apply(frame_of({gpu(1, 97, 80)}));
  GpuFrame lost = gpu(1, 97, 80);
  lost.up = false;
  model.apply(frame_of({lost}));
  model.apply(frame_of({gpu(1, 97, 80)}));
  const auto& h = model.history(1, Metric::kSmActive);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_TRUE(h.at(0).has_value());
  EXPECT_FALSE(h.at(1).has_value());
  EXPECT_TRUE(h.at(2).has_value());
  EXPECT_EQ(model.history(7, Metric::kSmActive).size(), 0u);  // never seen
}

TEST(TopKeys, EachBindingChangesWhatItSays) {
  TopModel model;
  model.apply(eight_gpus());
  ViewState view;
  handle_key('s', model, view);
  EXPECT_EQ(model.sort(), SortKey::kSmPercent);
  handle_key('m', model, view);
  EXPECT_EQ(model.sort(), SortKey::kMemory);
  handle_key('S', model, view);
  EXPECT_EQ(model.sort(), SortKey::kSmPercent);
  handle_key(kKeyDown, model, view);
  handle_key(kKeyDown, model, view);
  EXPECT_EQ(model.selected(), 2u);
  handle_key(kKeyUp, model, view);
  EXPECT_EQ(model.selected(), 1u);
  handle_key('6', model, view);
  EXPECT_EQ(model.selected_gpu()->index, 6u);
  handle_key(kKeyTab, model, view);
  EXPECT_TRUE(model.focused());
  handle_key(kKeyEscape, model, view);
  EXPECT_FALSE(model.focused());
  handle_key(' ', model, view);
  EXPECT_TRUE(model.paused());
  handle_key('p', model, view);
  EXPECT_FALSE(model.paused());
  handle_key('?', model, view);
  EXPECT_TRUE(view.help);
  handle_key('s', model, view);  // closes the help, sorts nothing
  EXPECT_FALSE(view.help);
  EXPECT_EQ(model.sort(), SortKey::kSmPercent);
  EXPECT_FALSE(view.quit);
  handle_key('q', model, view);
  EXPECT_TRUE(view.quit);
}

TEST(TopKeys, TheUserPromptSetsClearsOrKeepsTheFilter) {
  TopModel model;
  ViewState view;
  handle_key('u', model, view);
  ASSERT_TRUE(view.user_prompt.has_value());
  for (char c : std::string("bobx")) handle_key(c, model, view);
  handle_key(kKeyBackspace, model, view);
  handle_key('q', model, view);  // typed, not quit
  handle_key(kKeyBackspace, model, view);
  EXPECT_FALSE(view.quit);
  handle_key(kKeyEnter, model, view);
  EXPECT_EQ(model.user_filter(), "bob");
  handle_key('u', model, view);
  EXPECT_EQ(*view.user_prompt, "bob");
  handle_key('z', model, view);
  handle_key(kKeyEscape, model, view);
  EXPECT_EQ(model.user_filter(), "bob");
  handle_key('u', model, view);
  handle_key(kKeyBackspace, model, view);
  handle_key(kKeyBackspace, model, view);
  handle_key(kKeyBackspace, model, view);
  handle_key(kKeyEnter, model, view);
  EXPECT_EQ(model.user_filter(), "");
}

SourceView source() {
  SourceView s;
  s.source = "NVML (simulated)";
  s.age_seconds = 0.4;
  s.clock_text = "12:00:00";
  return s;
}

std::string draw(const TopModel& model, int w, int h, const ViewState& view = {}, const SourceView& s = source()) {
  ScreenBuffer buffer(w, h);
  draw_screen(model, view, s, buffer);
  return buffer.text();
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(TopScreen, At80x24EightGpusGetTwoRowsEachWithUtilizationBesideSmActive) {
  TopModel model;
  model.apply(eight_gpus());
  const std::string text = draw(model, 80, 24);
  EXPECT_TRUE(contains(text, "node-1  8 GPUs")) << text;
  EXPECT_TRUE(contains(text, "reading 0.4 s ago")) << text;
  for (unsigned i = 0; i < 8; ++i) EXPECT_TRUE(contains(text, std::to_string(i) + " H100 80GB HBM3")) << text;
  EXPECT_TRUE(contains(text, "util [")) << text;
  EXPECT_TRUE(contains(text, " 97%")) << text;
  EXPECT_TRUE(contains(text, "SM [")) << text;
  EXPECT_TRUE(contains(text, " 70%")) << text;  // GPU 7's SM active
  EXPECT_TRUE(contains(text, "compute_bound")) << text;
  EXPECT_TRUE(contains(text, "PID")) << text;
  EXPECT_TRUE(contains(text, "GPU MEM▼")) << text;
  EXPECT_TRUE(contains(text, "  200  bob")) << text;
}

TEST(TopScreen, At200x50EveryGpuGetsBarsSparklinesAndItsVerdict) {
  TopModel model;
  for (int i = 0; i < 5; ++i) model.apply(eight_gpus());
  const std::string text = draw(model, 200, 50);
  EXPECT_TRUE(contains(text, "GPU 7 NVIDIA H100 80GB HBM3")) << text;
  EXPECT_TRUE(contains(text, "util.gpu")) << text;
  EXPECT_TRUE(contains(text, "SM active")) << text;
  EXPECT_TRUE(contains(text, "tensor")) << text;
  EXPECT_TRUE(contains(text, "DRAM")) << text;
  EXPECT_TRUE(contains(text, "62.0/79.6G")) << text;
  EXPECT_TRUE(contains(text, "619/700W")) << text;
  EXPECT_TRUE(contains(text, "SM 1980 MHz  MEM 2619 MHz")) << text;
  EXPECT_TRUE(contains(text, "verdict: compute bound — SM active 83 %")) << text;
  EXPECT_TRUE(contains(text, "█████")) << text;  // five readings of 97 %
}

TEST(TopScreen, EveryLayoutKeepsTheSelectedGpuAndTheProcessTableInView) {
  TopModel model;
  model.apply(eight_gpus());
  for (int w : {60, 61, 79, 80, 100, 119, 120, 200}) {
    for (int h : {12, 13, 17, 24, 30, 50}) {
      ScreenBuffer buffer(w, h);
      draw_screen(model, {}, source(), buffer);
      // The buffer clips every write; what matters is that the selected GPU and the process table stay in view.
      const std::string text = buffer.text();
      EXPECT_TRUE(contains(text, "▶")) << w << "x" << h << "\n" << text;
      EXPECT_TRUE(contains(text, "PID")) << w << "x" << h << "\n" << text;
    }
  }
}

TEST(TopScreen, ScrollsToKeepTheSelectedGpuInViewWhenTheyDoNotFit) {
  TopModel model;
  model.apply(eight_gpus());
  model.select_index(7);
  const std::string text = draw(model, 80, 12);
  EXPECT_TRUE(contains(text, "▶7")) << text;
  EXPECT_TRUE(contains(text, "GPUs 2-7 of 8")) << text;
}

TEST(TopScreen, SaysWhenTheTerminalIsTooSmall) {
  TopModel model;
  EXPECT_TRUE(contains(draw(model, 40, 10), "too small: 40x10 (top needs 60x12)"));
}

TEST(TopScreen, ALostGpuSaysSoAndSlowOrFailingReadingsAreShown) {
  Frame f = eight_gpus();
  f.gpus[1].up = false;
  f.gpus[1].down_reason = "GPU is lost";
  TopModel model;
  model.apply(f);
  EXPECT_TRUE(contains(draw(model, 80, 24), "LOST: GPU is lost"));
  SourceView slow = source();
  slow.reading_for_seconds = 2.5;
  EXPECT_TRUE(contains(draw(model, 80, 24, {}, slow), "reading… 2.5 s"));
  SourceView failing = source();
  failing.error = "connection refused";
  failing.age_seconds = 12;
  EXPECT_TRUE(contains(draw(model, 80, 24, {}, failing), "error: connection refused (shown: 12 s old)"));
  TopModel empty;
  SourceView first;
  EXPECT_TRUE(contains(draw(empty, 80, 24, {}, first), "reading…"));
}

TEST(TopScreen, FocusShowsOneGpuInDetailAndOnlyItsProcesses) {
  TopModel model;
  model.apply(eight_gpus());
  model.select_index(1);
  model.toggle_focus();
  const std::string text = draw(model, 100, 30);
  EXPECT_TRUE(contains(text, "GPU 1 NVIDIA H100 80GB HBM3  GPU-1")) << text;
  EXPECT_TRUE(contains(text, "1 process, GPU 1 only")) << text;
  EXPECT_FALSE(contains(text, "  100  alice")) << text;
}

TEST(TopScreen, ProcessNamesCannotWriteControlCharacters) {
  EXPECT_EQ(cell_text("a\x1b[2Jb\xff\xe4\xb8\xad"), U"a?[2Jb??");
  EXPECT_EQ(cell_text("tëst"), U"tëst");
}

TEST(TopThrottle, NamesReasonsWithoutTheIdleBit) {
  EXPECT_EQ(throttle_text(0x1), "");
  EXPECT_EQ(throttle_text(0x4 | 0x8), "SwPowerCap HwSlowdown");
  EXPECT_EQ(throttle_text(0x40), "HwThermalSlowdown");
}

TEST(TopRemoteReader, ReadsTheAgentsGpuListAndVerdicts) {
  const std::string gpus = R"({"system":{"hostname":"dgx-1"},"gpus":[
    {"index":0,"name":"NVIDIA H100 80GB HBM3","uuid":"GPU-a","up":true,
     "values":{"gpu_util_percent":97.0,"sm_active_ratio":0.83,"pipe_tensor_active_ratio":0.43,"dram_active_ratio":0.29,
               "fb_used_mib":63492.0,"fb_total_mib":81559.0,"power_usage_watts":618.7,"enforced_power_limit_watts":700.0,
               "gpu_temp_celsius":77.0,"sm_clock_mhz":1980.0,"mem_clock_mhz":2619.0,"clocks_event_reasons":8.0},
     "processes":[{"pid":4242,"name":"python train.py","used_memory_bytes":66571993088,"sm_utilization_ratio":0.97}]},
    {"index":1,"name":"NVIDIA H100 80GB HBM3","uuid":"GPU-b","up":false}],
    "sample":{"time_seconds":1795795870.5}})";
  const std::string diagnosis = R"({"status":"success","data":{"gpus":[
    {"gpu":"0","uuid":"GPU-a","verdict":"compute_bound","verdict_title":"compute bound","summary":"busy",
     "findings":[{"id":"power_capped"}]}]}})";
  auto f = RemoteReader::frame_of(gpus, diagnosis, {});
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->host, "dgx-1");
  ASSERT_EQ(f->gpus.size(), 2u);
  const auto& g = f->gpus[0];
  EXPECT_DOUBLE_EQ(*g.value(Metric::kSmActive), 83);
  EXPECT_DOUBLE_EQ(*g.value(Metric::kUtilization), 97);
  EXPECT_EQ(*g.throttle_reasons, 8u);
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].pid, 4242u);
  EXPECT_DOUBLE_EQ(*g.processes[0].sm_percent, 97);
  ASSERT_TRUE(g.verdict);
  EXPECT_EQ(g.verdict->id, "compute_bound");
  EXPECT_EQ(g.verdict->findings, std::vector<std::string>{"power_capped"});
  EXPECT_FALSE(f->gpus[1].up);
  EXPECT_FALSE(f->gpus[1].verdict);

  auto only = RemoteReader::frame_of(gpus, "", {"GPU-b"});
  ASSERT_TRUE(only);
  ASSERT_EQ(only->gpus.size(), 1u);
  EXPECT_EQ(only->gpus[0].index, 1u);
  EXPECT_FALSE(RemoteReader::frame_of("<html>", "", {}));
}

TEST(TopRemoteReader, AFailingAgentIsAnErrorAndAMissingDiagnosisOnlyLeavesVerdictsOut) {
  RemoteReader down([](const std::string&) -> std::expected<std::string, std::string> {
    return std::unexpected("connection refused");
  });
  EXPECT_EQ(down.read().error(), "connection refused");
  RemoteReader no_diagnosis([](const std::string& path) -> std::expected<std::string, std::string> {
    if (path == "/api/v1/gpus") return R"({"gpus":[{"index":0,"up":true,"values":{}}]})";
    return std::unexpected("HTTP 404");
  });
  auto f = no_diagnosis.read();
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->gpus[0].verdict);
}

TEST(TopReadingFeed, PublishesReadingsAndErrorsAndNeverBlocksItsReaderOnASlowRead) {
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<int> calls{0};
  ReadingFeed feed(
      [&]() -> std::expected<Frame, std::string> {
        const int n = ++calls;
        if (n == 2) return std::unexpected("NVML: timeout");
        if (n == 3) released.wait();  // a hung driver call
        return frame_of({gpu(0, n, n)});
      },
      1ms);
  feed.start();
  auto s = feed.wait_for(1, 60s);
  ASSERT_EQ(s.sequence, 1u);
  ASSERT_TRUE(s.frame);
  // The third reading hangs: state() still answers, with the first reading, the error, and the reading under way.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (calls.load() < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  s = feed.state();
  EXPECT_EQ(s.sequence, 1u);
  EXPECT_TRUE(s.reading);
  EXPECT_EQ(s.error, "NVML: timeout");
  EXPECT_FALSE(feed.stop(10ms));  // still inside the read
  release.set_value();
  EXPECT_TRUE(feed.stop());
  EXPECT_EQ(feed.state().sequence, 2u);
  EXPECT_TRUE(feed.state().error.empty());
}

TEST(TopSourceView, ALateReadingIsReportedOnlyOnceItIsLate) {
  FeedState state;
  state.frame = std::make_shared<const Frame>();
  const auto t0 = std::chrono::steady_clock::time_point{} + 100s;
  state.reading = true;
  state.reading_since = t0;
  const TopUiOptions options{"x", 1000ms};
  EXPECT_FALSE(source_view(state, t0 - 1s, t0 + 1s, options).reading_for_seconds);
  const auto late = source_view(state, t0 - 1s, t0 + 3s, options);
  ASSERT_TRUE(late.reading_for_seconds);
  EXPECT_DOUBLE_EQ(*late.reading_for_seconds, 3);
  EXPECT_DOUBLE_EQ(*late.age_seconds, 4);
}

}  // namespace
}  // namespace gpuscope::top
