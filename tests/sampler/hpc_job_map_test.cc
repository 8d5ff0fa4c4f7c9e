#include "sampler/hpc_job_map.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpuscope::sampler {
namespace {

namespace fs = std::filesystem;

struct MappingDir {
  fs::path path = fs::temp_directory_path() / ("gpuscope-hpc-" + std::to_string(getpid()));
  MappingDir() { fs::create_directories(path); }
  ~MappingDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) { std::ofstream(path / name) << text; }
};

TEST(HpcJobMap, ReadsOneFilePerGpuIndexWithAJobPerLine) {
  MappingDir dir;
  dir.write("0", "1234\n  5678 \n\n");
  dir.write("3", "slurm-42");
  dir.write("README", "not a GPU");
  dir.write("1.tmp", "not a GPU either");
  fs::create_directory(dir.path / "7");
  std::string error = "stale";
  const auto jobs = HpcJobMap(dir.path.string()).read(&error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs.at(0), (std::vector<std::string>{"1234", "5678"}));
  EXPECT_EQ(jobs.at(3), (std::vector<std::string>{"slurm-42"}));
}

TEST(HpcJobMap, LabelsTheSnapshotsGpusAndClearsJobsThatEnded) {
  MappingDir dir;
  dir.write("1", "77\n");
  model::Snapshot snap;
  snap.gpus.resize(2);
  snap.gpus[0].index = 0;
  snap.gpus[0].hpc_jobs = {"old"};
  snap.gpus[1].index = 1;
  HpcJobMap(dir.path.string()).label(snap);
  EXPECT_TRUE(snap.gpus[0].hpc_jobs.empty()) << "no file any more: the job ended";
  EXPECT_EQ(snap.gpus[1].hpc_jobs, (std::vector<std::string>{"77"}));
}

TEST(HpcJobMap, AMissingDirectoryGivesNoJobsAndSaysWhy) {
  std::string error;
  const auto jobs = HpcJobMap("/nonexistent/gpuscope-hpc").read(&error);
  EXPECT_TRUE(jobs.empty());
  EXPECT_NE(error.find("/nonexistent/gpuscope-hpc: "), std::string::npos) << error;
}

}  // namespace
}  // namespace gpuscope::sampler
