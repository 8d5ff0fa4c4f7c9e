#include "export/pmon_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace gpuscope::exporter {
namespace {

std::vector<std::string> pmon_table_reference_lines() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi/pmon.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

PmonTable pmon_table(std::string_view letters) {
  auto t = PmonTable::from_groups(letters);
  EXPECT_TRUE(t.has_value()) << letters;
  return t.value_or(*PmonTable::from_groups("u"));
}

// pmon.txt is `nvidia-smi pmon -c 2` on an idle H100: the header and the '-' row of a GPU without
// processes, character for character (trailing spaces included).
TEST(PmonTable, HeaderAndIdleRowAreNvidiaSmi580s) {
  const auto smi = pmon_table_reference_lines();
  ASSERT_GE(smi.size(), 3u);
  const auto t = pmon_table("u");
  EXPECT_EQ(t.header(), smi[0] + "\n" + smi[1] + "\n");
  EXPECT_EQ(t.rows({}, {}, 0, {}), smi[2] + "\n");
}

// nvidia-smi 580's `pmon -s um` (seen in a user's log): fb and ccpm after ofa, 7 characters each.
TEST(PmonTable, MemoryColumnsFollowUtilization) {
  const auto t = pmon_table("um");
  EXPECT_EQ(t.header(),
            "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa     fb   ccpm    command \n"
            "# Idx           #    C/G      %      %      %      %      %      %     MB     MB    name \n");
  EXPECT_EQ(t.rows({}, {}, 0, {}),
            "    0          -     -      -      -      -      -      -      -      -      -    -              \n");
  EXPECT_EQ(pmon_table("m").header(),
            "# gpu         pid   type     fb   ccpm    command \n"
            "# Idx           #    C/G     MB     MB    name \n");
}

// Process rows as nvidia-smi prints them (a user's `nvidia-smi pmon` on an 8-GPU node):
//     0     883875     G      -      -      -      -      -      -    Xorg           
//     0      13532     C     99      0      -      -      -      -    sglang::schedul
TEST(PmonTable, ProcessRowsTruncateTheCommandToFifteen) {
  PmonProcessRow xorg;
  xorg.pid = 883875;
  xorg.kind = model::ProcessKind::kGraphics;
  xorg.command = "Xorg";
  PmonProcessRow sglang;
  sglang.pid = 13532;
  sglang.kind = model::ProcessKind::kCompute;
  sglang.sm = 99;
  sglang.mem = 0;
  sglang.command = "sglang::scheduler";
  const std::vector<PmonProcessRow> rows{xorg, sglang};
  EXPECT_EQ(pmon_table("u").rows({}, {}, 0, rows),
            "    0     883875     G      -      -      -      -      -      -    Xorg           \n"
            "    0      13532     C     99      0      -      -      -      -    sglang::schedul\n");
}

TEST(PmonTable, GroupsComeInTheOrderOfTheLetters) {
  EXPECT_EQ(pmon_table("mu").header(),
            "# gpu         pid   type     fb   ccpm     sm    mem    enc    dec    jpg    ofa    command \n"
            "# Idx           #    C/G     MB     MB      %      %      %      %      %      %    name \n");
  PmonProcessRow p;
  p.pid = 42;
  p.sm = 7;
  p.fb_mib = 100;
  p.command = "a";
  const std::vector<PmonProcessRow> rows{p};
  EXPECT_EQ(pmon_table("mu").rows({}, {}, 0, rows),
            "    0         42     C    100      -      7      -      -      -      -      -    a              \n");
}

TEST(PmonTable, BothKindsMemoryAndEveryEngine) {
  PmonProcessRow p;
  p.pid = 4000;
  p.kind = model::ProcessKind::kComputeAndGraphics;
  p.sm = 45;
  p.mem = 12;
  p.enc = 3;
  p.dec = 4;
  p.jpg = 5;
  p.ofa = 6;
  p.fb_mib = 40960.4;
  p.command = "python";
  const std::vector<PmonProcessRow> rows{p};
  EXPECT_EQ(pmon_table("um").rows({}, {}, 7, rows),
            "    7       4000   C+G     45     12      3      4      5      6  40960      -    python         \n");
}

TEST(PmonTable, CommandIsNotCutInsideAUtf8Character) {
  PmonProcessRow p;
  p.pid = 1;
  p.command = "abcdefghijklmn\xC3\xA9xyz";  // é spans bytes 15 and 16
  const std::vector<PmonProcessRow> rows{p};
  const std::string line = pmon_table("m").rows({}, {}, 0, rows);
  EXPECT_EQ(line.substr(line.size() - 16), "abcdefghijklmn \n");
}

TEST(PmonTable, DateAndTimeColumnsLeadLikeDmons) {
  TimeColumns dt;
  dt.date = true;
  dt.time = true;
  const auto t = pmon_table("u");
  const std::string header = t.header(dt);
  EXPECT_EQ(header.substr(0, header.find('\n')),
            "#Date       Time        gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command ");
  const std::string row = t.rows(dt, std::chrono::system_clock::time_point(std::chrono::seconds(1767226200)), 2, {});
  EXPECT_TRUE(std::regex_match(row, std::regex(R"( \d{8}   \d\d:\d\d:\d\d      2          -     -( {6}-){6}    - {14}\n)")))
      << row;
}

TEST(PmonTable, GroupLetters) {
  EXPECT_FALSE(PmonTable::from_groups("").has_value());
  auto bad = PmonTable::from_groups("uc");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().letter, "c");
  EXPECT_EQ(pmon_type(model::ProcessKind::kCompute), "C");
  EXPECT_EQ(pmon_type(model::ProcessKind::kGraphics), "G");
}

}  // namespace
}  // namespace gpuscope::exporter
