#include "export/gpu_metrics.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "export/agent_metrics.h"
#include "export/exposition_parser.h"
#include "export/sample_gpus.h"
#include "export/exposition_test_support.h"

namespace gpuscope::exporter {
namespace {

using model::FieldCatalog;
using model::FieldId;
using model::FieldValue;
using model::MetricType;
using testing::ParsedExposition;

constexpr std::string_view kGpu0Labels =
    R"(gpu="0",UUID="GPU-5e5c1a8a-1111-2222-3333-444455556666",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
    R"(modelName="NVIDIA H100 80GB HBM3",Hostname="node01",DCGM_FI_DRIVER_VERSION="580.65.06")";

model::ProcessSample process(unsigned pid, std::optional<std::uint64_t> memory, std::string name,
                             std::string container = {}) {
  model::ProcessSample p;
  p.pid = pid;
  p.used_memory_bytes = memory;
  p.identity.visible = true;
  p.identity.name = std::move(name);
  p.identity.container_id = std::move(container);
  return p;
}

class GpuMetrics : public ::testing::Test {
 protected:
  GpuMetrics() { snapshot.gpus.push_back(testing::h100_sample(0)); }

  model::GpuSample& gpu(unsigned index) { return snapshot.gpus.at(index); }

  std::string render(ExpositionFormat format = ExpositionFormat::kPrometheusText) {
    std::string out;
    ExpositionWriter w(format, out);
    write_gpu_metrics(w, snapshot, infos, system, set, options);
    w.finish();
    return out;
  }

  ParsedExposition parsed(ExpositionFormat format = ExpositionFormat::kPrometheusText) {
    const std::string text = render(format);
    auto p = testing::parse_exposition(text, format == ExpositionFormat::kOpenMetrics);
    EXPECT_TRUE(p.has_value()) << p.error() << "\n" << text;
    return p.value_or(ParsedExposition{});
  }

  std::string gpu0_labels() { return gpu_labels(infos.at(0), system, set, options).text(); }

