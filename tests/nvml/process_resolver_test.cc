#include "nvml/process_resolver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace gpuscope::nvml {
namespace {

namespace fs = std::filesystem;

class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpuscope-proc-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void add(unsigned pid, const std::string& comm, const std::string& cmdline, const std::string& cgroup) {
    auto dir = root_ / std::to_string(pid);
    fs::create_directories(dir);
    std::ofstream(dir / "comm") << comm << "\n";
    std::ofstream(dir / "cmdline", std::ios::binary) << cmdline;
    std::ofstream(dir / "cgroup") << cgroup;
  }
  fs::path root_;
};

const std::string kId = "4f1b1c9e0d6a47b2a1c3e5f7091b2d3c4e5f60718293a4b5c6d7e8f901234567";

TEST_F(FakeProc, ReadsNameCommandLineUserAndContainer) {
  add(4242, "python", std::string("python\0train.py\0--lr\0", 22), "0::/system.slice/docker-" + kId + ".scope\n");
  ProcessResolver r(root_.string());
  auto id = r.resolve(4242);
  EXPECT_TRUE(id.visible);
  EXPECT_EQ(id.name, "python");
  EXPECT_EQ(id.command_line, "python train.py --lr");
  EXPECT_EQ(id.container_id, kId);
  EXPECT_FALSE(id.user.empty());
}

TEST_F(FakeProc, PidOutsideThisNamespaceIsReportedNotVisible) {
  ProcessResolver r(root_.string());
  auto id = r.resolve(999999);
  EXPECT_FALSE(id.visible);
  EXPECT_TRUE(id.name.empty());
}

TEST_F(FakeProc, FallbackNameWinsOverAHostProcessWithTheSamePid) {
  add(77, "sshd", "sshd", "0::/\n");
  ProcessResolver r(root_.string(), [](unsigned pid) -> std::optional<model::ProcessIdentity> {
    if (pid != 77) return std::nullopt;
    model::ProcessIdentity id;
    id.name = "python";
    id.user = "alice";
    return id;
  });
  auto id = r.resolve(77);
  EXPECT_EQ(id.name, "python");
  EXPECT_EQ(id.user, "alice") << "the simulator's user, not sshd's owner";
  EXPECT_EQ(id.command_line, "");
  EXPECT_FALSE(id.visible);
}

TEST_F(FakeProc, ReusedPidIsReadAgainAfterItLeftTheGpu) {
  add(5, "first", "first", "");
  ProcessResolver r(root_.string());
  EXPECT_EQ(r.resolve(5).name, "first");
  add(5, "second", "second", "");
  EXPECT_EQ(r.resolve(5).name, "first") << "cached while the pid stays on a GPU";
  r.retain_only({});
  EXPECT_EQ(r.resolve(5).name, "second");
}

TEST(ContainerId, RecognisesRuntimes) {
  EXPECT_EQ(ProcessResolver::container_id_from_cgroup("0::/system.slice/docker-" + kId + ".scope\n"), kId);
  EXPECT_EQ(ProcessResolver::container_id_from_cgroup("12:memory:/docker/" + kId + "\n"), kId);
  EXPECT_EQ(ProcessResolver::container_id_from_cgroup(
                "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-" + kId +
                ".scope\n"),
            kId);
  EXPECT_EQ(ProcessResolver::container_id_from_cgroup("0::/machine.slice/libpod-" + kId + ".scope/container\n"), kId);
  EXPECT_EQ(ProcessResolver::container_id_from_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n"), "");
  EXPECT_EQ(ProcessResolver::container_id_from_cgroup(""), "");
  // 63 hex digits is not an id.
  EXPECT_EQ(ProcessResolver::container_id_from_cgroup("0::/docker/" + kId.substr(1) + "\n"), "");
}

TEST(PodUid, FromTheKubeletsCgroupUnderEitherDriver) {
  const std::string uid = "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d";
  std::string underscored = uid;
  std::replace(underscored.begin(), underscored.end(), '-', '_');
  // cgroup v1 with the cgroupfs driver, and v2 with the systemd driver (the UUID's dashes as '_').
  EXPECT_EQ(ProcessResolver::pod_uid_from_cgroup("12:memory:/kubepods/burstable/pod" + uid + "/" + kId + "\n"), uid);
  EXPECT_EQ(ProcessResolver::pod_uid_from_cgroup("11:cpu:/kubepods/pod" + uid + "/" + kId + "\n"), uid);
  EXPECT_EQ(ProcessResolver::pod_uid_from_cgroup("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" +
                                                 underscored + ".slice/cri-containerd-" + kId + ".scope\n"),
            uid);
  // Not a pod: a container outside Kubernetes, a host process, a "pod" that is not followed by a UUID.
  EXPECT_EQ(ProcessResolver::pod_uid_from_cgroup("0::/system.slice/docker-" + kId + ".scope\n"), "");
  EXPECT_EQ(ProcessResolver::pod_uid_from_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n"), "");
  EXPECT_EQ(ProcessResolver::pod_uid_from_cgroup("0::/kubepods.slice/kubepods-pod1234.slice\n"), "");
  EXPECT_EQ(ProcessResolver::pod_uid_from_cgroup("0::/kubepods/pod" + uid.substr(0, 35) + "\n"), "");
  EXPECT_EQ(ProcessResolver::pod_uid_from_cgroup(""), "");
}

}  // namespace
}  // namespace gpuscope::nvml
