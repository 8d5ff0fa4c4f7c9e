// /metrics on a node with a GPU in MIG mode beside one that is not: which families are per MIG instance
// (the instance fields, with GPU_I_PROFILE and GPU_I_ID where dcgm-exporter puts them) and which stay per
// GPU, the MIG mode and instance-info gauges, the processes' instance labels, pods per instance, HPC jobs,
// a GPU instance with two compute instances, and MIG turned off at the next reading. Expected text is
// written out by hand from the values below.
#include "export/mig_metrics.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "export/exposition_parser.h"
#include "export/exposition_test_support.h"
#include "export/gpu_metrics.h"
#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::FieldValue;
using model::MetricType;

// GPU 0's labels up to modelName, and what follows it on every series (host, driver version).
constexpr std::string_view kMigExportGpu0Head =
    R"(gpu="0",UUID="GPU-5e5c1a8a-1111-2222-3333-444455556666",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
    R"(modelName="NVIDIA H100 80GB HBM3")";
constexpr std::string_view kMigExportTail = R"(Hostname="node01",DCGM_FI_DRIVER_VERSION="580.65.06")";
constexpr std::string_view kMigExportGpu1 =
    R"(gpu="1",UUID="GPU-77777777-1111-2222-3333-444455556666",pci_bus_id="00000000:2A:00.0",device="nvidia1",)"
    R"(modelName="NVIDIA H100 80GB HBM3",Hostname="node01",DCGM_FI_DRIVER_VERSION="580.65.06")";
constexpr std::string_view kMigExportTrainPod = R"(pod="train-0",namespace="ml",container="trainer")";
constexpr std::string_view kMigExportInferPod = R"(pod="infer-1",namespace="serving",container="server")";

model::MigInstanceSample mig_export_instance(unsigned device, unsigned gi, std::string profile, std::string uuid,
                                             unsigned sms, unsigned slices, double fb_used,
                                             std::optional<double> sm_active) {
  model::MigInstanceSample m;
  m.device_index = device;
  m.gpu_instance_id = gi;
  m.compute_instance_id = 0;
  m.profile = std::move(profile);
  m.uuid = std::move(uuid);
  m.sm_count = sms;
  m.gpu_instance_slices = slices;
  m[FieldId::kFbUsed] = FieldValue::of(fb_used);
  if (sm_active) m[FieldId::kSmActive] = FieldValue::of(*sm_active);
  return m;
}

model::ProcessSample mig_export_process(unsigned pid, std::uint64_t memory, std::optional<unsigned> gi,
                                        std::optional<unsigned> ci = 0) {
  model::ProcessSample p;
  p.pid = pid;
  p.used_memory_bytes = memory;
  p.gpu_instance_id = gi;
  if (gi) p.compute_instance_id = ci;
  p.identity.visible = true;
  p.identity.name = "python3";
  return p;
}

class MigExport : public ::testing::Test {
 protected:
  MigExport() {
    infos = {testing::h100_info(0), testing::h100_info(1)};
    infos[0].mig_enabled = true;
    set.fields = {{FieldId::kGpuTemp, MetricType::kGauge, "temp"},
                  {FieldId::kGpuUtil, MetricType::kGauge, "util"},
                  {FieldId::kFbUsed, MetricType::kGauge, "fb used"},
                  {FieldId::kSmActive, MetricType::kGauge, "sm active"}};

    // GPU 0 in MIG mode: three GPU instances of different profiles; the 2g.20gb's GPM has no ratio yet.
    // The GPU's own reading has its whole memory and whole-GPU GPM, which MIG mode keeps off /metrics.
    model::GpuSample g0;
    g0.index = 0;
    g0[FieldId::kGpuTemp] = FieldValue::of(45);
    g0[FieldId::kFbUsed] = FieldValue::of(40000);
    g0[FieldId::kSmActive] = FieldValue::of(0.3);
    g0.mig_enabled = true;
    g0.mig_instances = {
        mig_export_instance(0, 1, "3g.40gb", "MIG-aaaaaaaa-0000-5000-8000-000000000001", 60, 3, 30000, 0.5),
        mig_export_instance(1, 5, "2g.20gb", "MIG-aaaaaaaa-0000-5000-8000-000000000002", 32, 2, 1000, std::nullopt),
        mig_export_instance(2, 13, "1g.10gb", "MIG-aaaaaaaa-0000-5000-8000-000000000003", 16, 1, 9000, 0.25)};
    g0.mig_instances[0].kubernetes_pod = model::KubernetesPod{"train-0", "ml", "trainer"};
    g0.mig_instances[2].kubernetes_pod = model::KubernetesPod{"infer-1", "serving", "server"};
    // Two containers hold its instances: the GPU names the last, its processes outside an instance none.
    g0.kubernetes_pod = model::KubernetesPod{"infer-1", "serving", "server"};
    g0.kubernetes_gpu_shared = true;
    g0.processes = {mig_export_process(100, 2ULL << 30, 1), mig_export_process(200, 1ULL << 30, 13),
                    mig_export_process(300, 3ULL << 29, 9)};  // GPU instance 9 is not in the reading

    // GPU 1, MIG-capable, not in MIG mode.
    model::GpuSample g1;
    g1.index = 1;
    g1[FieldId::kGpuTemp] = FieldValue::of(50);
    g1[FieldId::kGpuUtil] = FieldValue::of(90);
    g1[FieldId::kFbUsed] = FieldValue::of(1234);
    g1[FieldId::kSmActive] = FieldValue::of(0.75);
    g1.processes = {mig_export_process(400, 1ULL << 29, std::nullopt)};
    snapshot.gpus = {g0, g1};
  }