  model::SystemInfo system = testing::sample_system();
  std::vector<model::GpuInfo> infos{testing::h100_info(0)};
  model::Snapshot snapshot;
  MetricSet set = default_metric_set();
  GpuMetricsOptions options;
};

// --- labels ---

TEST_F(GpuMetrics, LabelsAreDcgmExportersInItsOrder) { EXPECT_EQ(gpu0_labels(), kGpu0Labels); }

TEST_F(GpuMetrics, LowercaseHostnameLabel) {
  options.hostname_label = HostnameLabel::kLowercase;
  EXPECT_EQ(gpu0_labels(),
            R"(gpu="0",UUID="GPU-5e5c1a8a-1111-2222-3333-444455556666",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
            R"(modelName="NVIDIA H100 80GB HBM3",hostname="node01",DCGM_FI_DRIVER_VERSION="580.65.06")");
}

TEST_F(GpuMetrics, NoHostnameLabel) {
  options.hostname_label = HostnameLabel::kNone;
  EXPECT_EQ(gpu0_labels(),
            R"(gpu="0",UUID="GPU-5e5c1a8a-1111-2222-3333-444455556666",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
            R"(modelName="NVIDIA H100 80GB HBM3",DCGM_FI_DRIVER_VERSION="580.65.06")");
}

TEST_F(GpuMetrics, DriverVersionLabelFollowsTheMetricSet) {
  set.driver_version_label = false;
  EXPECT_EQ(gpu0_labels(),
            R"(gpu="0",UUID="GPU-5e5c1a8a-1111-2222-3333-444455556666",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
            R"(modelName="NVIDIA H100 80GB HBM3",Hostname="node01")");
}

TEST_F(GpuMetrics, UnknownMinorNumberGivesAnEmptyDeviceAndValuesAreEscaped) {
  infos[0].minor_number.reset();
  infos[0].name = "Weird \"GPU\"\\x";
  system.hostname = "host\nname";
  EXPECT_EQ(gpu0_labels(),
            R"(gpu="0",UUID="GPU-5e5c1a8a-1111-2222-3333-444455556666",pci_bus_id="00000000:18:00.0",device="",)"
            R"(modelName="Weird \"GPU\"\\x",Hostname="host\nname",DCGM_FI_DRIVER_VERSION="580.65.06")");
}

TEST_F(GpuMetrics, EverySeriesCarriesTheHostLabelAsChosen) {
  snapshot.gpus[0].processes.push_back(process(10, 1 << 20, "python"));
  for (auto [choice, present, absent] :
       {std::tuple{HostnameLabel::kHostname, "Hostname", "hostname"},
        std::tuple{HostnameLabel::kLowercase, "hostname", "Hostname"},
        std::tuple{HostnameLabel::kNone, "", "Hostname"}}) {
    options.hostname_label = choice;
    const auto p = parsed();
    ASSERT_FALSE(p.families.empty());
    for (const auto& f : p.families) {
      for (const auto& s : f.samples) {
        if (*present != '\0') {
          EXPECT_EQ(s.labels.count(present), 1u) << s.name;
          EXPECT_EQ(s.labels.at(present), "node01");
        } else {
          EXPECT_EQ(s.labels.count("hostname"), 0u) << s.name;
        }
        EXPECT_EQ(s.labels.count(absent), 0u) << s.name;
      }
    }
  }
}

// --- a whole small exposition ---

TEST_F(GpuMetrics, OneGpuTwoFieldsTextExposition) {
  set = MetricSet{};
  set.driver_version_label = false;
  set.fields = {{FieldId::kGpuTemp, MetricType::kGauge, "GPU temperature (in C)."},
                {FieldId::kPowerViolation, MetricType::kCounter, "Throttling duration due to power constraints (in us)."}};
  options.hostname_label = HostnameLabel::kNone;
  model::GpuSample s;
  s.index = 0;
  s[FieldId::kGpuTemp] = FieldValue::of(45);
  s[FieldId::kPowerViolation] = FieldValue::of(1234567);  // ns
  s[FieldId::kFbUsed] = FieldValue::of(100);              // valid, but not in the set
  snapshot.gpus = {s};
  const std::string l =
      R"({gpu="0",UUID="GPU-5e5c1a8a-1111-2222-3333-444455556666",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
      R"(modelName="NVIDIA H100 80GB HBM3"})";
  EXPECT_EQ(render(),
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            "DCGM_FI_DEV_GPU_TEMP" + l + " 45\n"
            "# HELP DCGM_FI_DEV_POWER_VIOLATION Throttling duration due to power constraints (in us).\n"
            "# TYPE DCGM_FI_DEV_POWER_VIOLATION counter\n"
            "DCGM_FI_DEV_POWER_VIOLATION" + l + " 1234.567\n"
            "# HELP gpuscope_gpu_up Whether the GPU answered NVML at the last reading (1) or is lost or unreachable (0).\n"
            "# TYPE gpuscope_gpu_up gauge\n"
            "gpuscope_gpu_up" + l + " 1\n"
            "# HELP gpuscope_mig_mode_enabled Whether the MIG-capable GPU is in MIG mode at the last reading (1) or "
            "not (0); in MIG mode its memory and profiling series are per MIG instance (GPU_I_ID).\n"
            "# TYPE gpuscope_mig_mode_enabled gauge\n"
            "gpuscope_mig_mode_enabled" + l + " 0\n"
            "# HELP gpuscope_process_series_dropped Processes on the GPU left out of the per-process series by "
            "--max-processes.\n"
            "# TYPE gpuscope_process_series_dropped gauge\n"
            "gpuscope_process_series_dropped" + l + " 0\n");

  EXPECT_EQ(render(ExpositionFormat::kOpenMetrics),
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            "DCGM_FI_DEV_GPU_TEMP" + l + " 45\n"
            "# HELP DCGM_FI_DEV_POWER_VIOLATION Throttling duration due to power constraints (in us).\n"
            "# TYPE DCGM_FI_DEV_POWER_VIOLATION unknown\n"
            "DCGM_FI_DEV_POWER_VIOLATION" + l + " 1234.567\n"
            "# HELP gpuscope_gpu_up Whether the GPU answered NVML at the last reading (1) or is lost or unreachable (0).\n"
            "# TYPE gpuscope_gpu_up gauge\n"
            "gpuscope_gpu_up" + l + " 1\n"
            "# HELP gpuscope_mig_mode_enabled Whether the MIG-capable GPU is in MIG mode at the last reading (1) or "
            "not (0); in MIG mode its memory and profiling series are per MIG instance (GPU_I_ID).\n"
            "# TYPE gpuscope_mig_mode_enabled gauge\n"
            "gpuscope_mig_mode_enabled" + l + " 0\n"
            "# HELP gpuscope_process_series_dropped Processes on the GPU left out of the per-process series by "
            "--max-processes.\n"
            "# TYPE gpuscope_process_series_dropped gauge\n"
            "gpuscope_process_series_dropped" + l + " 0\n"
            "# EOF\n");
}

TEST_F(GpuMetrics, FamiliesUseTheSetsTypeAndHelp) {
  set.fields = {{FieldId::kGpuTemp, MetricType::kCounter, "my \"own\" help"}};
  const auto p = parsed();
  ASSERT_NE(p.family("DCGM_FI_DEV_GPU_TEMP"), nullptr);
  EXPECT_EQ(p.family("DCGM_FI_DEV_GPU_TEMP")->type, "counter");
  EXPECT_EQ(p.family("DCGM_FI_DEV_GPU_TEMP")->help, "my \"own\" help");
  EXPECT_EQ(p.family("DCGM_FI_DEV_GPU_UTIL"), nullptr);  // valid on the GPU but not in the set
}

TEST_F(GpuMetrics, DefaultSetValuesOfTheSampleGpu) {
  const auto p = parsed();
  const std::map<std::string, std::string> g0{{"gpu", "0"}};
  EXPECT_EQ(p.value("DCGM_FI_DEV_GPU_TEMP", g0), 45);
  EXPECT_EQ(p.value("DCGM_FI_DEV_GPU_UTIL", g0), 87);
  EXPECT_EQ(p.value("DCGM_FI_DEV_FB_USED", g0), 61234);
  EXPECT_EQ(p.value("DCGM_FI_DEV_POWER_USAGE", g0), 250.123);  // unscaled
  EXPECT_EQ(p.value("DCGM_FI_DEV_SM_CLOCK", g0), 1980);
  EXPECT_EQ(p.value("DCGM_FI_DEV_MEMORY_TEMP", g0), 52);
  EXPECT_EQ(p.value("DCGM_FI_DEV_ENC_UTIL", g0), 0);  // a valid 0 is written
}

// --- scale, unsupported ---

TEST_F(GpuMetrics, ViolationCountersGoFromNanosecondsToMicroseconds) {
  gpu(0)[FieldId::kPowerViolation] = FieldValue::of(1e9);
  gpu(0)[FieldId::kThermalViolation] = FieldValue::of(2500);
  gpu(0)[FieldId::kSyncBoostViolation] = FieldValue::of(0);
  gpu(0)[FieldId::kLowUtilViolation] = FieldValue::of(7000);
  const auto p = parsed();
  EXPECT_EQ(p.value("DCGM_FI_DEV_POWER_VIOLATION"), 1e6);
  EXPECT_EQ(p.value("DCGM_FI_DEV_THERMAL_VIOLATION"), 2.5);
  EXPECT_EQ(p.value("DCGM_FI_DEV_SYNC_BOOST_VIOLATION"), 0);
  EXPECT_EQ(p.value("DCGM_FI_DEV_LOW_UTIL_VIOLATION"), 7);
  const std::string text = render();
  EXPECT_NE(text.find(std::string("DCGM_FI_DEV_POWER_VIOLATION{") + std::string(kGpu0Labels) + "} 1000000\n"),
            std::string::npos)
      << text;
}

TEST_F(GpuMetrics, ARenamedDcgmFieldIsExportedUnderTheNameTheFileUses) {
  auto loaded = parse_metric_set("DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, reasons\n", "r.csv");
  ASSERT_TRUE(loaded.has_value());
  set = loaded->set;
  const std::string text = render();
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\""), std::string::npos) << text;
  EXPECT_EQ(text.find("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"), std::string::npos) << text;
}

