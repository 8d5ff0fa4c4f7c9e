#include "export/dmon_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::FieldValue;
using namespace std::chrono_literals;

std::string dmon_table_reference(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi/" + name;
}

std::vector<std::string> dmon_table_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The idle H100 of dmon_all.txt's first row, value by value (gtemp 40, mtemp 44, pclk 345, bar1 1 MiB).
struct DmonTableIdleH100 {
  model::GpuInfo info = testing::h100_info();
  model::GpuSample sample = testing::h100_sample();
  model::GpuDetails details;
  DmonTableIdleH100() {
    sample[FieldId::kPowerUsage] = FieldValue::of(71.2);
    sample[FieldId::kGpuTemp] = FieldValue::of(40);
    sample[FieldId::kMemoryTemp] = FieldValue::of(44);
    sample[FieldId::kGpuUtil] = FieldValue::of(0);
    sample[FieldId::kMemCopyUtil] = FieldValue::of(0);
    sample[FieldId::kGraphicsClock] = FieldValue::of(345);
    sample[FieldId::kFbUsed] = FieldValue::of(0);
    sample[FieldId::kBar1Used] = FieldValue::of(1);
    sample[FieldId::kEccSbeVolTotal] = FieldValue::of(0);
    sample[FieldId::kEccDbeVolTotal] = FieldValue::of(0);
    sample[FieldId::kPcieReplay] = FieldValue::of(0);
    sample[FieldId::kPcieRxThroughput] = FieldValue::of(0);
    sample[FieldId::kPcieTxThroughput] = FieldValue::of(0);
    details.jpg_util = {0u, 0};
    details.ofa_util = {0u, 0};
    details.protected_memory = {model::MemoryBytes{}, 0};
  }
  DmonReading reading() const { return {{info, sample}, nullptr, std::chrono::seconds(1), &details}; }
};

// A layout without designated initializers (g++ 12 warns about the members they leave out).
DmonLayout dmon_layout(bool csv, bool names, bool units, bool date = false, bool time = false) {
  DmonLayout l;
  l.csv = csv;
  l.names = names;
  l.units = units;
  l.time.date = date;
  l.time.time = time;
  return l;
}

DmonTable table(std::string_view letters) {
  auto t = DmonTable::from_groups(letters);
  EXPECT_TRUE(t.has_value()) << letters;
  return t.value_or(*DmonTable::from_groups("p"));
}

TEST(DmonTable, DefaultHeaderMatchesNvidiaSmi) {
  EXPECT_EQ(table("puc").header(),
            "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk \n"
            "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz \n");
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
  EXPECT_EQ(matched, 21u);
  // ...and every column of nvidia-smi 580's dmon is one of gpuscope's, in the same place.
  EXPECT_EQ(smi_names.size(), matched);
  EXPECT_EQ(our_names, names);
  EXPECT_EQ(our_units, units);
}

