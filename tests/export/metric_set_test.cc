#include "export/metric_set.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace gpuscope::exporter {
namespace {

using model::FieldCatalog;
using model::FieldId;
using model::MetricType;

const ExportedField* find(const MetricSet& set, FieldId id) {
  auto it = std::ranges::find(set.fields, id, &ExportedField::id);
  return it == set.fields.end() ? nullptr : &*it;
}

// --- default_metric_set ---

TEST(DefaultMetricSet, IsTheCatalogsDcgmDefaultRowsInCatalogOrder) {
  const MetricSet set = default_metric_set();
  std::vector<FieldId> expected;
  for (const auto& f : FieldCatalog::all()) {
    if (f.dcgm_default && !f.dcgm_name.empty()) expected.push_back(f.id);
  }
  std::vector<FieldId> got;
  for (const auto& f : set.fields) got.push_back(f.id);
  EXPECT_EQ(got, expected);
  EXPECT_TRUE(set.driver_version_label);
  EXPECT_EQ(set.source, "built-in");
}

TEST(DefaultMetricSet, HasDcgmExportersDefaultsAndGpuscopesAdditions) {
  const MetricSet set = default_metric_set();
  for (FieldId id : {FieldId::kSmClock, FieldId::kMemClock, FieldId::kGpuTemp, FieldId::kMemoryTemp,
                     FieldId::kPowerUsage, FieldId::kTotalEnergy, FieldId::kPcieReplay, FieldId::kGpuUtil,
                     FieldId::kMemCopyUtil, FieldId::kEncUtil, FieldId::kDecUtil, FieldId::kXidErrors,
                     FieldId::kFbFree, FieldId::kFbUsed, FieldId::kSmActive, FieldId::kSmOccupancy,
                     FieldId::kPowerViolation, FieldId::kThermalViolation, FieldId::kEccDbeVolTotal}) {
    EXPECT_NE(find(set, id), nullptr) << FieldCatalog::get(id).dcgm_name;
  }
  // Not dcgm_default, or no DCGM name at all.
  EXPECT_EQ(find(set, FieldId::kFbTotal), nullptr);
  EXPECT_EQ(find(set, FieldId::kGraphicsClock), nullptr);
  EXPECT_EQ(find(set, FieldId::kClocksEventReasons), nullptr);
  EXPECT_EQ(find(set, FieldId::kPcieTxThroughput), nullptr);
}

TEST(DefaultMetricSet, TypesAndHelpComeFromTheCatalog) {
  const MetricSet set = default_metric_set();
  ASSERT_NE(find(set, FieldId::kGpuTemp), nullptr);
  EXPECT_EQ(find(set, FieldId::kGpuTemp)->type, MetricType::kGauge);
  EXPECT_EQ(find(set, FieldId::kGpuTemp)->help, "GPU temperature (in C).");
  ASSERT_NE(find(set, FieldId::kTotalEnergy), nullptr);
  EXPECT_EQ(find(set, FieldId::kTotalEnergy)->type, MetricType::kCounter);
  for (const auto& f : set.fields) {
    EXPECT_EQ(f.type, FieldCatalog::get(f.id).type) << FieldCatalog::get(f.id).dcgm_name;
    EXPECT_FALSE(f.help.empty());
  }
}

TEST(DefaultMetricSet, ViolationHelpNamesDcgmsMicroseconds) {
  const MetricSet set = default_metric_set();
  ASSERT_NE(find(set, FieldId::kPowerViolation), nullptr);
  EXPECT_EQ(find(set, FieldId::kPowerViolation)->help, "Time the clocks were held down by the power limit (in us).");
  ASSERT_NE(find(set, FieldId::kReliabilityViolation), nullptr);
  EXPECT_EQ(find(set, FieldId::kReliabilityViolation)->help,
            "Time the clocks were held down by the board reliability limit (in us).");
  // Unscaled fields keep their help as it is.
  EXPECT_EQ(find(set, FieldId::kPowerUsage)->help, "Power draw (in W).");
}

// --- parse_metric_set ---

// An excerpt of dcgm-exporter's etc/default-counters.csv, with its layout quirks (aligned columns, a blank
// before a comma, commented-out rows, help containing commas).
constexpr std::string_view kDcgmExporterStyle =
    "# Format\n"
    "# If line starts with a '#' it is considered a comment\n"
    "# DCGM FIELD, Prometheus metric type, help message\n"
    "\n"
    "# Clocks\n"
    "DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n"
    "DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).\n"
    "\n"
    "# Power\n"
    "DCGM_FI_DEV_POWER_USAGE,              gauge, Power draw (in W).\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).\n"
    "# DCGM_FI_PROF_PCIE_TX_BYTES,  counter, Total number of bytes transmitted through PCIe TX via NVML.\n"
    "DCGM_FI_DEV_DEC_UTIL ,     gauge, Decoder utilization (in %).\n"
    "   # indented comment\n"
    "DCGM_FI_DEV_XID_ERRORS,              gauge,   Value of the last XID error encountered, if any.\n"
    "\t\n";

TEST(ParseMetricSet, ReadsDcgmExporterLayoutInFileOrder) {
  auto loaded = parse_metric_set(kDcgmExporterStyle, "default-counters.csv");
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  EXPECT_TRUE(loaded->warnings.empty());
  const auto& set = loaded->set;
  EXPECT_EQ(set.source, "default-counters.csv");
  EXPECT_FALSE(set.driver_version_label);
  ASSERT_EQ(set.fields.size(), 6u);
  EXPECT_EQ(set.fields[0].id, FieldId::kSmClock);
  EXPECT_EQ(set.fields[0].type, MetricType::kGauge);
  EXPECT_EQ(set.fields[0].help, "SM clock frequency (in MHz).");
  EXPECT_EQ(set.fields[1].id, FieldId::kMemClock);
  EXPECT_EQ(set.fields[2].id, FieldId::kPowerUsage);
  EXPECT_EQ(set.fields[3].id, FieldId::kTotalEnergy);
  EXPECT_EQ(set.fields[3].type, MetricType::kCounter);
  EXPECT_EQ(set.fields[3].help, "Total energy consumption since boot (in mJ).");
  EXPECT_EQ(set.fields[4].id, FieldId::kDecUtil);
  EXPECT_EQ(set.fields[5].id, FieldId::kXidErrors);
  EXPECT_EQ(set.fields[5].help, "Value of the last XID error encountered, if any.");
}

TEST(ParseMetricSet, TheFileDecidesTheType) {
  auto loaded = parse_metric_set("DCGM_FI_DEV_GPU_TEMP, counter, odd but allowed\n"
                                 "DCGM_FI_DEV_PCIE_REPLAY_COUNTER, gauge, also allowed\n",
                                 "t.csv");
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  ASSERT_EQ(loaded->set.fields.size(), 2u);
  EXPECT_EQ(loaded->set.fields[0].type, MetricType::kCounter);
  EXPECT_EQ(loaded->set.fields[1].type, MetricType::kGauge);
}

TEST(ParseMetricSet, WindowsLineEndingsAndNoFinalNewline) {
  auto loaded = parse_metric_set("# c\r\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\r\n"
                                 "DCGM_FI_DEV_FB_USED, gauge, Framebuffer used (in MiB).",
                                 "crlf.csv");
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  ASSERT_EQ(loaded->set.fields.size(), 2u);
  EXPECT_EQ(loaded->set.fields[0].help, "GPU temperature (in C).");
  EXPECT_EQ(loaded->set.fields[1].id, FieldId::kFbUsed);
  EXPECT_EQ(loaded->set.fields[1].help, "Framebuffer used (in MiB).");
}

TEST(ParseMetricSet, TextWithoutFieldsIsAnErrorNotAnEmptySet) {
  // An agent exporting no GPU field is a mistake (an empty or truncated file); on SIGHUP the error keeps
  // the previous set instead of silently emptying /metrics.
  for (std::string_view text : {"", "\n\n", "# only a comment\n", "  \n\t# x\n"}) {
    auto loaded = parse_metric_set(text, "e.csv");
    ASSERT_FALSE(loaded.has_value()) << "loaded an empty set from '" << text << "'";
    EXPECT_EQ(loaded.error(), "e.csv: no fields to export (the file has no 'FIELD, type, help' line)");
  }
  auto only_skipped = parse_metric_set("DCGM_FI_DEV_COUNT, gauge, n\nDCGM_FI_DRIVER_VERSION, label, v\n", "s.csv");
  ASSERT_FALSE(only_skipped.has_value());
  EXPECT_EQ(only_skipped.error(),
            "s.csv: no fields to export (the file has no 'FIELD, type, help' line that gpuscope collects)");
}

TEST(ParseMetricSet, BinaryBytesAreEscapedInMessages) {
  auto loaded = parse_metric_set(std::string_view("\x7f" "ELF\x02\x01\x01\x00\x00, gauge\n", 16), "bin.csv");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), "bin.csv:1: expected 'FIELD, type, help', got '\\x7fELF\\x02\\x01\\x01\\x00\\x00, gauge'");
  auto field = parse_metric_set("DCGM_\x1b[2J, gauge, x\n", "esc.csv");
  ASSERT_FALSE(field.has_value());
  EXPECT_EQ(field.error().find('\x1b'), std::string::npos) << field.error();
  EXPECT_NE(field.error().find("DCGM_\\x1b[2J"), std::string::npos) << field.error();
}