TEST_F(GpuMetrics, AGpuSharedByHpcJobsHasEachSeriesOncePerJob) {
  gpu(0).hpc_jobs = {"1234", "5678"};
  const std::string text = render();
  const std::string temp = std::string("DCGM_FI_DEV_GPU_TEMP{") + std::string(kGpu0Labels);
  EXPECT_NE(text.find(temp + ",hpc_job=\"1234\"} 45\n"), std::string::npos) << text;
  EXPECT_NE(text.find(temp + ",hpc_job=\"5678\"} 45\n"), std::string::npos) << text;
  EXPECT_EQ(text.find(temp + "} 45\n"), std::string::npos) << "no series without the job label";
  EXPECT_NE(text.find(std::string("gpuscope_gpu_up{") + std::string(kGpu0Labels) + ",hpc_job=\"5678\"} 1\n"),
            std::string::npos)
      << text;
}

TEST_F(GpuMetrics, MicrosecondsPrintWithoutFloatNoise) {
  // 13 ns * 1e-3 is 0.013000000000000001 in doubles; 13 / 1000 prints as DCGM would.
  gpu(0)[FieldId::kThermalViolation] = FieldValue::of(13);
  const std::string text = render();
  EXPECT_NE(text.find(std::string("DCGM_FI_DEV_THERMAL_VIOLATION{") + std::string(kGpu0Labels) + "} 0.013\n"),
            std::string::npos)
      << text;
}