  std::string render() {
    std::string out;
    ExpositionWriter w(ExpositionFormat::kPrometheusText, out);
    write_gpu_metrics(w, snapshot, infos, system, set, options);
    w.finish();
    return out;
  }

  static std::string gpu0(std::string_view pod = {}) {
    std::string s = std::string(kMigExportGpu0Head) + "," + std::string(kMigExportTail);
    if (!pod.empty()) s += "," + std::string(pod);
    return "{" + s;  // the caller closes it (a process series has more labels)
  }
  static std::string instance(std::string_view profile, unsigned gi, std::string_view pod = {}) {
    std::string s = std::string(kMigExportGpu0Head) + ",GPU_I_PROFILE=\"" + std::string(profile) + "\",GPU_I_ID=\"" +
                    std::to_string(gi) + "\"," + std::string(kMigExportTail);
    if (!pod.empty()) s += "," + std::string(pod);
    return "{" + s;
  }
  static std::string gpu1() { return "{" + std::string(kMigExportGpu1); }

  model::SystemInfo system = testing::sample_system();
  std::vector<model::GpuInfo> infos;
  model::Snapshot snapshot;
  MetricSet set;
  GpuMetricsOptions options;
};

TEST_F(MigExport, InstanceFieldsPerInstanceOthersPerGpuWithModeInfoAndProcessLabels) {
  const std::string i1 = instance("3g.40gb", 1, kMigExportTrainPod);
  const std::string i5 = instance("2g.20gb", 5);
  const std::string i13 = instance("1g.10gb", 13, kMigExportInferPod);
  const std::string proc = R"(,process_name="python3",container_id="")";
  const std::string expected =
      "# HELP DCGM_FI_DEV_GPU_TEMP temp\n"
      "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
      "DCGM_FI_DEV_GPU_TEMP" + gpu0(kMigExportInferPod) + "} 45\n"
      "DCGM_FI_DEV_GPU_TEMP" + gpu1() + "} 50\n"
      "# HELP DCGM_FI_DEV_GPU_UTIL util\n"
      "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
      "DCGM_FI_DEV_GPU_UTIL" + gpu1() + "} 90\n"
      "# HELP DCGM_FI_DEV_FB_USED fb used\n"
      "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
      "DCGM_FI_DEV_FB_USED" + i1 + "} 30000\n"
      "DCGM_FI_DEV_FB_USED" + i5 + "} 1000\n"
      "DCGM_FI_DEV_FB_USED" + i13 + "} 9000\n"
      "DCGM_FI_DEV_FB_USED" + gpu1() + "} 1234\n"
      "# HELP DCGM_FI_PROF_SM_ACTIVE sm active\n"
      "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n"
      "DCGM_FI_PROF_SM_ACTIVE" + i1 + "} 0.5\n"
      "DCGM_FI_PROF_SM_ACTIVE" + i13 + "} 0.25\n"
      "DCGM_FI_PROF_SM_ACTIVE" + gpu1() + "} 0.75\n"
      "# HELP gpuscope_gpu_up Whether the GPU answered NVML at the last reading (1) or is lost or unreachable (0).\n"
      "# TYPE gpuscope_gpu_up gauge\n"
      "gpuscope_gpu_up" + gpu0(kMigExportInferPod) + "} 1\n"
      "gpuscope_gpu_up" + gpu1() + "} 1\n"
      "# HELP gpuscope_mig_mode_enabled Whether the MIG-capable GPU is in MIG mode at the last reading (1) or not "
      "(0); in MIG mode its memory and profiling series are per MIG instance (GPU_I_ID).\n"
      "# TYPE gpuscope_mig_mode_enabled gauge\n"
      "gpuscope_mig_mode_enabled" + gpu0(kMigExportInferPod) + "} 1\n"
      "gpuscope_mig_mode_enabled" + gpu1() + "} 0\n"
      "# HELP gpuscope_mig_instance_info A MIG device of the GPU (1): its GPU instance's profile and ID, its compute "
      "instance ID and its own UUID (what CUDA_VISIBLE_DEVICES and the kubelet name).\n"
      "# TYPE gpuscope_mig_instance_info gauge\n"
      "gpuscope_mig_instance_info" + i1 + R"(,GPU_CI_ID="0",mig_uuid="MIG-aaaaaaaa-0000-5000-8000-000000000001"} 1)" "\n"
      "gpuscope_mig_instance_info" + i5 + R"(,GPU_CI_ID="0",mig_uuid="MIG-aaaaaaaa-0000-5000-8000-000000000002"} 1)" "\n"
      "gpuscope_mig_instance_info" + i13 + R"(,GPU_CI_ID="0",mig_uuid="MIG-aaaaaaaa-0000-5000-8000-000000000003"} 1)" "\n"
      "# HELP gpuscope_mig_instance_sms Streaming multiprocessors of the MIG device (the first one where its GPU "
      "instance has several compute instances).\n"
      "# TYPE gpuscope_mig_instance_sms gauge\n"
      "gpuscope_mig_instance_sms" + i1 + "} 60\n"
      "gpuscope_mig_instance_sms" + i5 + "} 32\n"
      "gpuscope_mig_instance_sms" + i13 + "} 16\n"
      "# HELP gpuscope_mig_instance_slices Compute slices of the GPU (of 7 on A100 and H100) the MIG device's GPU "
      "instance holds.\n"
      "# TYPE gpuscope_mig_instance_slices gauge\n"
      "gpuscope_mig_instance_slices" + i1 + "} 3\n"
      "gpuscope_mig_instance_slices" + i5 + "} 2\n"
      "gpuscope_mig_instance_slices" + i13 + "} 1\n"
      "# HELP gpuscope_process_memory_bytes GPU memory used by the process (in bytes).\n"
      "# TYPE gpuscope_process_memory_bytes gauge\n"
      // Largest first per GPU: 2 GiB in the 3g.40gb, 1.5 GiB in an instance the reading lacks (the GPU's
      // labels, and no pod: two containers share the GPU), 1 GiB in the 1g.10gb.
      "gpuscope_process_memory_bytes" + i1 + R"(,pid="100")" + proc + "} 2147483648\n"
      "gpuscope_process_memory_bytes" + gpu0() + R"(,pid="300")" + proc + "} 1610612736\n"
      "gpuscope_process_memory_bytes" + i13 + R"(,pid="200")" + proc + "} 1073741824\n"
      "gpuscope_process_memory_bytes" + gpu1() + R"(,pid="400")" + proc + "} 536870912\n"
      "# HELP gpuscope_process_series_dropped Processes on the GPU left out of the per-process series by "
      "--max-processes.\n"
      "# TYPE gpuscope_process_series_dropped gauge\n"
      "gpuscope_process_series_dropped" + gpu0() + "} 0\n"
      "gpuscope_process_series_dropped" + gpu1() + "} 0\n";
  EXPECT_EQ(render(), expected);
}