TEST(ParseMetricSet, DriverVersionLabelLineTurnsTheLabelOn) {
  auto loaded = parse_metric_set("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                                 "DCGM_FI_DRIVER_VERSION,        label, Driver Version\n",
                                 "l.csv");
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  EXPECT_TRUE(loaded->set.driver_version_label);
  EXPECT_TRUE(loaded->warnings.empty());
  ASSERT_EQ(loaded->set.fields.size(), 1u);  // the label is not a metric
  EXPECT_EQ(loaded->set.fields[0].id, FieldId::kGpuTemp);
}

TEST(ParseMetricSet, OtherLabelFieldsAreSkippedWithAWarning) {
  auto loaded = parse_metric_set("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                                 "\n"
                                 "DCGM_FI_DEV_NAME, label, Device name\n"
                                 "DCGM_FI_DEV_BRAND, label, Brand\n",
                                 "l.csv");
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  EXPECT_FALSE(loaded->set.driver_version_label);
  EXPECT_EQ(loaded->set.fields.size(), 1u);
  EXPECT_EQ(loaded->warnings,
            (std::vector<std::string>{"l.csv:3: label field 'DCGM_FI_DEV_NAME' is not added by gpuscope; skipped",
                                      "l.csv:4: label field 'DCGM_FI_DEV_BRAND' is not added by gpuscope; skipped"}));
}