TEST_F(GpuMetrics, UnsupportedAndErrorFieldsAreAbsentNotZero) {
  gpu(0)[FieldId::kSmActive] = FieldValue::error(999);
  gpu(0)[FieldId::kFbFree] = FieldValue::unsupported();
  const std::string text = render();
  EXPECT_EQ(text.find("DCGM_FI_DEV_FB_FREE"), std::string::npos) << text;
  EXPECT_EQ(text.find("DCGM_FI_PROF_SM_ACTIVE"), std::string::npos) << text;
  EXPECT_EQ(text.find("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpuscope_pcie_link"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpuscope_xid_"), std::string::npos) << text;
}

TEST_F(GpuMetrics, AFieldOnlyOneGpuSupportsHasOnlyThatGpusSeries) {
  infos.push_back(testing::h100_info(1));
  snapshot.gpus.push_back(testing::h100_sample(1));
  gpu(0)[FieldId::kFbFree] = FieldValue::of(20325);
  const auto p = parsed();
  ASSERT_NE(p.family("DCGM_FI_DEV_FB_FREE"), nullptr);
  ASSERT_EQ(p.family("DCGM_FI_DEV_FB_FREE")->samples.size(), 1u);
  EXPECT_EQ(p.family("DCGM_FI_DEV_FB_FREE")->samples[0].labels.at("gpu"), "0");
  EXPECT_EQ(p.family("DCGM_FI_DEV_GPU_TEMP")->samples.size(), 2u);
}

// --- down GPUs ---

TEST_F(GpuMetrics, ADownGpuHasOnlyGpuUpZero) {
  infos.push_back(testing::h100_info(1));
  auto down = testing::h100_sample(1);
  down.up = false;
  down.down_error_code = 15;  // GPU_IS_LOST
  down[FieldId::kXidErrors] = FieldValue::of(79);
  down.events.xid_total = 1;
  down.events.xid_by_code[79] = 1;
  down[FieldId::kPcieLinkGenCurrent] = FieldValue::of(4);
  down.processes.push_back(process(42, 1 << 30, "python"));
  snapshot.gpus.push_back(down);
  // A GPU found at start that the snapshot lacks is down too.
  auto third = testing::h100_info(2);
  third.uuid = "GPU-33333333-1111-2222-3333-444455556666";
  infos.push_back(third);

  const auto p = parsed();
  for (const char* index : {"1", "2"}) {
    const auto series = [&] {
      std::vector<const testing::ParsedSample*> out;
      for (const auto& f : p.families) {
        for (const auto& s : f.samples) {
          if (s.labels.at("gpu") == index) out.push_back(&s);
        }
      }
      return out;
    }();
    ASSERT_EQ(series.size(), 1u) << "gpu " << index;
    EXPECT_EQ(series[0]->name, "gpuscope_gpu_up");
    EXPECT_EQ(series[0]->value, 0);
  }
  EXPECT_EQ(p.value("gpuscope_gpu_up", {{"gpu", "0"}}), 1);
  // Only GPU 0 watches XIDs: the down GPU's counts are not written.
  EXPECT_EQ(p.family("gpuscope_xid_events_total"), nullptr);
  EXPECT_EQ(p.family("gpuscope_pcie_link_gen"), nullptr);
  EXPECT_EQ(p.family("gpuscope_process_memory_bytes"), nullptr);
}

TEST_F(GpuMetrics, NoGpuUpMeansOnlyGpuUpSeries) {
  gpu(0).up = false;
  const std::string l = std::string("{") + std::string(kGpu0Labels) + "}";
  EXPECT_EQ(render(),
            "# HELP gpuscope_gpu_up Whether the GPU answered NVML at the last reading (1) or is lost or unreachable (0).\n"
            "# TYPE gpuscope_gpu_up gauge\n"
            "gpuscope_gpu_up" + l + " 0\n");
}

// --- XIDs ---

TEST_F(GpuMetrics, XidTotalsAndCountsByCode) {
  gpu(0)[FieldId::kXidErrors] = FieldValue::of(79);
  gpu(0).events.xid_total = 3;
  gpu(0).events.xid_by_code = {{79, 2}, {13, 1}};  // two equal XIDs in a row count 2
  gpu(0).events.last_xid = 79;
  const std::string l(kGpu0Labels);
  const std::string text = render();
  EXPECT_NE(text.find("# HELP gpuscope_xid_events_total XID errors reported by the driver since the agent started, "
                      "all codes; equal XIDs in a row all count.\n"
                      "# TYPE gpuscope_xid_events_total counter\n"
                      "gpuscope_xid_events_total{" + l + "} 3\n"
                      "# HELP gpuscope_xid_errors_total XID errors reported by the driver since the agent started, by "
                      "XID code.\n"
                      "# TYPE gpuscope_xid_errors_total counter\n"
                      "gpuscope_xid_errors_total{" + l + ",xid=\"13\"} 1\n"
                      "gpuscope_xid_errors_total{" + l + ",xid=\"79\"} 2\n"),
            std::string::npos)
      << text;
  const auto p = parsed();
  EXPECT_EQ(p.value("DCGM_FI_DEV_XID_ERRORS"), 79);
  EXPECT_EQ(p.value("gpuscope_xid_errors_total", {{"xid", "79"}}), 2);
  EXPECT_EQ(p.value("gpuscope_xid_errors_total", {{"xid", "13"}}), 1);
}

TEST_F(GpuMetrics, XidTotalStartsAtZeroWithoutCodeSeries) {
  gpu(0)[FieldId::kXidErrors] = FieldValue::of(0);
  const auto p = parsed();
  EXPECT_EQ(p.value("gpuscope_xid_events_total"), 0);
  EXPECT_EQ(p.family("gpuscope_xid_errors_total"), nullptr);
}

TEST_F(GpuMetrics, XidFamiliesInOpenMetricsDropTotal) {
  gpu(0)[FieldId::kXidErrors] = FieldValue::of(48);
  gpu(0).events.xid_total = 1;
  gpu(0).events.xid_by_code = {{48, 1}};
  const auto p = parsed(ExpositionFormat::kOpenMetrics);
  ASSERT_NE(p.family("gpuscope_xid_events"), nullptr);
  EXPECT_EQ(p.family("gpuscope_xid_events")->type, "counter");
  ASSERT_NE(p.family("gpuscope_xid_errors"), nullptr);
  EXPECT_EQ(p.value("gpuscope_xid_errors_total", {{"xid", "48"}}), 1);
  // DCGM's counters (no _total) stay under their names as unknown.
  ASSERT_NE(p.family("DCGM_FI_DEV_POWER_VIOLATION"), nullptr);
  EXPECT_EQ(p.family("DCGM_FI_DEV_POWER_VIOLATION")->type, "unknown");
}

// --- throttle reasons ---

TEST_F(GpuMetrics, ThrottleReasonsAreNvmlsBits) {
  const auto reasons = throttle_reasons();
  ASSERT_EQ(reasons.size(), 9u);
  EXPECT_EQ(reasons[0].bit, 0x1u);
  EXPECT_EQ(reasons[0].name, "gpu_idle");
  EXPECT_EQ(reasons[2].bit, 0x4u);
  EXPECT_EQ(reasons[2].name, "sw_power_cap");
  EXPECT_EQ(reasons[6].bit, 0x40u);
  EXPECT_EQ(reasons[6].name, "hw_thermal_slowdown");
  EXPECT_EQ(reasons[8].bit, 0x100u);
  EXPECT_EQ(reasons[8].name, "display_clock_setting");
}

TEST_F(GpuMetrics, OneThrottleSeriesPerReasonFromTheBitmask) {
  gpu(0)[FieldId::kClocksEventReasons] = FieldValue::of(0x44 | 0x1000);  // an unknown high bit is ignored
  const std::string l(kGpu0Labels);
  const std::string text = render();
  EXPECT_NE(text.find("# TYPE gpuscope_throttle_reason_active gauge\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"gpu_idle\"} 0\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"applications_clocks_setting\"} 0\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"sw_power_cap\"} 1\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"hw_slowdown\"} 0\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"sync_boost\"} 0\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"sw_thermal_slowdown\"} 0\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"hw_thermal_slowdown\"} 1\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"hw_power_brake_slowdown\"} 0\n"
                      "gpuscope_throttle_reason_active{" + l + ",reason=\"display_clock_setting\"} 0\n"),
            std::string::npos)
      << text;
}

TEST_F(GpuMetrics, NoThrottleSeriesWithoutTheBitmask) {
  gpu(0)[FieldId::kClocksEventReasons] = FieldValue::unsupported();
  EXPECT_EQ(parsed().family("gpuscope_throttle_reason_active"), nullptr);
}

TEST_F(GpuMetrics, IdleBitmaskZeroIsAllZero) {
  gpu(0)[FieldId::kClocksEventReasons] = FieldValue::of(0);
  const auto p = parsed();
  ASSERT_NE(p.family("gpuscope_throttle_reason_active"), nullptr);
  ASSERT_EQ(p.family("gpuscope_throttle_reason_active")->samples.size(), 9u);
  for (const auto& s : p.family("gpuscope_throttle_reason_active")->samples) EXPECT_EQ(s.value, 0) << s.labels.at("reason");
}

// --- PCIe link ---

TEST_F(GpuMetrics, PcieLinkSeries) {
  gpu(0)[FieldId::kPcieLinkGenCurrent] = FieldValue::of(4);
  gpu(0)[FieldId::kPcieLinkGenMax] = FieldValue::of(5);
  gpu(0)[FieldId::kPcieLinkWidthCurrent] = FieldValue::of(8);
  gpu(0)[FieldId::kPcieLinkWidthMax] = FieldValue::of(16);
  const std::string l(kGpu0Labels);
  const std::string text = render();
  EXPECT_NE(text.find("# HELP gpuscope_pcie_link_gen Current PCIe link generation.\n"
                      "# TYPE gpuscope_pcie_link_gen gauge\n"
                      "gpuscope_pcie_link_gen{" + l + "} 4\n"
                      "# HELP gpuscope_pcie_link_gen_max Maximum PCIe link generation of the GPU and its slot.\n"
                      "# TYPE gpuscope_pcie_link_gen_max gauge\n"
                      "gpuscope_pcie_link_gen_max{" + l + "} 5\n"
                      "# HELP gpuscope_pcie_link_width Current PCIe link width (lanes).\n"
                      "# TYPE gpuscope_pcie_link_width gauge\n"
                      "gpuscope_pcie_link_width{" + l + "} 8\n"
                      "# HELP gpuscope_pcie_link_width_max Maximum PCIe link width (lanes).\n"
                      "# TYPE gpuscope_pcie_link_width_max gauge\n"
                      "gpuscope_pcie_link_width_max{" + l + "} 16\n"),
            std::string::npos)
      << text;
}

TEST_F(GpuMetrics, PcieLinkOnlyWhereSupported) {
  gpu(0)[FieldId::kPcieLinkGenCurrent] = FieldValue::of(3);
  const auto p = parsed();
  EXPECT_EQ(p.value("gpuscope_pcie_link_gen"), 3);
  EXPECT_EQ(p.family("gpuscope_pcie_link_gen_max"), nullptr);
  EXPECT_EQ(p.family("gpuscope_pcie_link_width"), nullptr);
  EXPECT_EQ(p.family("gpuscope_pcie_link_width_max"), nullptr);
}

// --- price ---

TEST_F(GpuMetrics, HourlyPriceHasTheGpuLabelsAndTheTier) {
  options.hourly_price_dollars = {{0, 5.505}};
  options.price_tier = "spot";
  const std::string text = render();
  EXPECT_NE(text.find("# HELP gpuscope_gpu_hourly_price_dollars Price of the GPU in USD per GPU-hour from the price "
                      "catalog, in the pricing tier of the tier label.\n"
                      "# TYPE gpuscope_gpu_hourly_price_dollars gauge\n"
                      "gpuscope_gpu_hourly_price_dollars{" + std::string(kGpu0Labels) + ",tier=\"spot\"} 5.505\n"),
            std::string::npos)
      << text;
  // The same GPU labels as the DCGM series, so `on(UUID)` and `ignoring(tier)` joins match.
  const auto p = parsed();
  auto price = p.samples("gpuscope_gpu_hourly_price_dollars").at(0)->labels;
  price.erase("tier");
  EXPECT_EQ(price, p.samples("DCGM_FI_DEV_GPU_UTIL").at(0)->labels);
}

TEST_F(GpuMetrics, HourlyPriceAbsentForAnUnpricedModelNeverZero) {
  infos.push_back(testing::h100_info(1));
  infos[1].name = "NVIDIA H200";
  snapshot.gpus.push_back(testing::h100_sample(1));
  options.hourly_price_dollars = {{0, 5.505}};  // GPU 1's model is not in the catalog
  options.price_tier = "on_demand";
  const auto p = parsed();
  ASSERT_EQ(p.samples("gpuscope_gpu_hourly_price_dollars").size(), 1u);
  EXPECT_EQ(p.value("gpuscope_gpu_hourly_price_dollars", {{"gpu", "0"}, {"tier", "on_demand"}}), 5.505);
  EXPECT_TRUE(p.samples("gpuscope_gpu_hourly_price_dollars", {{"gpu", "1"}}).empty());

  options.hourly_price_dollars.clear();  // no catalog, or no GPU priced: no family at all
  EXPECT_EQ(render().find("gpuscope_gpu_hourly_price"), std::string::npos);
}

TEST_F(GpuMetrics, HourlyPriceStaysWhileAGpuIsDownAndFollowsHpcJobs) {
  options.hourly_price_dollars = {{0, 3.673}};
  options.price_tier = "on_demand";
  gpu(0).hpc_jobs = {"1234", "5678"};
  auto p = parsed();
  EXPECT_EQ(p.value("gpuscope_gpu_hourly_price_dollars", {{"hpc_job", "1234"}}), 3.673);
  EXPECT_EQ(p.value("gpuscope_gpu_hourly_price_dollars", {{"hpc_job", "5678"}}), 3.673);
  // A lost GPU is still paid for.
  gpu(0).up = false;
  gpu(0).hpc_jobs.clear();
  p = parsed();
  EXPECT_EQ(p.value("gpuscope_gpu_up"), 0);
  EXPECT_EQ(p.value("gpuscope_gpu_hourly_price_dollars"), 3.673);
}

// --- processes ---

TEST_F(GpuMetrics, AProcessInAKubernetesPodCarriesItsPodUid) {
  auto in_pod = process(100, 1ULL << 30, "python", "0123abcd");
  in_pod.identity.pod_uid = "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d";
  gpu(0).processes = {in_pod, process(200, 2ULL << 30, "host")};
  const std::string l(kGpu0Labels);
  const std::string text = render();
  EXPECT_NE(text.find("gpuscope_process_memory_bytes{" + l +
                      ",pid=\"100\",process_name=\"python\",container_id=\"0123abcd\","
                      "pod_uid=\"1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d\"} 1073741824\n"),
            std::string::npos)
      << text;
  // A process outside a pod has no such label at all.
  EXPECT_NE(text.find("gpuscope_process_memory_bytes{" + l + ",pid=\"200\",process_name=\"host\",container_id=\"\"} "),
            std::string::npos)
      << text;
}

TEST_F(GpuMetrics, ProcessSeriesLargestMemoryFirstUpToTheLimit) {
  options.max_processes_per_gpu = 2;
  auto p100 = process(100, 1ULL << 30, "python", "0123abcd");
  p100.sm_util_percent = 50;
  p100.mem_util_percent = 25;
  gpu(0).processes = {p100, process(200, 4ULL << 30, "train \"x\"\\y"), process(300, std::nullopt, "idle"),
                      process(400, 512ULL << 20, "small")};
  const std::string l(kGpu0Labels);
  const std::string text = render();
  EXPECT_NE(text.find("# HELP gpuscope_process_memory_bytes GPU memory used by the process (in bytes).\n"
                      "# TYPE gpuscope_process_memory_bytes gauge\n"
                      "gpuscope_process_memory_bytes{" + l +
                      ",pid=\"200\",process_name=\"train \\\"x\\\"\\\\y\",container_id=\"\"} 4294967296\n"
                      "gpuscope_process_memory_bytes{" + l +
                      ",pid=\"100\",process_name=\"python\",container_id=\"0123abcd\"} 1073741824\n"
                      "# HELP gpuscope_process_sm_utilization_ratio Share of the GPU's SM time the process used (0 to "
                      "1).\n"
                      "# TYPE gpuscope_process_sm_utilization_ratio gauge\n"
                      "gpuscope_process_sm_utilization_ratio{" + l +
                      ",pid=\"100\",process_name=\"python\",container_id=\"0123abcd\"} 0.5\n"
                      "# HELP gpuscope_process_memory_utilization_ratio Share of the GPU's memory-interface time the "
                      "process used (0 to 1).\n"
                      "# TYPE gpuscope_process_memory_utilization_ratio gauge\n"
                      "gpuscope_process_memory_utilization_ratio{" + l +
                      ",pid=\"100\",process_name=\"python\",container_id=\"0123abcd\"} 0.25\n"
                      "# HELP gpuscope_process_series_dropped Processes on the GPU left out of the per-process series "
                      "by --max-processes.\n"
                      "# TYPE gpuscope_process_series_dropped gauge\n"
                      "gpuscope_process_series_dropped{" + l + "} 2\n"),
            std::string::npos)
      << text;
  const auto p = parsed();
  EXPECT_EQ(p.value("gpuscope_process_memory_bytes", {{"process_name", "train \"x\"\\y"}}), 4294967296.0);
  EXPECT_TRUE(p.samples("gpuscope_process_memory_bytes", {{"pid", "300"}}).empty());
  EXPECT_TRUE(p.samples("gpuscope_process_memory_bytes", {{"pid", "400"}}).empty());
}

TEST_F(GpuMetrics, AProcessWithoutMemoryStillGetsItsOtherSeries) {
  auto p = process(7, std::nullopt, "graphics");
  p.sm_util_percent = 12;
  gpu(0).processes = {p};
  const auto e = parsed();
  EXPECT_EQ(e.family("gpuscope_process_memory_bytes"), nullptr);
  EXPECT_EQ(e.value("gpuscope_process_sm_utilization_ratio", {{"pid", "7"}}), 0.12);
  EXPECT_EQ(e.family("gpuscope_process_memory_utilization_ratio"), nullptr);
  EXPECT_EQ(e.value("gpuscope_process_series_dropped"), 0);
}

TEST_F(GpuMetrics, APidListedTwiceHasOneSeries) {
  auto compute = process(4242, 2ULL << 30, "python");
  auto graphics = process(4242, 1ULL << 30, "python");
  graphics.kind = model::ProcessKind::kGraphics;
  gpu(0).processes = {compute, graphics, process(5, 1 << 20, "other")};
  const auto p = parsed();
  const auto series = p.samples("gpuscope_process_memory_bytes", {{"pid", "4242"}});
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0]->value, 2.0 * (1ULL << 30));  // the first listing
  EXPECT_EQ(p.family("gpuscope_process_memory_bytes")->samples.size(), 2u);
  EXPECT_EQ(p.value("gpuscope_process_series_dropped"), 0);
}

