// The launch-script lines the README gives for `gpuscope check`, `select` and `list --count`, run by a
// real POSIX shell against the built binary and scenarios/unhealthy_node.yaml: the job starts with the
// GPUs chosen exported to it, and does not start when the gate fails or too few GPUs qualify.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "e2e/command_runner.h"

namespace gpuscope::e2e::launch_script_test {

// `script` runs under /bin/sh with $GPUSCOPE naming `gpuscope --simulate=<unhealthy_node.yaml>`.
CommandResult shell(const std::string& script) {
  const std::map<std::string, std::string> env{
      {"GPUSCOPE_SIM_TIME", "60"},
      {"GPUSCOPE", std::string(GPUSCOPE_EXE) + " --simulate=" + scenario("unhealthy_node.yaml")},
      {"CUDA_VISIBLE_DEVICES", ""}};
  return run_command({"/bin/sh", "-c", "unset CUDA_VISIBLE_DEVICES; " + script}, env, 60);
}

TEST(LaunchScriptE2e, SelectedGpusAreExportedToTheJob) {
  auto r = shell("export \"$($GPUSCOPE select --count 2 --by index)\" && sh -c 'echo job on $CUDA_VISIBLE_DEVICES'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "job on 4,5\n");
  EXPECT_EQ(r.err, "");
}

TEST(LaunchScriptE2e, TooFewGpusStopTheJobFromStarting) {
  auto r = shell("export \"$($GPUSCOPE select --count 5)\" && echo job started");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("gpuscope: 4 of the 5 GPUs asked for qualify\n"), std::string::npos) << r.err;
}

TEST(LaunchScriptE2e, TheHealthGateStopsTheJobAndANarrowedOnePassesIt) {
  auto refused = shell("$GPUSCOPE check --fail-on ecc,xid,remap >/dev/null || { echo refused; exit 1; }; echo job started");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out, "refused\n");
  auto passed = shell("$GPUSCOPE check -i 0,4,5 --fail-on ecc,xid,remap >/dev/null && echo job started");
  EXPECT_EQ(passed.exit_code, 0) << passed.err;
  EXPECT_EQ(passed.out, "job started\n");
}

TEST(LaunchScriptE2e, ListCountIsANumberTheShellCanCompare) {
  auto r = shell("[ \"$($GPUSCOPE list --count)\" -eq 6 ] && echo six GPUs");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "six GPUs\n");
}

}  // namespace gpuscope::e2e::launch_script_test