TEST(ParseMetricSet, KnownButUncollectedFieldsAreSkippedWithAWarning) {
  auto loaded = parse_metric_set("# header\n"
                                 "DCGM_FI_DEV_COUNT, gauge, Number of devices\n"
                                 "DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                                 "DCGM_EXP_XID_ERRORS_COUNT, gauge, XIDs in the window\n"
                                 "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0, counter, L0 bandwidth\n",
                                 "/etc/dcgm-exporter/dcp-metrics-included.csv");
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  ASSERT_EQ(loaded->set.fields.size(), 1u);
  EXPECT_EQ(loaded->set.fields[0].id, FieldId::kGpuTemp);
  EXPECT_EQ(loaded->warnings,
            (std::vector<std::string>{
                "/etc/dcgm-exporter/dcp-metrics-included.csv:2: DCGM_FI_DEV_COUNT is not collected by gpuscope; skipped",
                "/etc/dcgm-exporter/dcp-metrics-included.csv:4: DCGM_EXP_XID_ERRORS_COUNT is not collected by "
                "gpuscope; skipped",
                "/etc/dcgm-exporter/dcp-metrics-included.csv:5: DCGM_FI_DEV_NVLINK_BANDWIDTH_L0 is not collected by "
                "gpuscope; skipped"}));
}