TEST_F(GpuMetrics, DefaultLimitKeepsTheSixtyFourLargest) {
  for (unsigned pid = 1; pid <= 70; ++pid) gpu(0).processes.push_back(process(pid, pid * 1000ULL, "w"));
  const auto p = parsed();
  ASSERT_NE(p.family("gpuscope_process_memory_bytes"), nullptr);
  const auto& samples = p.family("gpuscope_process_memory_bytes")->samples;
  ASSERT_EQ(samples.size(), 64u);
  EXPECT_EQ(samples.front().labels.at("pid"), "70");
  EXPECT_EQ(samples.back().labels.at("pid"), "7");
  EXPECT_EQ(p.value("gpuscope_process_series_dropped"), 6);
}

TEST_F(GpuMetrics, ZeroLimitCountsEveryProcessAsDropped) {
  options.max_processes_per_gpu = 0;
  gpu(0).processes = {process(1, 10, "a"), process(2, 20, "b"), process(2, 20, "b")};
  const auto p = parsed();
  EXPECT_EQ(p.family("gpuscope_process_memory_bytes"), nullptr);
  EXPECT_EQ(p.value("gpuscope_process_series_dropped"), 2);
}

TEST_F(GpuMetrics, DroppedCountsArePerGpu) {
  infos.push_back(testing::h100_info(1));
  snapshot.gpus.push_back(testing::h100_sample(1));
  options.max_processes_per_gpu = 1;
  gpu(0).processes = {process(1, 10, "a"), process(2, 20, "b"), process(3, 30, "c")};
  gpu(1).processes = {process(9, 10, "z")};
  const auto p = parsed();
  EXPECT_EQ(p.value("gpuscope_process_series_dropped", {{"gpu", "0"}}), 2);
  EXPECT_EQ(p.value("gpuscope_process_series_dropped", {{"gpu", "1"}}), 0);
  EXPECT_EQ(p.value("gpuscope_process_memory_bytes", {{"gpu", "0"}}), 30);
  EXPECT_EQ(p.value("gpuscope_process_memory_bytes", {{"gpu", "1"}}), 10);
}