TEST_F(MigExport, SumOverANodeCountsEachMibOnce) {
  const auto p = testing::parse_exposition(render(), false);
  ASSERT_TRUE(p.has_value()) << p.error();
  double fb = 0;
  for (const auto* s : p->samples("DCGM_FI_DEV_FB_USED")) fb += s->value;
  EXPECT_EQ(fb, 30000 + 1000 + 9000 + 1234);  // the GPU's own 40000 is not added to its instances'
  EXPECT_EQ(p->samples("DCGM_FI_DEV_FB_USED", {{"gpu", "0"}}).size(), 3u);
  EXPECT_EQ(p->samples("DCGM_FI_DEV_FB_USED", {{"gpu", "0"}, {"GPU_I_ID", "5"}}).size(), 1u);
  // Temperature and power are the GPU's: once, never per instance.
  EXPECT_EQ(p->samples("DCGM_FI_DEV_GPU_TEMP", {{"gpu", "0"}}).size(), 1u);
  EXPECT_EQ(p->samples("DCGM_FI_DEV_GPU_TEMP", {{"GPU_I_ID", "1"}}).size(), 0u);
}

TEST_F(MigExport, MigTurnedOffAtTheNextReadingBringsTheGpuLevelSeriesBack) {
  const std::string before = render();
  EXPECT_NE(before.find("GPU_I_ID=\""), std::string::npos);
  auto& g0 = snapshot.gpus[0];
  g0.mig_enabled = false;
  g0.mig_instances.clear();
  g0.kubernetes_pod.reset();
  g0.kubernetes_gpu_shared = false;
  for (auto& p : g0.processes) {
    p.gpu_instance_id.reset();
    p.compute_instance_id.reset();
  }
  const std::string after = render();
  EXPECT_EQ(after.find("GPU_I_ID=\""), std::string::npos) << after;
  EXPECT_EQ(after.find("GPU_I_PROFILE=\""), std::string::npos) << after;
  EXPECT_EQ(after.find("gpuscope_mig_instance_"), std::string::npos) << after;
  EXPECT_NE(after.find("DCGM_FI_DEV_FB_USED" + gpu0() + "} 40000\n"), std::string::npos) << after;
  EXPECT_NE(after.find("DCGM_FI_PROF_SM_ACTIVE" + gpu0() + "} 0.3\n"), std::string::npos) << after;
  EXPECT_NE(after.find("gpuscope_mig_mode_enabled" + gpu0() + "} 0\n"), std::string::npos) << after;
  EXPECT_NE(after.find("gpuscope_process_memory_bytes" + gpu0() + R"(,pid="100",)"), std::string::npos) << after;
}

