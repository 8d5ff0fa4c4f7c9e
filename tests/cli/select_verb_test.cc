// `gpuscope select`: the least busy healthy GPUs as CUDA_VISIBLE_DEVICES for a launch script, against
// scenarios/unhealthy_node.yaml (GPU 4 idle and empty, GPU 5 holding a stalled process, GPUs 0 and 3
// training, GPU 1 ECC-failed, GPU 2 remap-pending); the choice itself from hand-made readings; sizes.
#include "cli/select_verb.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/memory_size.h"
#include "cli_runner.h"

namespace gpuscope::cli::select_verb_test {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::run_gpuscope;

const std::string kUnhealthyNode = std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/unhealthy_node.yaml";

class SelectVerb : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    setenv("GPUSCOPE_SIM_TIME", "60", 1);
    auto r = node({"list", "--format", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto listed = nlohmann::json::parse(r.out);
    for (const auto& g : listed["gpus"]) uuids_.push_back(g["uuid"]);
    ASSERT_EQ(uuids_.size(), 6u);
  }
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }

  static testing::CliResult node(std::vector<std::string> args) {
    return testing::run_simulated(kUnhealthyNode, std::move(args));
  }

  std::vector<std::string> uuids_;
};

TEST_F(SelectVerb, PicksTheIdleGpusFirstByUuid) {
  auto r = node({"select", "--count", "2"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // GPU 4 has no process at all; GPU 5's process is stalled (0 % utilization); 0 and 3 train.
  EXPECT_EQ(r.out, "CUDA_VISIBLE_DEVICES=" + uuids_[4] + "," + uuids_[5] + "\n");
  EXPECT_EQ(node({"select", "--count", "2", "--by", "index"}).out, "CUDA_VISIBLE_DEVICES=4,5\n");
  EXPECT_EQ(node({"select"}).out, "CUDA_VISIBLE_DEVICES=" + uuids_[4] + "\n");
  // Among the GPUs asked for only.
  EXPECT_EQ(node({"select", "-i", "1,2,3", "--by", "index"}).out, "CUDA_VISIBLE_DEVICES=3\n");
}

TEST_F(SelectVerb, TooFewQualifyingGpusIsExitOneWithALineForEachGpuLeftOut) {
  auto r = node({"select", "--count", "5"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");  // nothing for a script to export
  const auto lines = testing::output_lines(r.err);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  EXPECT_EQ(lines[0], "gpuscope: 4 of the 5 GPUs asked for qualify");
  EXPECT_EQ(lines[1], "gpuscope: GPU 1 (" + uuids_[1] + ") left out: ecc: 1 uncorrectable (double-bit) ECC error "
                      "since the driver loaded: data in its memory may be corrupt (reset the GPU)");
  EXPECT_EQ(lines[2], "gpuscope: GPU 2 (" + uuids_[2] + ") left out: remap: a row remap is pending (reset the GPU "
                      "to apply it)");
}

TEST_F(SelectVerb, LimitsLeaveOutBusyOrFullGpusAndSayBy) {
  auto busy = node({"select", "--count", "3", "--max-utilization", "10"});
  EXPECT_EQ(busy.code, 1);
  EXPECT_THAT(busy.err, HasSubstr("gpuscope: GPU 0 (" + uuids_[0] + ") left out: utilization "));
  EXPECT_THAT(busy.err, HasSubstr("%, above --max-utilization 10%\n"));
  EXPECT_THAT(busy.err, HasSubstr("gpuscope: GPU 3 (" + uuids_[3] + ") left out: utilization "));
  EXPECT_EQ(node({"select", "--count", "2", "--max-utilization", "10", "--by", "index"}).out,
            "CUDA_VISIBLE_DEVICES=4,5\n");

  // GPU 4 has ~79 GiB free, GPU 5 ~69 GiB (its process holds 10 GiB).
  EXPECT_EQ(node({"select", "--min-free-memory", "75GiB", "--by", "index"}).out, "CUDA_VISIBLE_DEVICES=4\n");
  auto full = node({"select", "--count", "2", "--min-free-memory", "75GiB", "-i", "4,5"});
  EXPECT_EQ(full.code, 1);
  EXPECT_THAT(full.err, HasSubstr("gpuscope: GPU 5 (" + uuids_[5] + ") left out: "));
  EXPECT_THAT(full.err, HasSubstr(" free, below --min-free-memory 75 GiB\n"));
}

TEST_F(SelectVerb, TheJsonHasTheChoiceAndTheReasonsForTheRest) {
  auto r = node({"select", "--count", "2", "--format", "json"});
  EXPECT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["count_requested"], 2);
  EXPECT_EQ(doc["cuda_visible_devices"], uuids_[4] + "," + uuids_[5]);
  ASSERT_EQ(doc["chosen"].size(), 2u);
  EXPECT_EQ(doc["chosen"][0]["index"], 4);
  EXPECT_EQ(doc["chosen"][0]["compute_processes"], 0);
  EXPECT_TRUE(doc["chosen"][0]["memory_free_mib"].is_number());
  EXPECT_TRUE(doc["chosen"][0]["utilization_gpu_percent"].is_number());
  EXPECT_EQ(doc["chosen"][1]["index"], 5);
  EXPECT_EQ(doc["chosen"][1]["compute_processes"], 1);
  ASSERT_EQ(doc["not_chosen"].size(), 2u);
  ASSERT_EQ(doc["left_out"].size(), 2u);
  EXPECT_EQ(doc["left_out"][0]["index"], 1);
  EXPECT_THAT(doc["left_out"][0]["reasons"][0].get<std::string>(), StartsWith("ecc: "));
  EXPECT_EQ(doc["left_out"][1]["index"], 2);

  auto short_of = node({"select", "--count", "6", "--format", "json"});
  EXPECT_EQ(short_of.code, 1);
  const auto failed = nlohmann::json::parse(short_of.out);
  EXPECT_EQ(failed["ok"], false);
  EXPECT_EQ(failed["cuda_visible_devices"], "");
}

void expect_usage_error(const testing::CliResult& r, const std::string& line) {
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: " + line + "\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(SelectVerb, BadFlagsAreOneLineUsageErrors) {
  expect_usage_error(node({"select", "--count", "0"}), "bad count '0' in --count (a whole number > 0)");
  expect_usage_error(node({"select", "--count", "two"}), "bad count 'two' in --count (a whole number > 0)");
  expect_usage_error(node({"select", "--min-free-memory", "20"}),
                     "bad size '20' in --min-free-memory (a number and a unit: KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  expect_usage_error(node({"select", "--max-utilization", "150"}), "bad percent '150' in --max-utilization (0 to 100)");
  expect_usage_error(node({"select", "--by", "name"}), "unknown value 'name' in --by (uuid or index)");
  expect_usage_error(node({"select", "--format", "csv"}), "unknown format 'csv' in --format (env or json)");
  expect_usage_error(node({"select", "-i", "7"}), "unknown GPU '7' in -i");
}

// Hand-made readings: the ranking and the reasons, without the simulator.
struct Readings {
  std::vector<model::GpuInfo> gpus;
  model::Snapshot snapshot;

  void add(double utilization, double free_mib, std::size_t processes) {
    model::GpuInfo info;
    info.index = static_cast<unsigned>(gpus.size());
    info.uuid = "GPU-" + std::to_string(info.index);
    gpus.push_back(info);
    model::GpuSample s;
    s.index = info.index;
    s[model::FieldId::kGpuUtil] = model::FieldValue::of(utilization);
    s[model::FieldId::kFbFree] = model::FieldValue::of(free_mib);
    for (std::size_t p = 0; p < processes; ++p) {
      model::ProcessSample process;
      process.pid = static_cast<unsigned>(100 + p);
      s.processes.push_back(process);
    }
    snapshot.gpus.push_back(s);
  }
};

std::vector<unsigned> indices(const std::vector<GpuCandidate>& cs) {
  std::vector<unsigned> out;
  for (const auto& c : cs) out.push_back(c.index);
  return out;
}

TEST(GpuChoice, NoProcessesFirstThenLowestUtilizationThenMostFreeMemory) {
  Readings r;
  r.add(0, 1000, 1);   // 0: idle but someone holds it
  r.add(30, 1000, 0);  // 1: no process, some utilization (another container?)
  r.add(5, 2000, 0);   // 2
  r.add(5, 3000, 0);   // 3: as busy as 2, more free memory
  SelectOptions options;
  options.count = 3;
  const auto choice = select_least_busy(r.snapshot, r.gpus, options);
  EXPECT_TRUE(choice.enough);
  EXPECT_EQ(indices(choice.chosen), (std::vector<unsigned>{3, 2, 1}));
  EXPECT_EQ(indices(choice.not_chosen), (std::vector<unsigned>{0}));
  EXPECT_EQ(cuda_visible_devices_line(choice, false), "CUDA_VISIBLE_DEVICES=GPU-3,GPU-2,GPU-1");
}

TEST(GpuChoice, UnknownValuesRankLastAndFailTheLimitsThatNeedThem) {
  Readings r;
  r.add(0, 1000, 0);
  r.add(0, 1000, 0);
  r.snapshot.gpus[0].processes_error_code = 999;  // the process list could not be read
  r.snapshot.gpus[1][model::FieldId::kGpuUtil] = model::FieldValue::unsupported();
  SelectOptions options;
  options.count = 2;
  EXPECT_EQ(indices(select_least_busy(r.snapshot, r.gpus, options).chosen), (std::vector<unsigned>{1, 0}));
  options.max_utilization_percent = 50;
  const auto limited = select_least_busy(r.snapshot, r.gpus, options);
  EXPECT_FALSE(limited.enough);
  ASSERT_EQ(limited.left_out.size(), 1u);
  EXPECT_EQ(limited.left_out[0].reasons,
            (std::vector<std::string>{"utilization not reported (--max-utilization cannot be checked)"}));
}

TEST(GpuChoice, DownOrMigGpusAreLeftOut) {
  Readings r;
  r.add(0, 1000, 0);
  r.add(0, 1000, 0);
  r.snapshot.gpus[0].up = false;
  r.snapshot.gpus[0].down_error_code = 15;
  r.gpus[1].mig_enabled = true;
  const auto choice = select_least_busy(r.snapshot, r.gpus, SelectOptions{});
  EXPECT_FALSE(choice.enough);
  ASSERT_EQ(choice.left_out.size(), 2u);
  EXPECT_THAT(choice.left_out[0].reasons.at(0), StartsWith("not answering ("));
  EXPECT_THAT(choice.left_out[1].reasons.at(0), StartsWith("MIG mode is on"));
}

TEST(GpuChoice, AGpuInMigModeOffersItsMigDevicesForOneProcess) {
  Readings r;
  r.add(50, 1000, 1);  // 0: a whole GPU, busy
  r.add(0, 0, 0);      // 1: in MIG mode, two MIG devices
  r.gpus[1].mig_enabled = true;
  auto& g1 = r.snapshot.gpus[1];
  g1.mig_enabled = true;
  g1[model::FieldId::kGpuUtil] = model::FieldValue::unsupported();
  auto add_device = [&](unsigned gi, std::string profile, double gr, double free_mib) {
    model::MigInstanceSample m;
    m.gpu_instance_id = gi;
    m.profile = std::move(profile);
    m.uuid = "MIG-" + std::to_string(gi);
    m[model::FieldId::kGrEngineActive] = model::FieldValue::of(gr);
    m[model::FieldId::kFbFree] = model::FieldValue::of(free_mib);
    g1.mig_instances.push_back(m);
  };
  add_device(2, "3g.40gb", 0.9, 9000);   // busy with a process
  add_device(7, "1g.10gb", 0.0, 9980);   // empty
  model::ProcessSample p;
  p.pid = 9;
  p.gpu_instance_id = 2;
  g1.processes.push_back(p);

  const auto choice = select_least_busy(r.snapshot, r.gpus, SelectOptions{});
  ASSERT_TRUE(choice.enough);
  EXPECT_EQ(choice.chosen[0].uuid, "MIG-7");
  EXPECT_EQ(choice.chosen[0].gpu_instance_id, 7u);
  EXPECT_EQ(choice.chosen[0].compute_processes, 0u);
  EXPECT_EQ(cuda_visible_devices_line(choice, false), "CUDA_VISIBLE_DEVICES=MIG-7");
  // Then the busy MIG device (one process, 90 % graphics engine) ranks beside the busy whole GPU.
  ASSERT_EQ(choice.not_chosen.size(), 2u);
  EXPECT_EQ(choice.not_chosen[0].uuid, "GPU-0");  // 50 % before 90 %
  EXPECT_EQ(choice.not_chosen[1].uuid, "MIG-2");
  EXPECT_EQ(choice.not_chosen[1].utilization_percent, 90.0);
  EXPECT_EQ(choice.not_chosen[1].compute_processes, 1u);
  // The GPU itself is left out.
  ASSERT_EQ(choice.left_out.size(), 1u);
  EXPECT_EQ(choice.left_out[0].uuid, "GPU-1");
  EXPECT_THAT(choice.left_out[0].reasons.at(0), StartsWith("MIG mode is on"));

  // Limits apply to a MIG device's own memory.
  SelectOptions roomy;
  roomy.min_free_memory_bytes = 9500ULL << 20;
  const auto big = select_least_busy(r.snapshot, r.gpus, roomy);
  ASSERT_TRUE(big.enough);
  EXPECT_EQ(big.chosen[0].uuid, "MIG-7");
  // Two GPUs for one job: MIG devices cannot be two of them; by index: they have none.
  SelectOptions two;
  two.count = 2;
  const auto pair = select_least_busy(r.snapshot, r.gpus, two);
  EXPECT_FALSE(pair.enough);
  EXPECT_EQ(pair.chosen.size(), 1u);
  ASSERT_EQ(pair.left_out.size(), 3u);
  EXPECT_EQ(pair.left_out[1].reasons, (std::vector<std::string>{"a MIG device: a CUDA process uses only one (--count 1)"}));
  SelectOptions by_index;
  by_index.by_index = true;
  EXPECT_EQ(select_least_busy(r.snapshot, r.gpus, by_index).chosen[0].uuid, "GPU-0");
}

TEST(GpuChoice, AnIdThatIsNotAPlainShellWordIsQuoted) {
  GpuSelection s;
  s.chosen.push_back(GpuCandidate{});
  s.chosen[0].uuid = "GPU-a b'c";
  EXPECT_EQ(cuda_visible_devices_line(s, false), "CUDA_VISIBLE_DEVICES='GPU-a b'\\''c'");
  EXPECT_EQ(cuda_visible_devices_line(s, true), "CUDA_VISIBLE_DEVICES=0");
}

TEST(MemorySize, BinaryAndDecimalUnitsWithoutRegardToCase) {
  EXPECT_EQ(parse_memory_size("20GiB"), 20ULL << 30);
  EXPECT_EQ(parse_memory_size("512MiB"), 512ULL << 20);
  EXPECT_EQ(parse_memory_size("1.5GiB"), 3ULL << 29);
  EXPECT_EQ(parse_memory_size("4KiB"), 4096u);
  EXPECT_EQ(parse_memory_size("1TiB"), 1ULL << 40);
  EXPECT_EQ(parse_memory_size("40GB"), 40'000'000'000ULL);
  EXPECT_EQ(parse_memory_size("100MB"), 100'000'000ULL);
  EXPECT_EQ(parse_memory_size("2kb"), 2000u);
  EXPECT_EQ(parse_memory_size("20gib"), 20ULL << 30);
  for (const char* bad : {"", "20", "GiB", "20 GiB", "20G", "-1GiB", "20GiBs", "1e30TB", "nanGiB"}) {
    EXPECT_FALSE(parse_memory_size(bad)) << bad;
  }
  EXPECT_EQ(memory_size_text(75ULL << 30), "75 GiB");
  EXPECT_EQ(memory_size_text(3ULL << 29), "1.5 GiB");
  EXPECT_EQ(memory_size_text(512), "512 bytes");
}

}  // namespace gpuscope::cli::select_verb_test
