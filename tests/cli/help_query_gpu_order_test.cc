// `query --help-query-gpu` lists the names in nvidia-smi 580's order (its own list, read from the
// reference), each under the spelling nvidia-smi lists first, gpuscope's other names after them.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "cli_runner.h"

namespace gpuscope {
namespace {

std::vector<std::string> hqo_reference_names() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi-query-gpu-fields.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

// The first quoted name of each entry line ("clocks.current.sm" or "clocks.sm"), up to gpuscope's DCGM list.
std::vector<std::string> hqo_listed_first(const std::string& help) {
  std::vector<std::string> out;
  for (const auto& line : testing::output_lines(help)) {
    if (line.starts_with("Beyond nvidia-smi's names")) break;
    if (!line.starts_with("\"")) continue;
    out.push_back(line.substr(1, line.find('"', 1) - 1));
  }
  return out;
}

TEST(HelpQueryGpuOrder, NamesFollowNvidiaSmisOrderUnderItsFirstSpelling) {
  const auto reference = hqo_reference_names();
  ASSERT_EQ(reference.size(), 188u) << "the nvidia-smi reference is missing";
  const auto r = testing::run_gpuscope({"query", "--help-query-gpu"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto listed = hqo_listed_first(r.out);
  ASSERT_FALSE(listed.empty());
  std::map<std::string, std::size_t> rank;
  for (std::size_t i = 0; i < reference.size(); ++i) rank[reference[i]] = i;
  // Every name of nvidia-smi's that gpuscope lists comes first under nvidia-smi's spelling, in its order;
  // names nvidia-smi does not list only after them.
  std::size_t last = 0;
  bool past_reference = false;
  std::size_t ranked = 0;
  for (const auto& name : listed) {
    const auto it = rank.find(name);
    if (it == rank.end()) {
      past_reference = true;
      continue;
    }
    EXPECT_FALSE(past_reference) << name << " comes after a name nvidia-smi does not list";
    EXPECT_GE(it->second, last) << name << " is out of nvidia-smi's order";
    last = it->second;
    ++ranked;
  }
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()).size(), listed.size()) << "a name listed twice";
  // gpuscope answers every one of nvidia-smi's names (query_all_names_test.cc), so each is listed.
  EXPECT_EQ(ranked, reference.size());
  EXPECT_EQ(listed.front(), reference.front());
}

}  // namespace
}  // namespace gpuscope