TEST(ParseMetricSet, UnknownFieldIsAnErrorNamingFileLineAndField) {
  auto loaded = parse_metric_set("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                                 "# a comment counts as a line\n"
                                 "DCGM_FI_DEV_GPU_TEMPERATURE, gauge, typo\n",
                                 "my.csv");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), "my.csv:3: unknown field 'DCGM_FI_DEV_GPU_TEMPERATURE'");
}

TEST(ParseMetricSet, CatalogKeysAndSmiNamesAreNotDcgmNames) {
  auto by_key = parse_metric_set("gpu_temp_celsius, gauge, t\n", "k.csv");
  ASSERT_FALSE(by_key.has_value());
  EXPECT_EQ(by_key.error(), "k.csv:1: unknown field 'gpu_temp_celsius' (the DCGM field is DCGM_FI_DEV_GPU_TEMP)");
  auto by_smi = parse_metric_set("temperature.gpu, gauge, t\n", "k.csv");
  ASSERT_FALSE(by_smi.has_value());
  EXPECT_EQ(by_smi.error(), "k.csv:1: unknown field 'temperature.gpu' (the DCGM field is DCGM_FI_DEV_GPU_TEMP)");
}

TEST(ParseMetricSet, UnknownTypeIsAnError) {
  auto loaded = parse_metric_set("\nDCGM_FI_DEV_GPU_TEMP, histogram, t\n", "t.csv");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), "t.csv:2: unknown metric type 'histogram' for DCGM_FI_DEV_GPU_TEMP (gauge, counter or label)");
  auto upper = parse_metric_set("DCGM_FI_DEV_GPU_TEMP, Gauge, t\n", "t.csv");
  ASSERT_FALSE(upper.has_value());
  EXPECT_EQ(upper.error(), "t.csv:1: unknown metric type 'Gauge' for DCGM_FI_DEV_GPU_TEMP (gauge, counter or label)");
}

TEST(ParseMetricSet, MissingColumnsAreAnError) {
  auto two = parse_metric_set("DCGM_FI_DEV_GPU_TEMP, gauge\n", "c.csv");
  ASSERT_FALSE(two.has_value());
  EXPECT_EQ(two.error(), "c.csv:1: expected 'FIELD, type, help', got 'DCGM_FI_DEV_GPU_TEMP, gauge'");
  auto one = parse_metric_set("DCGM_FI_DEV_GPU_TEMP, gauge, t\n  DCGM_FI_DEV_FB_USED  \n", "c.csv");
  ASSERT_FALSE(one.has_value());
  EXPECT_EQ(one.error(), "c.csv:2: expected 'FIELD, type, help', got 'DCGM_FI_DEV_FB_USED'");
}

TEST(ParseMetricSet, EmptyFieldNameIsAnError) {
  auto loaded = parse_metric_set(" , gauge, no name\n", "n.csv");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), "n.csv:1: empty field name");
}

TEST(ParseMetricSet, DuplicateFieldIsAnErrorNamingTheFirstLine) {
  auto loaded = parse_metric_set("# x\n"
                                 "DCGM_FI_DEV_GPU_TEMP, gauge, first\n"
                                 "DCGM_FI_DEV_FB_USED, gauge, used\n"
                                 "DCGM_FI_DEV_GPU_TEMP , counter, second\n",
                                 "d.csv");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), "d.csv:4: DCGM_FI_DEV_GPU_TEMP is already listed on line 2");
}

TEST(ParseMetricSet, FirstErrorWinsOverLaterLines) {
  auto loaded = parse_metric_set("DCGM_FI_DEV_NOPE, gauge, x\nDCGM_FI_DEV_GPU_TEMP, bad, y\n", "f.csv");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), "f.csv:1: unknown field 'DCGM_FI_DEV_NOPE'");
}