TEST_F(MigExport, MigModeWithoutInstancesKeepsTheFieldsAtGpuLevel) {
  snapshot.gpus[0].mig_instances.clear();
  const std::string text = render();
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED" + gpu0(kMigExportInferPod) + "} 40000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpuscope_mig_mode_enabled" + gpu0(kMigExportInferPod) + "} 1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpuscope_mig_instance_info"), std::string::npos) << text;
}

TEST_F(MigExport, AGpuWhoseMigModeIsUnknownHasNoModeSeries) {
  infos[1].mig_enabled.reset();  // not MIG-capable (GetMigMode NOT_SUPPORTED)
  const auto p = testing::parse_exposition(render(), false);
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->samples("gpuscope_mig_mode_enabled").size(), 1u);
  EXPECT_EQ(p->value("gpuscope_mig_mode_enabled", {{"gpu", "0"}}), 1);
}

TEST_F(MigExport, HpcJobsRepeatEachInstanceSeriesOncePerJob) {
  snapshot.gpus[0].hpc_jobs = {"j1", "j2"};
  const std::string text = render();
  for (const char* job : {"j1", "j2"}) {
    const std::string suffix = std::string(R"(,hpc_job=")") + job + "\"}";
    EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED" + instance("2g.20gb", 5) + suffix + " 1000\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED" + instance("3g.40gb", 1, kMigExportTrainPod) + suffix + " 30000\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("gpuscope_mig_instance_slices" + instance("1g.10gb", 13, kMigExportInferPod) + suffix + " 1\n"),
              std::string::npos)
        << text;
  }
  const auto p = testing::parse_exposition(text, false);
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->samples("DCGM_FI_DEV_FB_USED").size(), 3u * 2 + 1);
  EXPECT_EQ(p->samples("gpuscope_mig_instance_info").size(), 3u * 2);
}