TEST_F(GpuMetrics, UnreadableProcessListHasNoProcessSeries) {
  gpu(0).processes = {process(1, 10, "stale")};
  gpu(0).processes_error_code = 999;
  const std::string text = render();
  EXPECT_EQ(text.find("gpuscope_process_"), std::string::npos) << text;
}

// --- a full exposition: parse-back and promtool ---

// Two busy GPUs with every catalog field valid, processes and XIDs.
class FullExposition : public GpuMetrics {
 protected:
  FullExposition() {
    infos = {testing::h100_info(0), testing::h100_info(1)};
    options.hourly_price_dollars = {{0, 5.505}, {1, 5.505}};
    options.price_tier = "on_demand";
    snapshot.gpus.clear();
    for (unsigned i = 0; i < 2; ++i) {
      model::GpuSample s = testing::h100_sample(i);
      for (const auto& f : FieldCatalog::all()) {
        if (!s[f.id].valid()) s[f.id] = FieldValue::of(f.unit == "ratio" ? 0.25 + i * 0.5 : 10.0 + i);
      }
      s[FieldId::kClocksEventReasons] = FieldValue::of(i == 0 ? 0x4 : 0x60);
      s[FieldId::kXidErrors] = FieldValue::of(i == 0 ? 79 : 0);
      if (i == 0) {
        s.events.xid_total = 3;
        s.events.xid_by_code = {{79, 2}, {13, 1}};
        s.events.last_xid = 79;
      }
      auto p1 = process(1000 + i, 8ULL << 30, "python3", "e3b0c44298fc1c149afbf4c8996fb924");
      p1.sm_util_percent = 71;
      p1.mem_util_percent = 33;
      s.processes = {p1, process(2000 + i, 1ULL << 30, "nvidia-smi"), process(3000 + i, std::nullopt, "Xorg")};
      snapshot.gpus.push_back(s);
    }
    // Every field with a DCGM name, not only the defaults, so all of them meet the linter.
    set.fields.clear();
    for (const auto& f : FieldCatalog::all()) {
      if (!f.dcgm_name.empty()) set.fields.push_back({f.id, f.type, std::string(f.help)});
    }
    snapshot.collector_durations = {std::chrono::microseconds(900), std::chrono::microseconds(300),
                                    std::chrono::microseconds(150)};
  }