// nvidia-smi prints the groups in the order of the -s letters: `nvidia-smi dmon -s mu` as users posted it
// (three separate logs) starts "# gpu     fb   bar1   ccpm     sm    mem    enc    dec    jpg    ofa", and
// `-s mutc -o TD` went on with "rxpci  txpci   mclk   pclk".
TEST(DmonTable, GroupsComeInTheOrderOfTheLetters) {
  EXPECT_EQ(table("mu").header(),
            "# gpu     fb   bar1   ccpm     sm    mem    enc    dec    jpg    ofa \n"
            "# Idx     MB     MB     MB      %      %      %      %      %      % \n");
  const std::string mutc = table("mutc").header();
  EXPECT_EQ(mutc.substr(0, mutc.find('\n')),
            "# gpu     fb   bar1   ccpm     sm    mem    enc    dec    jpg    ofa  rxpci  txpci   mclk   pclk ");
  EXPECT_EQ(table("cp").column_count(), 5u);
  EXPECT_NE(table("cp").header(), table("pc").header());
  EXPECT_EQ(table("ppc").header(), table("pc").header()) << "a repeated letter counts once";
  EXPECT_EQ(table("pucvmet").column_count(), 21u);
  EXPECT_EQ(table("vmet").header(),
            "# gpu  pviol  tviol     fb   bar1   ccpm  sbecc  dbecc    pci  rxpci  txpci \n"
            "# Idx      %   bool     MB     MB     MB   errs   errs   errs   MB/s   MB/s \n");
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
  // No details read: jpg and ofa are '-'.
  EXPECT_EQ(table("puc").row({info, sample}, nullptr, 1s),
            "    0    250     45      -     87     31      -      0      -      -   2619   1980 \n");
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
  EXPECT_EQ(table("m").row({info, sample}, nullptr, 1s), "    0 143771      3      - \n");
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

TEST(DmonTable, IdleH100RowIsNvidiaSmi580sCharacterForCharacter) {
  const auto smi = dmon_table_lines(dmon_table_reference("dmon_all.txt"));
  ASSERT_GE(smi.size(), 3u);
  DmonTableIdleH100 gpu;
  EXPECT_EQ(table("pucvmet").row({}, {}, gpu.reading()), smi[2] + "\n");
}

TEST(DmonTable, DetailsColumnsReadJpgOfaAndProtectedMemory) {
  DmonTableIdleH100 gpu;
  gpu.details.jpg_util = {12u, 0};
  gpu.details.ofa_util = {3u, 0};
  gpu.details.protected_memory = {model::MemoryBytes{80ULL << 30, 5ULL << 20, 0}, 0};
  EXPECT_TRUE(table("u").needs_details());
  EXPECT_TRUE(table("m").needs_details());
  EXPECT_FALSE(table("pcvet").needs_details());
  EXPECT_EQ(table("um").row({}, {}, gpu.reading()), "    0      0      0      0      0     12      3      0      1      5 \n");
  EXPECT_EQ(table("um").row_json(gpu.reading()).dump(),
            R"({"index":0,"sm_percent":0,"mem_percent":0,"enc_percent":0,"dec_percent":0,"jpg_percent":12,)"
            R"("ofa_percent":3,"fb_mib":0,"bar1_mib":1,"ccpm_mib":5})");
  // NOT_SUPPORTED answers, and a GPU that went down after its details were read, print '-'.
  gpu.details.jpg_util = {std::nullopt, 3};
  EXPECT_EQ(table("u").row({}, {}, gpu.reading()), "    0      0      0      0      0      -      3 \n");
  gpu.sample.up = false;
  EXPECT_EQ(table("u").row({}, {}, gpu.reading()), "    0      -      -      -      -      -      - \n");
}

// dmon_csv_dt.txt is `nvidia-smi dmon -s pucvmet --format csv -o DT` on the same idle H100.
TEST(DmonTable, CsvWithDateAndTimeIsNvidiaSmi580s) {
  const auto smi = dmon_table_lines(dmon_table_reference("dmon_csv_dt.txt"));
  ASSERT_GE(smi.size(), 3u);
  const DmonLayout layout = dmon_layout(true, true, true, true, true);
  EXPECT_EQ(table("pucvmet").header(layout), smi[0] + "\n" + smi[1] + "\n");
  DmonTableIdleH100 gpu;  // a second later: gtemp 39, mtemp 43
  gpu.sample[FieldId::kGpuTemp] = FieldValue::of(39);
  gpu.sample[FieldId::kMemoryTemp] = FieldValue::of(43);
  const std::string row = table("pucvmet").row(layout, testing::sample_time(), gpu.reading());
  // Date and time are local: their shape is checked, the rest character for character.
  const std::regex when(R"(^ \d{8}, \d\d:\d\d:\d\d, )");
  ASSERT_TRUE(std::regex_search(row, when)) << row;
  ASSERT_TRUE(std::regex_search(smi[2], when)) << smi[2];
  EXPECT_EQ(std::regex_replace(row, when, ""), std::regex_replace(smi[2], when, "") + "\n");
}

TEST(DmonTable, NoUnitAndNoHeaderDropTheirLine) {
  const auto t = table("p");
  EXPECT_EQ(t.header(dmon_layout(false, true, false)), "# gpu    pwr  gtemp  mtemp \n");
  EXPECT_EQ(t.header(dmon_layout(false, false, true)), "# Idx      W      C      C \n");
  EXPECT_EQ(t.header(dmon_layout(false, false, false)), "");
  EXPECT_EQ(t.header(dmon_layout(true, true, false)), "#gpu, pwr, gtemp, mtemp\n");
  EXPECT_EQ(t.header(dmon_layout(true, false, true)), "#Idx, W, C, C\n");
  DmonTableIdleH100 gpu;
  EXPECT_EQ(t.row(dmon_layout(true, true, true), {}, gpu.reading()), " 0, 71, 40, 44\n");
}

// The text layout of -o DT as a real nvidia-smi printed it (dmon -s mutc -o TD, 7-character columns):
//   #Date       Time        gpu     fb   bar1   ccpm ...
//   #YYYYMMDD   HH:MM:SS    Idx     MB     MB     MB ...
//    20240104   13:54:35      0    239      3      0 ...
TEST(DmonTable, TextWithDateAndTimeHasTwelveCharacterColumns) {
  const DmonLayout dt = dmon_layout(false, true, true, true, true);
  EXPECT_EQ(table("m").header(dt),
            "#Date       Time        gpu     fb   bar1   ccpm \n"
            "#YYYYMMDD   HH:MM:SS    Idx     MB     MB     MB \n");
  DmonTableIdleH100 gpu;
  gpu.sample[FieldId::kFbUsed] = FieldValue::of(239);
  gpu.sample[FieldId::kBar1Used] = FieldValue::of(3);
  const std::string row = table("m").row(dt, testing::sample_time(), gpu.reading());
  EXPECT_TRUE(std::regex_match(row, std::regex(R"( \d{8}   \d\d:\d\d:\d\d      0    239      3      0 \n)"))) << row;
  // Date alone and time alone keep the same 12 characters.
  EXPECT_EQ(table("m").header(dmon_layout(false, true, true, true, false)).substr(0, 16), "#Date       gpu ");
  EXPECT_EQ(table("m").header(dmon_layout(false, true, true, false, true)).substr(0, 16), "#Time       gpu ");
  const std::string time_row = table("m").row(dmon_layout(false, true, true, false, true), testing::sample_time(), gpu.reading());
  EXPECT_TRUE(std::regex_match(time_row, std::regex(R"( \d\d:\d\d:\d\d     0    239      3      0 \n)"))) << time_row;
}

TEST(DmonTable, TimeColumnsLetters) {
  TimeColumns c;
  EXPECT_TRUE(parse_time_columns("DT", c));
  EXPECT_TRUE(c.date && c.time);
  EXPECT_TRUE(parse_time_columns("T", c));
  EXPECT_TRUE(!c.date && c.time);
  EXPECT_FALSE(parse_time_columns("", c));
  EXPECT_FALSE(parse_time_columns("Dx", c));
  EXPECT_FALSE(parse_time_columns("d", c));
}

}  // namespace
}  // namespace gpuscope::exporter