TEST_F(MigExport, ATimeSlicedInstancesProcessesGetNoPodLabelsWhileItsSeriesNameTheLastContainer) {
  // The 3g.40gb time-sliced among several containers: kubernetes_pod names the last of them.
  snapshot.gpus[0].mig_instances[0].kubernetes_shared = true;
  const std::string text = render();
  const auto p = testing::parse_exposition(text, false);
  ASSERT_TRUE(p.has_value()) << p.error();
  // The instance's own series keep the container the labelling named (dcgm-exporter's rule for a shared GPU).
  EXPECT_EQ(p->value("DCGM_FI_DEV_FB_USED", {{"GPU_I_ID", "1"}, {"pod", "train-0"}}), 30000) << text;
  // Its process: the instance labels, no pod, namespace or container.
  const std::string process_line = "gpuscope_process_memory_bytes" + instance("3g.40gb", 1) +
                                   R"(,pid="100",process_name="python3",container_id=""} 2147483648)";
  EXPECT_NE(text.find(process_line + "\n"), std::string::npos) << text;
  const auto pid100 = p->samples("gpuscope_process_memory_bytes", {{"pid", "100"}});
  ASSERT_EQ(pid100.size(), 1u) << text;
  for (const char* label : {"pod", "namespace", "container"}) EXPECT_FALSE(pid100[0]->labels.contains(label)) << label;
  // The unshared 1g.10gb's process keeps its container.
  EXPECT_EQ(p->value("gpuscope_process_memory_bytes", {{"pid", "200"}, {"GPU_I_ID", "13"}, {"pod", "infer-1"}}),
            1 << 30);
}

TEST_F(MigExport, AGpuInstanceWithTwoComputeInstancesHasItsSeriesOnceAndAnInfoPerMigDevice) {
  auto& g0 = snapshot.gpus[0];
  // GPU instance 1 split in two compute instances: a second MIG device, in another container.
  auto second = g0.mig_instances[0];
  second.device_index = 3;
  second.compute_instance_id = 1;
  second.uuid = "MIG-aaaaaaaa-0000-5000-8000-000000000004";
  second.kubernetes_pod = model::KubernetesPod{"eval-2", "ml", "eval"};
  g0.mig_instances.push_back(second);
  g0.processes.push_back(mig_export_process(500, 1ULL << 20, 1, 1));
  const std::string text = render();
  const auto p = testing::parse_exposition(text, false);
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->samples("DCGM_FI_DEV_FB_USED", {{"GPU_I_ID", "1"}}).size(), 1u) << text;
  EXPECT_EQ(p->samples("gpuscope_mig_instance_sms", {{"GPU_I_ID", "1"}}).size(), 1u) << text;
  EXPECT_EQ(p->value("gpuscope_mig_instance_info", {{"GPU_I_ID", "1"}, {"GPU_CI_ID", "1"}, {"pod", "eval-2"}}), 1);
  EXPECT_EQ(p->value("gpuscope_mig_instance_info", {{"GPU_I_ID", "1"}, {"GPU_CI_ID", "0"}, {"pod", "train-0"}}), 1);
  // The process in compute instance 1 has its own MIG device's container.
  EXPECT_EQ(p->value("gpuscope_process_memory_bytes", {{"pid", "500"}, {"GPU_I_ID", "1"}, {"pod", "eval-2"}}),
            1 << 20);
  // No two lines of one family have the same labels.
  std::set<std::string> seen;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("#")) continue;
    EXPECT_TRUE(seen.insert(line.substr(0, line.rfind(' '))).second) << "duplicate series: " << line;
  }
}

TEST_F(MigExport, PromtoolAcceptsTheMigExposition) {
  constexpr const char* kMigExportPromtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(kMigExportPromtool)) GTEST_SKIP() << kMigExportPromtool << " is not installed";
  snapshot.gpus[0].hpc_jobs = {"j1"};
  const std::string text = render();
  const auto dir = std::filesystem::path(::testing::TempDir());
  const std::string stem = "mig_metrics_test_promtool_" + std::to_string(::getpid());
  const std::string metrics = (dir / (stem + ".prom")).string();
  const std::string report = (dir / (stem + ".out")).string();
  std::ofstream(metrics, std::ios::binary) << text;
  const std::string cmd =
      std::string(kMigExportPromtool) + " check metrics < '" + metrics + "' > '" + report + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = testing::read_file(report);
  std::filesystem::remove(metrics);
  std::filesystem::remove(report);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  // 0: clean, 3: lint problems only (modelName is camelCase, as dcgm-exporter spells it); 1: unparsable.
  ASSERT_TRUE(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3) << "exit " << WEXITSTATUS(status) << "\n" << out;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    EXPECT_NE(line.find("label names should be written in 'snake_case' not 'camelCase'"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace gpuscope::exporter