  std::string render_all(ExpositionFormat format) {
    std::string out;
    ExpositionWriter w(format, out);
    write_gpu_metrics(w, snapshot, infos, system, set, options);
    AgentStatus status;
    status.sample_age_seconds = 0.4;
    status.sample_duration_seconds = 0.0012;
    status.interval_seconds = 1;
    status.samples_total = 120;
    status.overruns_total = 1;
    status.collectors = collector_results(snapshot);
    status.config_reload_timestamp_seconds = 1767226200;
    status.version = "0.1.0";
    status.process = ProcessUsage{1.25, 12e6, 300e6, 1767226000, 12, 1024};
    write_agent_metrics(w, status);
    w.finish();
    return out;
  }
};

TEST_F(FullExposition, ParsesBackInBothFormats) {
  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    const bool om = format == ExpositionFormat::kOpenMetrics;
    const std::string text = render_all(format);
    auto p = testing::parse_exposition(text, om);
    ASSERT_TRUE(p.has_value()) << p.error() << "\n" << text;
    for (const auto& f : set.fields) {
      const auto name = FieldCatalog::get(f.id).dcgm_name;
      ASSERT_NE(p->family(name), nullptr) << name;
      EXPECT_EQ(p->family(name)->samples.size(), 2u) << name;
    }
    const std::string xid_family = om ? "gpuscope_xid_errors" : "gpuscope_xid_errors_total";
    ASSERT_NE(p->family(xid_family), nullptr);
    EXPECT_EQ(p->family(xid_family)->type, "counter");
    EXPECT_EQ(p->value("gpuscope_xid_errors_total", {{"gpu", "0"}, {"xid", "79"}}), 2);
    EXPECT_EQ(p->value("gpuscope_xid_events_total", {{"gpu", "1"}}), 0);
    EXPECT_EQ(p->value("gpuscope_throttle_reason_active", {{"gpu", "1"}, {"reason", "sw_thermal_slowdown"}}), 1);
    EXPECT_EQ(p->value("gpuscope_process_memory_bytes", {{"gpu", "1"}, {"pid", "1001"}}), 8.0 * (1ULL << 30));
    EXPECT_EQ(p->value("gpuscope_process_sm_utilization_ratio", {{"gpu", "0"}, {"pid", "1000"}}), 0.71);
    EXPECT_EQ(p->value("DCGM_FI_PROF_SM_ACTIVE", {{"gpu", "1"}}), 0.75);
    EXPECT_EQ(p->value("gpuscope_collector_success", {{"collector", "device"}}), 1);
    EXPECT_EQ(p->value("gpuscope_gpu_hourly_price_dollars", {{"gpu", "1"}}), 5.505);
    EXPECT_EQ(p->value("process_cpu_seconds_total"), 1.25);
    ASSERT_NE(p->family(om ? "process_cpu_seconds" : "process_cpu_seconds_total"), nullptr);
    EXPECT_EQ(p->family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")->type, om ? "unknown" : "counter");
  }
}

