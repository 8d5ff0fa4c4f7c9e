// The health gate from hand-made readings: each check fails on the values that mean trouble, passes on
// sound ones, and is "not checked" (never passed) when the GPU does not report what it needs; --fail-on
// decides what fails the gate; the text and JSON say what decided each verdict.
#include "analysis/health_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/health_report_format.h"

namespace gpuscope::analysis::health_checks_test {

using model::FieldId;
using model::FieldValue;
using ::testing::HasSubstr;

// A sound H100 at work: every value the checks read is present and fine.
struct Node {
  std::vector<model::GpuInfo> gpus;
  model::Snapshot snapshot;
  model::SystemInfo system;

  explicit Node(unsigned count) {
    system.driver_version = "550.54.15";
    system.cuda_driver_version = 12040;
    for (unsigned i = 0; i < count; ++i) {
      model::GpuInfo info;
      info.index = i;
      info.name = "NVIDIA H100 80GB HBM3";
      info.uuid = "GPU-0000000" + std::to_string(i);
      info.pci_bus_id = "00000000:" + std::to_string(18 + i) + ":00.0";
      info.persistence_mode = true;
      info.ecc_enabled = true;
      gpus.push_back(info);
      model::GpuSample s;
      s.index = i;
      s[FieldId::kEccSbeVolTotal] = FieldValue::of(3);
      s[FieldId::kEccDbeVolTotal] = FieldValue::of(0);
      s[FieldId::kRowRemapPending] = FieldValue::of(0);
      s[FieldId::kRowRemapFailure] = FieldValue::of(0);
      s[FieldId::kUncorrectableRemappedRows] = FieldValue::of(1);
      s[FieldId::kCorrectableRemappedRows] = FieldValue::of(0);
      s[FieldId::kRetiredPending] = FieldValue::unsupported();  // Hopper remaps rows instead
      s[FieldId::kPcieLinkGenCurrent] = FieldValue::of(5);
      s[FieldId::kPcieLinkGenMax] = FieldValue::of(5);
      s[FieldId::kPcieLinkWidthCurrent] = FieldValue::of(16);
      s[FieldId::kPcieLinkWidthMax] = FieldValue::of(16);
      s[FieldId::kPstate] = FieldValue::of(0);
      s[FieldId::kGpuTemp] = FieldValue::of(71);
      s[FieldId::kSlowdownTemp] = FieldValue::of(89);
      s[FieldId::kClocksEventReasons] = FieldValue::of(0);
      snapshot.gpus.push_back(s);
    }
  }
  model::GpuSample& sample(unsigned i) { return snapshot.gpus.at(i); }
};

// The kernel log read fine and holds `lines`.
KernelXidLog log_of(std::string_view lines) {
  KernelXidLog log;
  log.source = "dmesg.txt";
  log.readable = true;
  log.xids = parse_kernel_xid_lines(lines);
  return log;
}

HealthCheckOptions with_log(std::string_view lines = "") {
  HealthCheckOptions o;
  o.kernel_log = log_of(lines);
  o.cuda_runtime_version = 12040;
  return o;
}

const CheckResult& result(const HealthReport& r, unsigned gpu, HealthCheck check) {
  for (const auto& c : r.gpus.at(gpu).checks) {
    if (c.check == check) return c;
  }
  ADD_FAILURE() << "no " << health_check_id(check) << " result on GPU " << gpu;
  static const CheckResult kNone;
  return kNone;
}

const CheckResult& node_result(const HealthReport& r, HealthCheck check) {
  for (const auto& c : r.node) {
    if (c.check == check) return c;
  }
  ADD_FAILURE() << "no node " << health_check_id(check) << " result";
  static const CheckResult kNone;
  return kNone;
}

double value(const CheckResult& c, std::string_view key) {
  for (const auto& v : c.values) {
    if (v.key == key) return v.value;
  }
  ADD_FAILURE() << "no value " << key << " in " << health_check_id(c.check);
  return -1;
}

HealthReport judge(const Node& node, const HealthCheckOptions& options) {
  return check_health(node.snapshot, node.gpus, node.system, options);
}

TEST(HealthChecks, ASoundNodePassesEveryCheckWithTheValuesThatDecidedIt) {
  const Node node(2);
  const auto report = judge(node, with_log());
  EXPECT_TRUE(report.healthy());
  EXPECT_EQ(report.problem_count(), 0u);
  ASSERT_EQ(report.gpus.size(), 2u);
  for (unsigned g = 0; g < 2; ++g) {
    ASSERT_EQ(report.gpus[g].checks.size(), 6u);  // every check but the node's driver check
    for (const auto& c : report.gpus[g].checks) {
      EXPECT_EQ(c.status, CheckStatus::kPass) << health_check_id(c.check) << ": " << c.summary;
      EXPECT_TRUE(c.gating);
    }
  }
  EXPECT_EQ(value(result(report, 0, HealthCheck::kEcc), "ecc_dbe_volatile_total"), 0);
  EXPECT_EQ(value(result(report, 0, HealthCheck::kThermal), "gpu_temp_celsius"), 71);
  EXPECT_EQ(value(result(report, 0, HealthCheck::kPcie), "pcie_link_width_max"), 16);
  EXPECT_EQ(node_result(report, HealthCheck::kDriver).status, CheckStatus::kPass);
  EXPECT_EQ(health_report_text(report),
            "healthy: all 2 GPUs passed ecc, xid, remap, pcie, thermal, persistence, driver\n");
}

TEST(HealthChecks, DoubleBitEccErrorsFailTheEccCheck) {
  Node node(2);
  node.sample(1)[FieldId::kEccDbeVolTotal] = FieldValue::of(2);
  const auto report = judge(node, with_log());
  EXPECT_FALSE(report.healthy());
  EXPECT_EQ(report.problem_count(), 1u);
  EXPECT_EQ(result(report, 0, HealthCheck::kEcc).status, CheckStatus::kPass);
  const auto& ecc = result(report, 1, HealthCheck::kEcc);
  EXPECT_EQ(ecc.status, CheckStatus::kFail);
  EXPECT_EQ(value(ecc, "ecc_dbe_volatile_total"), 2);
  EXPECT_THAT(ecc.summary, HasSubstr("2 uncorrectable (double-bit) ECC errors"));
  EXPECT_TRUE(report.gpus[0].healthy());
  EXPECT_FALSE(report.gpus[1].healthy());
}

TEST(HealthChecks, ADoubleBitEccEventFailsEvenWithoutTheCounter) {
  Node node(1);
  node.sample(0)[FieldId::kEccDbeVolTotal] = FieldValue::error(999);
  node.sample(0).events.double_bit_ecc = 1;
  const auto report = judge(node, with_log());
  const auto& ecc = result(report, 0, HealthCheck::kEcc);
  EXPECT_EQ(ecc.status, CheckStatus::kFail);
  EXPECT_EQ(value(ecc, "ecc_dbe_events"), 1);
}

TEST(HealthChecks, EccNotReportedOrDisabledIsNotCheckedRatherThanPassed) {
  Node node(2);
  node.sample(0)[FieldId::kEccDbeVolTotal] = FieldValue::unsupported();
  node.gpus[1].ecc_enabled = false;
  const auto report = judge(node, with_log());
  const auto& unsupported = result(report, 0, HealthCheck::kEcc);
  EXPECT_EQ(unsupported.status, CheckStatus::kNotChecked);
  EXPECT_TRUE(unsupported.values.empty());
  EXPECT_THAT(unsupported.summary, HasSubstr("not reported"));
  EXPECT_EQ(result(report, 1, HealthCheck::kEcc).status, CheckStatus::kNotChecked);
  EXPECT_EQ(result(report, 1, HealthCheck::kEcc).summary, "ECC is disabled on this GPU");
  EXPECT_TRUE(report.healthy());  // not a failure ...
  // ... and not a pass: the summary line says so instead of listing ecc as passed.
  EXPECT_EQ(health_report_text(report), "healthy: all 2 GPUs passed xid, remap, pcie, thermal, persistence, driver; "
                                        "not checked: ecc (volatile ECC counts: not reported by the GPU)\n");
}

TEST(HealthChecks, PendingOrFailedRowRemapsFailTheRemapCheck) {
  Node node(3);
  node.sample(0)[FieldId::kRowRemapPending] = FieldValue::of(1);
  node.sample(1)[FieldId::kRowRemapFailure] = FieldValue::of(1);
  const auto report = judge(node, with_log());
  const auto& pending = result(report, 0, HealthCheck::kRemap);
  EXPECT_EQ(pending.status, CheckStatus::kFail);
  EXPECT_EQ(value(pending, "row_remap_pending"), 1);
  EXPECT_THAT(pending.summary, HasSubstr("row remap is pending"));
  EXPECT_THAT(result(report, 1, HealthCheck::kRemap).summary, HasSubstr("row remapping failed"));
  // Remapped rows alone (the remap done) are how HBM heals itself, not a fault.
  EXPECT_EQ(result(report, 2, HealthCheck::kRemap).status, CheckStatus::kPass);
  EXPECT_EQ(value(result(report, 2, HealthCheck::kRemap), "remapped_rows_uncorrectable"), 1);
  EXPECT_EQ(report.problem_count(), 2u);
}

TEST(HealthChecks, PendingRetiredPagesFailOnGpusThatRetirePages) {
  Node node(2);
  for (unsigned g = 0; g < 2; ++g) {
    for (auto id : {FieldId::kRowRemapPending, FieldId::kRowRemapFailure, FieldId::kUncorrectableRemappedRows,
                    FieldId::kCorrectableRemappedRows}) {
      node.sample(g)[id] = FieldValue::unsupported();
    }
  }
  node.sample(0)[FieldId::kRetiredPending] = FieldValue::of(1);
  node.sample(0)[FieldId::kRetiredDbe] = FieldValue::of(1);
  const auto report = judge(node, with_log());
  const auto& retired = result(report, 0, HealthCheck::kRemap);
  EXPECT_EQ(retired.status, CheckStatus::kFail);
  EXPECT_EQ(value(retired, "retired_pages_pending"), 1);
  EXPECT_THAT(retired.summary, HasSubstr("retired pages are pending"));
  // Neither remapping nor retirement reported: not checked.
  EXPECT_EQ(result(report, 1, HealthCheck::kRemap).status, CheckStatus::kNotChecked);
}

TEST(HealthChecks, ANarrowLinkFailsAndASlowLinkFailsOnlyWhileTheGpuWorks) {
  Node node(4);
  node.sample(0)[FieldId::kPcieLinkWidthCurrent] = FieldValue::of(8);
  node.sample(1)[FieldId::kPcieLinkGenCurrent] = FieldValue::of(3);  // P0: at work
  node.sample(2)[FieldId::kPcieLinkGenCurrent] = FieldValue::of(1);
  node.sample(2)[FieldId::kPstate] = FieldValue::of(8);  // parked: ASPM lowers the link
  node.sample(3)[FieldId::kPcieLinkGenCurrent] = FieldValue::of(1);
  node.sample(3)[FieldId::kPstate] = FieldValue::unsupported();
  node.sample(3)[FieldId::kClocksEventReasons] = FieldValue::of(0x1);  // GpuIdle
  const auto report = judge(node, with_log());
  const auto& narrow = result(report, 0, HealthCheck::kPcie);
  EXPECT_EQ(narrow.status, CheckStatus::kFail);
  EXPECT_THAT(narrow.summary, HasSubstr("link width x8 below its maximum x16"));
  EXPECT_EQ(value(narrow, "pcie_link_width_current"), 8);
  const auto& slow = result(report, 1, HealthCheck::kPcie);
  EXPECT_EQ(slow.status, CheckStatus::kFail);
  EXPECT_THAT(slow.summary, HasSubstr("gen 3 below its maximum gen 5"));
  EXPECT_EQ(value(slow, "pstate"), 0);
  EXPECT_EQ(result(report, 2, HealthCheck::kPcie).status, CheckStatus::kPass);
  EXPECT_THAT(result(report, 2, HealthCheck::kPcie).summary, HasSubstr("parked below gen 5 while idle"));
  EXPECT_EQ(result(report, 3, HealthCheck::kPcie).status, CheckStatus::kPass);
}

TEST(HealthChecks, HeatAtTheSlowdownThresholdOrAThermalReasonFailsTheThermalCheck) {
  Node node(4);
  node.sample(0)[FieldId::kGpuTemp] = FieldValue::of(89);  // at the threshold counts
  node.sample(1)[FieldId::kClocksEventReasons] = FieldValue::of(0x20);  // SwThermalSlowdown
  node.sample(2)[FieldId::kGpuTemp] = FieldValue::of(88);
  node.sample(3)[FieldId::kGpuTemp] = FieldValue::unsupported();
  node.sample(3)[FieldId::kClocksEventReasons] = FieldValue::unsupported();
  const auto report = judge(node, with_log());
  const auto& hot = result(report, 0, HealthCheck::kThermal);
  EXPECT_EQ(hot.status, CheckStatus::kFail);
  EXPECT_THAT(hot.summary, HasSubstr("89 °C, at or above its slowdown threshold 89 °C"));
  EXPECT_EQ(value(hot, "slowdown_temp_celsius"), 89);
  const auto& throttled = result(report, 1, HealthCheck::kThermal);
  EXPECT_EQ(throttled.status, CheckStatus::kFail);
  EXPECT_THAT(throttled.summary, HasSubstr("sw_thermal_slowdown at 71 °C"));
  EXPECT_EQ(value(throttled, "clocks_event_reasons"), 32);
  EXPECT_EQ(result(report, 2, HealthCheck::kThermal).status, CheckStatus::kPass);
  EXPECT_EQ(result(report, 3, HealthCheck::kThermal).status, CheckStatus::kNotChecked);
}

TEST(HealthChecks, PersistenceModeOffFailsAndUnknownIsNotChecked) {
  Node node(2);
  node.gpus[0].persistence_mode = false;
  node.gpus[1].persistence_mode = std::nullopt;
  const auto report = judge(node, with_log());
  const auto& off = result(report, 0, HealthCheck::kPersistence);
  EXPECT_EQ(off.status, CheckStatus::kFail);
  EXPECT_EQ(value(off, "persistence_mode"), 0);
  EXPECT_THAT(off.summary, HasSubstr("persistence mode is off"));
  EXPECT_EQ(result(report, 1, HealthCheck::kPersistence).status, CheckStatus::kNotChecked);
}

TEST(HealthChecks, ADriverOlderThanTheCudaRuntimeFailsTheDriverCheck) {
  Node node(1);
  auto options = with_log();
  options.cuda_runtime_version = 12080;
  const auto report = judge(node, options);
  const auto& driver = node_result(report, HealthCheck::kDriver);
  EXPECT_EQ(driver.status, CheckStatus::kFail);
  EXPECT_EQ(value(driver, "cuda_driver_version"), 12040);
  EXPECT_EQ(value(driver, "cuda_runtime_version"), 12080);
  EXPECT_THAT(driver.summary, HasSubstr("the driver 550.54.15 supports CUDA 12.4, older than the job's CUDA runtime 12.8"));
  EXPECT_FALSE(report.healthy());
  EXPECT_EQ(report.problem_count(), 1u);
  EXPECT_EQ(health_report_text(report),
            "FAIL driver: the driver 550.54.15 supports CUDA 12.4, older than the job's CUDA runtime 12.8 "
            "(cudaErrorInsufficientDriver); install a newer driver or CUDA's compat package\n"
            "unhealthy: 1 problem on the node (driver)\n");

  options.cuda_runtime_version = 12040;  // the same version is fine
  EXPECT_EQ(node_result(judge(node, options), HealthCheck::kDriver).status, CheckStatus::kPass);
  options.cuda_runtime_version = std::nullopt;
  EXPECT_EQ(node_result(judge(node, options), HealthCheck::kDriver).status, CheckStatus::kNotChecked);
  node.system.cuda_driver_version = std::nullopt;
  options.cuda_runtime_version = 12040;
  EXPECT_EQ(node_result(judge(node, options), HealthCheck::kDriver).status, CheckStatus::kNotChecked);
}

TEST(HealthChecks, CriticalKernelLogXidsFailTheGpuAtTheirPciAddressOnly) {
  Node node(2);  // GPU 0 at 00000000:18:00.0, GPU 1 at 00000000:19:00.0
  const auto report = judge(node, with_log(
      "[ 10.0] NVRM: Xid (PCI:0000:19:00): 79, pid=1, GPU has fallen off the bus.\n"
      "[ 11.0] NVRM: Xid (PCI:0000:18:00): 13, Graphics SM Warp Exception\n"
      "[ 12.0] NVRM: Xid (PCI:0000:18:00): 13, Graphics SM Warp Exception\n"));
  const auto& app_error = result(report, 0, HealthCheck::kXid);
  EXPECT_EQ(app_error.status, CheckStatus::kPass);  // 13 is the job's own fault
  EXPECT_THAT(app_error.summary, HasSubstr("also XID 13 (application errors"));
  ASSERT_EQ(app_error.xids.size(), 1u);
  EXPECT_EQ(app_error.xids[0].count, 2u);
  EXPECT_FALSE(app_error.xids[0].critical);
  const auto& lost = result(report, 1, HealthCheck::kXid);
  EXPECT_EQ(lost.status, CheckStatus::kFail);
  EXPECT_EQ(lost.summary, "XID 79 (GPU has fallen off the bus) in the kernel log");
  EXPECT_EQ(value(lost, "critical_xid_count"), 1);
  ASSERT_EQ(lost.xids.size(), 1u);
  EXPECT_EQ(lost.xids[0].source, "kernel_log");
  EXPECT_EQ(lost.xids[0].text, "pid=1, GPU has fallen off the bus.");
  EXPECT_EQ(report.node.size(), 1u);  // only the driver check: every XID matched a GPU
}

TEST(HealthChecks, CriticalXidEventsFailTheXidCheck) {
  Node node(1);
  node.sample(0).events.xid_total = 1;
  node.sample(0).events.xid_by_code[48] = 1;
  HealthCheckOptions options;
  options.xid_events_watched = true;
  const auto report = judge(node, options);
  const auto& xid = result(report, 0, HealthCheck::kXid);
  EXPECT_EQ(xid.status, CheckStatus::kFail);
  EXPECT_EQ(xid.summary, "XID 48 (double-bit ECC error) from NVML events");
  EXPECT_EQ(xid.xids.at(0).source, "nvml_events");
}

TEST(HealthChecks, AnUnreadableKernelLogIsSaidAndLeavesXidNotCheckedInsteadOfPassed) {
  Node node(2);
  HealthCheckOptions options;
  KernelXidLog unreadable;
  unreadable.source = "/dev/kmsg";
  unreadable.error = "Operation not permitted";
  options.kernel_log = unreadable;
  const auto report = judge(node, options);
  EXPECT_EQ(result(report, 0, HealthCheck::kXid).status, CheckStatus::kNotChecked);
  EXPECT_TRUE(result(report, 0, HealthCheck::kXid).values.empty());
  EXPECT_TRUE(report.healthy());
  EXPECT_FALSE(report.kernel_log_readable);
  EXPECT_THAT(health_report_text(report),
              HasSubstr("; kernel log /dev/kmsg unreadable (Operation not permitted)\n"));
  EXPECT_THAT(health_report_text(report), HasSubstr("not checked: xid (kernel log unreadable and no XID events watched)"));
  // With events watched the check is made from them, and the unreadable log is still said.
  options.xid_events_watched = true;
  const auto watched = judge(node, options);
  EXPECT_EQ(result(watched, 0, HealthCheck::kXid).status, CheckStatus::kPass);
  EXPECT_THAT(health_report_text(watched), HasSubstr("kernel log /dev/kmsg unreadable"));
}

TEST(HealthChecks, ACriticalXidWhereNoGpuAnswersFailsTheNodeUnlessOnlySomeGpusWereAskedFor) {
  Node node(1);
  auto options = with_log("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n");
  const auto report = judge(node, options);
  EXPECT_EQ(result(report, 0, HealthCheck::kXid).status, CheckStatus::kPass);
  const auto& lost = node_result(report, HealthCheck::kXid);
  EXPECT_EQ(lost.status, CheckStatus::kFail);
  EXPECT_EQ(lost.pci_bus_id, "0000:3b:00");
  EXPECT_THAT(lost.summary, HasSubstr("at PCI 0000:3b:00, where no GPU was discovered: XID 79"));
  EXPECT_FALSE(report.healthy());
  options.node_wide = false;
  EXPECT_TRUE(judge(node, options).healthy());
}

TEST(HealthChecks, FailOnDecidesWhatFailsTheGateAndTheRestAreWarnings) {
  Node node(2);
  node.sample(0)[FieldId::kEccDbeVolTotal] = FieldValue::of(1);
  node.gpus[1].persistence_mode = false;
  auto options = with_log();
  options.fail_on = HealthCheckSet{HealthCheck::kPersistence};
  const auto report = judge(node, options);
  EXPECT_FALSE(result(report, 0, HealthCheck::kEcc).gating);
  EXPECT_EQ(result(report, 0, HealthCheck::kEcc).status, CheckStatus::kFail);  // still judged and shown
  EXPECT_EQ(report.problem_count(), 1u);
  EXPECT_TRUE(report.gpus[0].healthy());
  EXPECT_FALSE(report.gpus[1].healthy());
  const std::string text = health_report_text(report);
  EXPECT_THAT(text, HasSubstr("WARN ecc: GPU 0 (GPU-00000000): 1 uncorrectable (double-bit) ECC error since"));
  EXPECT_THAT(text, HasSubstr("FAIL persistence: GPU 1 (GPU-00000001): persistence mode is off"));
  EXPECT_THAT(text, HasSubstr("unhealthy: 1 problem on 1 of 2 GPUs; warnings: ecc\n"));

  options.fail_on = HealthCheckSet{HealthCheck::kPcie};
  const auto narrowed = judge(node, options);
  EXPECT_TRUE(narrowed.healthy());
  EXPECT_THAT(health_report_text(narrowed), HasSubstr("; warnings: ecc, persistence"));
}

TEST(HealthChecks, AGpuThatDoesNotAnswerFailsWhateverFailOnSays) {
  Node node(3);
  node.sample(1).up = false;
  node.sample(1).down_error_code = 15;
  node.snapshot.gpus.pop_back();  // GPU 2 missing from the reading altogether
  auto options = with_log("NVRM: Xid (PCI:0000:19:00): 79, pid=1, GPU has fallen off the bus.\n");
  options.fail_on = HealthCheckSet{HealthCheck::kDriver};
  const auto report = judge(node, options);
  EXPECT_FALSE(report.gpus[1].up);
  EXPECT_FALSE(report.gpus[2].up);
  EXPECT_EQ(report.problem_count(), 2u);
  // Nothing can be read from a lost GPU but the kernel log's word on why it went.
  ASSERT_EQ(report.gpus[1].checks.size(), 1u);
  EXPECT_EQ(report.gpus[1].checks[0].check, HealthCheck::kXid);
  EXPECT_EQ(report.gpus[1].checks[0].status, CheckStatus::kFail);
  EXPECT_EQ(health_report_text(report),
            "FAIL GPU 1 (GPU-00000001): not answering: the GPU is lost (fallen off the bus?)\n"
            "WARN xid: GPU 1 (GPU-00000001): XID 79 (GPU has fallen off the bus) in the kernel log\n"
            "FAIL GPU 2 (GPU-00000002): not answering: the GPU is lost (fallen off the bus?)\n"
            "unhealthy: 2 problems on 2 of 3 GPUs; warnings: xid\n");
  options.fail_on = HealthCheckSet::all();
  EXPECT_EQ(judge(node, options).problem_count(), 3u);  // the lost GPU and its XID
}

TEST(HealthChecks, TheJsonIsNumericWithStableIds) {
  Node node(1);
  node.sample(0)[FieldId::kRowRemapPending] = FieldValue::of(1);
  node.sample(0)[FieldId::kEccDbeVolTotal] = FieldValue::unsupported();
  auto options = with_log("NVRM: Xid (PCI:0000:18:00): 94, pid=7, Contained ECC error.\n");
  options.fail_on = HealthCheckSet{HealthCheck::kRemap, HealthCheck::kXid};
  const auto doc = health_report_json(judge(node, options));
  EXPECT_EQ(doc["healthy"], false);
  EXPECT_EQ(doc["problem_count"], 2);
  EXPECT_EQ(doc["gpu_count"], 1);
  EXPECT_EQ(doc["fail_on"], nlohmann::ordered_json({"xid", "remap"}));
  EXPECT_EQ(doc["kernel_log"]["source"], "dmesg.txt");
  EXPECT_EQ(doc["kernel_log"]["readable"], true);
  const auto& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["uuid"], "GPU-00000000");
  EXPECT_EQ(gpu["up"], true);
  EXPECT_EQ(gpu["healthy"], false);
  ASSERT_EQ(gpu["checks"].size(), 6u);
  std::vector<std::string> ids;
  for (const auto& c : gpu["checks"]) ids.push_back(c["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"ecc", "xid", "remap", "pcie", "thermal", "persistence"}));
  EXPECT_EQ(gpu["checks"][0]["status"], "not_checked");
  EXPECT_TRUE(gpu["checks"][0]["values"].empty());
  EXPECT_EQ(gpu["checks"][1]["status"], "fail");
  EXPECT_EQ(gpu["checks"][1]["xids"][0]["xid"], 94);
  EXPECT_EQ(gpu["checks"][1]["xids"][0]["critical"], true);
  EXPECT_EQ(gpu["checks"][2]["status"], "fail");
  EXPECT_EQ(gpu["checks"][2]["gating"], true);
  EXPECT_TRUE(gpu["checks"][2]["values"]["row_remap_pending"].is_number_integer());
  EXPECT_EQ(gpu["checks"][4]["values"]["gpu_temp_celsius"], 71);
  EXPECT_EQ(gpu["checks"][5]["gating"], false);
  EXPECT_EQ(doc["node"]["checks"][0]["id"], "driver");
  EXPECT_EQ(doc["node"]["checks"][0]["values"]["cuda_driver_version"], 12040);
}

TEST(HealthCheckWords, FailOnListsParseAndUnknownWordsAreNamed) {
  EXPECT_EQ(parse_health_checks("ecc,xid").value(), (HealthCheckSet{HealthCheck::kEcc, HealthCheck::kXid}));
  EXPECT_EQ(parse_health_checks("all").value(), HealthCheckSet::all());
  EXPECT_EQ(parse_health_checks("bogus").error(),
            "unknown check 'bogus' (ecc, xid, remap, pcie, thermal, persistence, driver, all)");
  EXPECT_EQ(parse_health_checks("ecc,,xid").error(), "empty check name");
  EXPECT_FALSE(parse_health_checks(""));
  for (HealthCheck c : all_health_checks()) EXPECT_EQ(health_check_by_id(health_check_id(c)), c);
}

TEST(HealthCheckWords, CudaVersionsAsTheDriverApiNumbersThem) {
  EXPECT_EQ(parse_cuda_version("12.4"), 12040);
  EXPECT_EQ(parse_cuda_version("12"), 12000);
  EXPECT_EQ(parse_cuda_version("12.4.1"), 12040);
  EXPECT_EQ(parse_cuda_version("13.0"), 13000);
  EXPECT_EQ(parse_cuda_version("11.8"), 11080);
  for (const char* bad : {"", "12.", ".4", "a", "12.4.1.2", "-1", "12.100", "0.9", "12,4"}) {
    EXPECT_FALSE(parse_cuda_version(bad)) << bad;
  }
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(cuda_version_text(13000), "13.0");
}

TEST(HealthCheckWords, TheCriticalXidsAreTheHardwareOnesAndEachSaysWhy) {
  for (unsigned xid : {48u, 63u, 64u, 74u, 79u, 92u, 94u, 95u, 119u, 120u}) {
    const CriticalXid* c = find_critical_xid(xid);
    ASSERT_NE(c, nullptr) << xid;
    EXPECT_FALSE(c->why_critical.empty()) << xid;
  }
  for (unsigned xid : {13u, 31u, 43u, 45u}) EXPECT_EQ(find_critical_xid(xid), nullptr) << xid;
}

}  // namespace gpuscope::analysis::health_checks_test
