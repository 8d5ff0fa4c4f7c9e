// The watcher against a fake kubelet on a Unix socket: allocation changes, a pod gone, a kubelet restarted
// on the same socket, a kubelet that hangs (readers are never held up; the call fails at its deadline and
// counts), and the last map dropped once it is too old.
#include "kubernetes/pod_resources_watcher.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fake_kubelet.h"

namespace gpuscope::kubernetes {
namespace {

using kubernetes_test::FakeKubelet;
using kubernetes_test::gpu_pod;

constexpr const char* kWatchedGpu = "GPU-0a0a0a0a-1b1b-2c2c-3d3d-4e4e4e4e4e4e";
constexpr const char* kOtherGpu = "GPU-9f9f9f9f-8e8e-7d7d-6c6c-5b5b5b5b5b5b";

// The value of the unlabelled sample `name` in exposition `text`; NaN when absent.
double watcher_metric_value(const std::string& text, const std::string& name) {
  const std::string head = "\n" + name + " ";
  const auto at = ("\n" + text).find(head);
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + head.size() - 1));
}

struct WatcherSocketDir {
  std::filesystem::path path;
  WatcherSocketDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuscope-kubelet-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~WatcherSocketDir() { std::filesystem::remove_all(path); }
  std::string socket() const { return (path / "kubelet.sock").string(); }
};

class PodResourcesWatcherTest : public testing::Test {
 protected:
  PodResourcesOptions options() const {
    PodResourcesOptions o;
    o.socket_path = dir_.socket();
    o.refresh_interval = std::chrono::seconds(10);
    // Short, so the hung case ends quickly: the tests assert order and counts, never how long it took.
    o.deadline = std::chrono::milliseconds(300);
    o.keep_stale = std::chrono::seconds(60);
    return o;
  }
  std::string pod_of(const PodResourcesWatcher& w, const char* uuid) const {
    const auto map = w.current();
    const auto* pod = map->find(uuid);
    return pod == nullptr ? "" : pod->namespace_name + "/" + pod->pod + "/" + pod->container;
  }

  WatcherSocketDir dir_;
  model::VirtualClock clock_;
  std::ostringstream log_text_;
  log::Logger log_{log_text_, log::Level::kInfo};
};

TEST_F(PodResourcesWatcherTest, AllocationChangesShowAtTheNextRefreshAndAPodGoneLeavesItsGpuUnlabelled) {
  FakeKubelet kubelet(dir_.socket());
  kubelet.set_pods({gpu_pod("train-0", "ml", "trainer", {kWatchedGpu})});
  PodResourcesWatcher watcher(options(), clock_, log_);
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "");  // before the first answer
  ASSERT_TRUE(watcher.refresh());
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-0/trainer");
  EXPECT_EQ(pod_of(watcher, kOtherGpu), "");

  // The pod is replaced by another on the same GPU, and a second pod takes the other GPU.
  kubelet.set_pods({gpu_pod("train-1", "ml", "trainer", {kWatchedGpu}), gpu_pod("eval", "qa", "runner", {kOtherGpu})});
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-0/trainer");  // not before the next refresh
  ASSERT_TRUE(watcher.refresh());
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-1/trainer");
  EXPECT_EQ(pod_of(watcher, kOtherGpu), "qa/eval/runner");
  EXPECT_EQ(watcher.stats().pods, 2u);

  kubelet.set_pods({gpu_pod("eval", "qa", "runner", {kOtherGpu})});
  ASSERT_TRUE(watcher.refresh());
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "");
  EXPECT_EQ(pod_of(watcher, kOtherGpu), "qa/eval/runner");
  const auto stats = watcher.stats();
  EXPECT_EQ(stats.refreshes, 3u);
  EXPECT_EQ(stats.failures, 0u);
  EXPECT_EQ(stats.pods, 1u);
  EXPECT_EQ(stats.last_success, clock_.wall());
  EXPECT_EQ(kubelet.lists_answered(), 3);
}

TEST_F(PodResourcesWatcherTest, AKubeletRestartedOnTheSameSocketIsReadAgainAtTheNextRefresh) {
  auto kubelet = std::make_unique<FakeKubelet>(dir_.socket());
  kubelet->set_pods({gpu_pod("train-0", "ml", "trainer", {kWatchedGpu})});
  PodResourcesWatcher watcher(options(), clock_, log_);
  ASSERT_TRUE(watcher.refresh());

  kubelet->stop();
  EXPECT_FALSE(watcher.refresh());
  EXPECT_FALSE(watcher.refresh());
  // Within keep_stale the last answer still labels the GPU: pods keep their GPUs while the kubelet restarts.
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-0/trainer");
  EXPECT_EQ(watcher.stats().failures, 2u);
  EXPECT_FALSE(watcher.stats().last_error.empty());

  kubelet->set_pods({gpu_pod("train-2", "ml", "trainer", {kWatchedGpu})});
  kubelet->start();
  EXPECT_TRUE(watcher.refresh());
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-2/trainer");
  EXPECT_TRUE(watcher.stats().last_error.empty());
  // One warning when it failed, one line when it answered again; not one per failed refresh.
  const std::string text = log_text_.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_NE(text.find("answers again"), std::string::npos) << text;
}