TEST_F(FullExposition, PromtoolFindsOnlyDcgmCompatibilityProblems) {
  constexpr const char* kPromtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(kPromtool)) GTEST_SKIP() << kPromtool << " is not installed";

  const std::string text = render_all(ExpositionFormat::kPrometheusText);
  const auto dir = std::filesystem::path(::testing::TempDir());
  const std::string stem = "gpu_metrics_test_promtool_" + std::to_string(::getpid());  // runs may overlap
  const std::string metrics = (dir / (stem + ".prom")).string();
  const std::string report = (dir / (stem + ".out")).string();
  std::ofstream(metrics, std::ios::binary) << text;
  const std::string cmd = std::string(kPromtool) + " check metrics < '" + metrics + "' > '" + report + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = testing::read_file(report);
  std::filesystem::remove(metrics);
  std::filesystem::remove(report);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  // 0: clean, 3: lint problems; anything else (1: could not parse) is a failure.
  ASSERT_TRUE(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3) << "exit " << WEXITSTATUS(status) << "\n" << out;

  const std::set<std::string> any_family{"label names should be written in 'snake_case' not 'camelCase'"};
  const std::set<std::string> dcgm_only{"counter metrics should have \"_total\" suffix",
                                        "metric name should not include type 'counter'"};
  std::istringstream lines(out);
  std::string line;
  std::size_t camel = 0;
  std::set<std::string> flagged;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto sp = line.find(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    const std::string metric = line.substr(0, sp);
    const std::string problem = line.substr(sp + 1);
    flagged.insert(metric);
    if (any_family.contains(problem)) {
      ++camel;
      continue;
    }
    EXPECT_TRUE(metric.starts_with("DCGM_FI_") && dcgm_only.contains(problem)) << "unexpected: " << line;
  }
  // The linter did run: every family carrying the GPU labels has modelName.
  EXPECT_GT(camel, 10u) << out;
  EXPECT_TRUE(flagged.contains("gpuscope_gpu_up")) << out;
  EXPECT_FALSE(flagged.contains("gpuscope_build_info")) << out;
  EXPECT_FALSE(flagged.contains("process_cpu_seconds_total")) << out;
}

}  // namespace
}  // namespace gpuscope::exporter