TEST(ParseMetricSet, EveryCatalogDcgmNameIsAccepted) {
  std::string text;
  std::size_t n = 0;
  for (const auto& f : FieldCatalog::all()) {
    if (f.dcgm_name.empty()) continue;
    text += std::string(f.dcgm_name) + ", " + (f.type == MetricType::kCounter ? "counter" : "gauge") + ", h\n";
    ++n;
  }
  auto loaded = parse_metric_set(text, "all.csv");
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  EXPECT_TRUE(loaded->warnings.empty());
  EXPECT_EQ(loaded->set.fields.size(), n);
}

// --- load_metric_set ---

class LoadMetricSet : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("metric_set_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(std::string_view name, std::string_view text) {
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(LoadMetricSet, ReadsTheFileAndNamesItInMessages) {
  const auto path = write("counters.csv",
                          "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                          "DCGM_FI_DEV_NAME, label, Name\n"
                          "DCGM_FI_DRIVER_VERSION, label, Driver Version\n");
  auto loaded = load_metric_set(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  EXPECT_EQ(loaded->set.source, path);
  ASSERT_EQ(loaded->set.fields.size(), 1u);
  EXPECT_EQ(loaded->set.fields[0].id, FieldId::kGpuTemp);
  EXPECT_TRUE(loaded->set.driver_version_label);
  EXPECT_EQ(loaded->warnings,
            std::vector<std::string>{path + ":2: label field 'DCGM_FI_DEV_NAME' is not added by gpuscope; skipped"});
}

TEST_F(LoadMetricSet, ParseErrorsNameThePath) {
  const auto path = write("bad.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, ok\nDCGM_FI_DEV_WHAT, gauge, no\n");
  auto loaded = load_metric_set(path);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), path + ":2: unknown field 'DCGM_FI_DEV_WHAT'");
}

TEST_F(LoadMetricSet, AnEmptyFileIsAnError) {
  const auto path = write("empty.csv", "");
  auto loaded = load_metric_set(path);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), path + ": no fields to export (the file has no 'FIELD, type, help' line)");
}

TEST_F(LoadMetricSet, AMissingFileIsAnErrorWithTheReason) {
  const auto path = (dir_ / "does-not-exist.csv").string();
  auto loaded = load_metric_set(path);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), path + ": cannot read the collectors file: No such file or directory");
}

TEST_F(LoadMetricSet, ADirectoryIsSaidToBeOne) {
  // `--collectors /etc/dcgm-exporter/` (the folder, not the file) must fail rather than load an empty set
  // and silently export no DCGM field.
  const auto path = dir_.string();
  auto loaded = load_metric_set(path);
  ASSERT_FALSE(loaded.has_value()) << "loaded " << loaded->set.fields.size() << " fields from a directory";
  EXPECT_EQ(loaded.error(), path + ": cannot read the collectors file: Is a directory");
}

}  // namespace
}  // namespace gpuscope::exporter

namespace gpuscope::exporter {
namespace {

TEST(ParseMetricSet, ATypoGetsTheNearestDcgmName) {
  auto loaded = parse_metric_set("DCGM_FI_DEV_SM_CLOK, gauge, x\n", "t.csv");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error(), "t.csv:1: unknown field 'DCGM_FI_DEV_SM_CLOK' (did you mean DCGM_FI_DEV_SM_CLOCK?)");
}

TEST(ParseMetricSet, DcgmsNewNameForThrottleReasonsReadsTheSameFieldUnderThatName) {
  auto loaded = parse_metric_set("DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Clock event reasons\n", "n.csv");
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  ASSERT_EQ(loaded->set.fields.size(), 1u);
  EXPECT_EQ(loaded->set.fields[0].id, model::FieldId::kClocksEventReasons);
  EXPECT_EQ(loaded->set.fields[0].name, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS");
  EXPECT_TRUE(loaded->warnings.empty());
}

}  // namespace
}  // namespace gpuscope::exporter
