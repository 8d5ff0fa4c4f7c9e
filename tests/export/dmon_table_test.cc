#include "export/dmon_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::FieldValue;
using namespace std::chrono_literals;

DmonTable table(std::string_view letters) {
  auto t = DmonTable::from_groups(letters);
  EXPECT_TRUE(t.has_value()) << letters;
  return t.value_or(*DmonTable::from_groups("p"));
}

TEST(DmonTable, DefaultHeaderMatchesNvidiaSmi) {
  EXPECT_EQ(table("puc").header(),
            "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk \n"
            "# Idx      W      C      C      %      %      %      %    MHz    MHz \n");
}

// Every column gpuscope has sits in the same 7 characters, name and unit, as in nvidia-smi 580's own
// header, and the lines end in a space as its do.
TEST(DmonTable, HeaderCellsAreNvidiaSmi580s) {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi/dmon_all.txt");
  std::string names, units;
  ASSERT_TRUE(std::getline(in, names) && std::getline(in, units)) << "dmon_all.txt";
  auto cells = [](const std::string& line) {
    std::map<std::string, std::string> out;  // name -> its 7-character cell
    for (std::size_t at = 5; at + 7 <= line.size(); at += 7) {
      std::string cell = line.substr(at, 7);
      out[cell.substr(cell.find_first_not_of(' '))] = cell;
    }
    return out;
  };
  const auto smi_names = cells(names);
  const std::string ours = table("pucvmet").header();
  const std::string our_names = ours.substr(0, ours.find('\n'));
  const std::string our_units = ours.substr(ours.find('\n') + 1, our_names.size());
  ASSERT_EQ(our_names.substr(0, 5), names.substr(0, 5));
  ASSERT_EQ(our_units.substr(0, 5), units.substr(0, 5));
  EXPECT_EQ(our_names.back(), ' ');
  EXPECT_EQ(names.back(), ' ');
  std::size_t matched = 0;
  for (std::size_t at = 5; at + 7 <= our_names.size(); at += 7) {
    const std::string cell = our_names.substr(at, 7);
    const std::string name = cell.substr(cell.find_first_not_of(' '));
    auto it = smi_names.find(name);
    ASSERT_NE(it, smi_names.end()) << name << " is not a column of nvidia-smi 580's dmon";
    EXPECT_EQ(cell, it->second);
    const std::size_t smi_at = names.find(it->second);
    EXPECT_EQ(our_units.substr(at, 7), units.substr(smi_at, 7)) << name;
    ++matched;
  }
  EXPECT_EQ(matched, 18u);
}

TEST(DmonTable, ColumnsComeInNvidiaSmisOrderWhateverTheLetters) {
  EXPECT_EQ(table("cp").header(), table("pc").header());
  EXPECT_EQ(table("pucvmet").column_count(), 18u);
  EXPECT_EQ(table("vmet").header(),
            "# gpu  pviol  tviol     fb   bar1  sbecc  dbecc    pci  rxpci  txpci \n"
            "# Idx      %   bool     MB     MB   errs   errs   errs   MB/s   MB/s \n");
}

TEST(DmonTable, RejectsUnknownGroupLetter) {
  auto t = DmonTable::from_groups("pux");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().letter, "x");
  EXPECT_FALSE(DmonTable::from_groups("").has_value());
}

TEST(DmonTable, RowIsRightAlignedWithDashForUnsupported) {
  auto info = testing::h100_info();
  auto sample = testing::h100_sample();
  sample[FieldId::kMemoryTemp] = FieldValue::unsupported();
  sample[FieldId::kEncUtil] = FieldValue::error(999);
  EXPECT_EQ(table("puc").row({info, sample}, nullptr, 1s),
            "    0    250     45      -     87     31      -      0   2619   1980 \n");
}

TEST(DmonTable, PowerViolationIsShareOfTheInterval) {
  auto info = testing::h100_info();
  auto before = testing::h100_sample();
  auto after = testing::h100_sample();
  after[FieldId::kPowerViolation] = FieldValue::of(1e9 + 250e6);  // 250 ms of a 1 s interval
  after[FieldId::kThermalViolation] = FieldValue::of(5e6);
  EXPECT_EQ(table("v").row({info, after}, &before, 1s), "    0     25      1 \n");
}

TEST(DmonTable, ViolationsAreZeroOnTheFirstRowAsNvidiaSmiPrintsThemButAbsentFromItsJson) {
  auto info = testing::h100_info();
  auto sample = testing::h100_sample();
  EXPECT_EQ(table("v").row({info, sample}, nullptr, 1s), "    0      0      0 \n");
  EXPECT_EQ(table("v").row_json({info, sample}, nullptr, 1s).dump(), R"({"index":0})");
  sample.up = false;
  EXPECT_EQ(table("v").row({info, sample}, nullptr, 1s), "    0      -      - \n") << "a lost GPU has nothing to show";
}

TEST(DmonTable, CounterGoingBackwardsIsDash) {
  auto info = testing::h100_info();
  auto before = testing::h100_sample();
  auto after = testing::h100_sample();
  after[FieldId::kPowerViolation] = FieldValue::of(0);
  EXPECT_EQ(table("v").row({info, after}, &before, 1s), "    0      -      0 \n");
}

TEST(DmonTable, WideValuesPushRight) {
  auto info = testing::h100_info();
  auto sample = testing::h100_sample();
  sample[FieldId::kFbUsed] = FieldValue::of(143771);
  sample[FieldId::kBar1Used] = FieldValue::of(3);
  EXPECT_EQ(table("m").row({info, sample}, nullptr, 1s), "    0 143771      3 \n");
}

TEST(DmonTable, ThroughputIsMegabytesPerSecond) {
  auto info = testing::h100_info();
  auto sample = testing::h100_sample();
  sample[FieldId::kPcieRxThroughput] = FieldValue::of(123456);
  sample[FieldId::kPcieTxThroughput] = FieldValue::of(999);
  EXPECT_EQ(table("t").row({info, sample}, nullptr, 1s), "    0    123      1 \n");
}

TEST(DmonTable, LostGpuIsAllDashes) {
  auto info = testing::h100_info();
  auto sample = testing::h100_sample();
  sample.up = false;
  sample.down_error_code = 15;
  EXPECT_EQ(table("p").row({info, sample}, nullptr, 1s), "    0      -      -      - \n");
}

TEST(DmonTable, JsonRowHasUnitsInKeysAndOmitsDashes) {
  auto info = testing::h100_info();
  auto before = testing::h100_sample();
  auto after = testing::h100_sample();
  after[FieldId::kMemoryTemp] = FieldValue::unsupported();
  after[FieldId::kPowerViolation] = FieldValue::of(1e9 + 500e6);
  EXPECT_EQ(table("pv").row_json({info, after}, &before, 1s).dump(),
            R"({"index":0,"pwr_watts":250.123,"gtemp_celsius":45,"pviol_percent":50,"tviol":0})");
}

}  // namespace
}  // namespace gpuscope::exporter
