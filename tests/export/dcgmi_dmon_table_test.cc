#include "export/dcgmi_dmon_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::FieldValue;

std::string dcgmi_spaces(std::size_t n) { return std::string(n, ' '); }

// dcgmi dmon -e 150,155,156 (DCGM 4.6 DeviceMonitor.cpp): entity column 14 + 2; each field's cell is its
// DCGM width + 6 + 2 (TMPTR 5 -> 13, POWER 10 -> 18, TOTEC 16 -> 24), left-aligned; DCGM's units carry a
// leading space (" C", " W", " mJ").
TEST(DcgmiDmonTable, HeaderIsDcgmisLayout) {
  auto t = DcgmiDmonTable::from_ids("150,155,156");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->header(), "#Entity" + dcgmi_spaces(9) + "TMPTR" + dcgmi_spaces(8) + "POWER" + dcgmi_spaces(13) + "TOTEC" +
                             dcgmi_spaces(19) + "\n" + "ID" + dcgmi_spaces(14) + " C" + dcgmi_spaces(11) + " W" +
                             dcgmi_spaces(16) + " mJ" + dcgmi_spaces(21) + "\n");
}

TEST(DcgmiDmonTable, RowHasIntegersDoublesWithThreeDecimalsAndNA) {
  auto t = DcgmiDmonTable::from_ids("150,155,156");
  ASSERT_TRUE(t.has_value());
  const auto info = testing::h100_info(3);
  auto sample = testing::h100_sample(3);  // 45 C, 250.123 W, no energy counter
  EXPECT_EQ(t->row({info, sample}), "GPU 3" + dcgmi_spaces(11) + "45" + dcgmi_spaces(11) + "250.123" + dcgmi_spaces(11) +
                                        "N/A" + dcgmi_spaces(21) + "\n");
  sample.up = false;
  EXPECT_EQ(t->row({info, sample}), "GPU 3" + dcgmi_spaces(11) + "N/A" + dcgmi_spaces(10) + "N/A" + dcgmi_spaces(15) +
                                        "N/A" + dcgmi_spaces(21) + "\n");
}

TEST(DcgmiDmonTable, ValuesAreInDcgmsUnitsAndLongOnesAreCut) {
  auto t = DcgmiDmonTable::from_ids("240,100");
  ASSERT_TRUE(t.has_value());
  const auto info = testing::h100_info();
  auto sample = testing::h100_sample();
  sample[FieldId::kPowerViolation] = FieldValue::of(2.5e9);  // ns; DCGM's PVIOL is in us
  sample[FieldId::kSmClock] = FieldValue::of(123456789012.0);  // 12 digits in an 11-character SMCLK cell
  EXPECT_EQ(t->row({info, sample}),
            "GPU 0" + dcgmi_spaces(11) + "2500000" + dcgmi_spaces(11) + "12345678..." + dcgmi_spaces(2) + "\n");
}

TEST(DcgmiDmonTable, UnknownOrMalformedIdsNameThemselves) {
  auto unknown = DcgmiDmonTable::from_ids("150,999");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().token, "999");
  EXPECT_FALSE(unknown.error().not_a_number);
  auto word = DcgmiDmonTable::from_ids("150,temp");
  ASSERT_FALSE(word.has_value());
  EXPECT_EQ(word.error().token, "temp");
  EXPECT_TRUE(word.error().not_a_number);
  auto empty = DcgmiDmonTable::from_ids("150,");
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().token, "");
  EXPECT_FALSE(DcgmiDmonTable::from_ids("449").has_value()) << "DCGM 4.6's 449 is a throughput, gpuscope's a counter";
}

// Every id the table formats is one of the catalog's, and the help's list names each of them.
TEST(DcgmiDmonTable, EveryFormatIsACatalogField) {
  for (const auto& f : DcgmiDmonTable::formats()) {
    bool found = false;
    for (const auto& def : model::FieldCatalog::all()) found = found || def.dcgm_id == f.id;
    EXPECT_TRUE(found) << f.id;
    EXPECT_TRUE(DcgmiDmonTable::from_ids(std::to_string(f.id)).has_value()) << f.id;
  }
  EXPECT_EQ(DcgmiDmonTable::supported_ids().substr(0, 21), "92, 100-102, 112-114,");
}

// dcgmi's loop: print a set, stop if the count is reached, sleep, then `if (printHeaderCount == 14)
// { header; printHeaderCount = 0; } printHeaderCount++`. Replayed here for 50 sets.
TEST(DcgmiDmonTable, HeaderComesBackAfterFifteenSetsThenEveryFourteen) {
  DcgmiHeaderSchedule schedule;
  std::vector<int> header_before_set;
  for (int set = 1; set <= 50; ++set) {
    if (schedule.due_after_pause()) header_before_set.push_back(set + 1);
  }
  EXPECT_EQ(header_before_set, (std::vector<int>{16, 30, 44}));
}

}  // namespace
}  // namespace gpuscope::exporter