TEST_F(PodResourcesWatcherTest, TheLastMapIsDroppedOnceTheKubeletHasBeenGoneLongerThanKeepStale) {
  auto kubelet = std::make_unique<FakeKubelet>(dir_.socket());
  kubelet->set_pods({gpu_pod("train-0", "ml", "trainer", {kWatchedGpu})});
  PodResourcesWatcher watcher(options(), clock_, log_);
  ASSERT_TRUE(watcher.refresh());
  kubelet.reset();  // gone, socket and all

  clock_.advance(options().keep_stale);  // exactly keep_stale: still kept
  EXPECT_FALSE(watcher.refresh());
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-0/trainer");
  clock_.advance(std::chrono::seconds(1));
  EXPECT_FALSE(watcher.refresh());
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "");
  EXPECT_EQ(watcher.stats().pods, 0u);
  EXPECT_EQ(watcher.stats().failures, 2u);
  EXPECT_NE(log_text_.str().find("pod labels dropped"), std::string::npos);
}

TEST_F(PodResourcesWatcherTest, AKubeletThatNeverAnsweredIsCountedAndLabelsNothing) {
  PodResourcesWatcher watcher(options(), clock_, log_);  // no kubelet at all
  EXPECT_FALSE(watcher.refresh());
  EXPECT_EQ(watcher.stats().failures, 1u);
  EXPECT_FALSE(watcher.stats().last_success.has_value());
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "");
}

TEST_F(PodResourcesWatcherTest, AHungKubeletNeverHoldsUpReadersAndItsCallFailsAtTheDeadline) {
  FakeKubelet kubelet(dir_.socket());
  kubelet.set_pods({gpu_pod("train-0", "ml", "trainer", {kWatchedGpu})});
  PodResourcesWatcher watcher(options(), clock_, log_);
  ASSERT_TRUE(watcher.refresh());

  kubelet.set_pods({gpu_pod("train-1", "ml", "trainer", {kWatchedGpu})});
  kubelet.hang();
  watcher.start();  // its first refresh now blocks in the kubelet
  ASSERT_TRUE(kubelet.wait_for_lists_started(2, std::chrono::seconds(30)));
  // While the handler is blocked, a reader gets the last map at once: the label a reading takes.
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-0/trainer");
  EXPECT_EQ(kubelet.lists_answered(), 1);  // proof the call was still in the kubelet when the reader read

  // The call is given up at its deadline (the handler is still blocked) and counted as a failure.
  ASSERT_TRUE(watcher.wait_for_refreshes(2, std::chrono::seconds(30)));
  EXPECT_EQ(watcher.stats().failures, 1u);
  EXPECT_NE(watcher.stats().last_error.find("deadline"), std::string::npos) << watcher.stats().last_error;
  EXPECT_EQ(kubelet.lists_answered(), 1);
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-0/trainer");

  // Unhung, the next refresh (one interval later on the watcher's clock) sees the new pod.
  kubelet.release();
  while (clock_.waiters() == 0) std::this_thread::yield();
  clock_.advance(options().refresh_interval);
  ASSERT_TRUE(watcher.wait_for_refreshes(3, std::chrono::seconds(30)));
  EXPECT_EQ(pod_of(watcher, kWatchedGpu), "ml/train-1/trainer");
  watcher.stop();
}

TEST_F(PodResourcesWatcherTest, StopCancelsAListTheKubeletHoldsInsteadOfWaitingForIt) {
  FakeKubelet kubelet(dir_.socket());
  kubelet.hang();
  auto o = options();
  o.deadline = std::chrono::hours(1);  // only the cancel can end this call
  PodResourcesWatcher watcher(o, clock_, log_);
  watcher.start();
  ASSERT_TRUE(kubelet.wait_for_lists_started(1, std::chrono::seconds(30)));
  watcher.stop();  // returns: the test would hang here otherwise
  EXPECT_EQ(watcher.stats().refreshes, 1u);
  EXPECT_EQ(kubelet.lists_answered(), 0);
}

TEST_F(PodResourcesWatcherTest, MetricsSayRefreshesFailuresLastSuccessAndPods) {
  FakeKubelet kubelet(dir_.socket());
  kubelet.set_pods({gpu_pod("a", "ns", "c", {kWatchedGpu}), gpu_pod("b", "ns", "c", {kOtherGpu}),
                    gpu_pod("cpu-only", "ns", "c", {"0"}, "cpu")});
  PodResourcesWatcher watcher(options(), clock_, log_);
  ASSERT_TRUE(watcher.refresh());
  kubelet.stop();
  EXPECT_FALSE(watcher.refresh());
  std::string text;
  exporter::ExpositionWriter writer(exporter::ExpositionFormat::kPrometheusText, text);
  watcher.write_metrics(writer);
  writer.finish();
  const double success_s = std::chrono::duration<double>(clock_.wall().time_since_epoch()).count();
  EXPECT_EQ(watcher_metric_value(text, "gpuscope_kubernetes_refreshes_total"), 2.0) << text;
  EXPECT_EQ(watcher_metric_value(text, "gpuscope_kubernetes_refresh_failures_total"), 1.0) << text;
  EXPECT_EQ(watcher_metric_value(text, "gpuscope_kubernetes_pods"), 2.0) << text;  // the CPU-only pod holds no GPU
  EXPECT_DOUBLE_EQ(watcher_metric_value(text, "gpuscope_kubernetes_last_refresh_success_timestamp_seconds"), success_s)
      << text;
  EXPECT_GE(watcher_metric_value(text, "gpuscope_kubernetes_refresh_duration_seconds"), 0.0) << text;
}

}  // namespace
}  // namespace gpuscope::kubernetes
