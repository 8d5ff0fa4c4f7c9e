#include "cli/run_cli.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace gpuscope::cli {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::run_gpuscope;

// A usage error is exactly one line on stderr, naming gpuscope, and nothing on stdout.
void expect_usage_error(const testing::CliResult& r, const std::string& line) {
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: " + line + "\n");
  EXPECT_EQ(r.out, "");
}

TEST(RunCli, Version) {
  auto r = run_gpuscope({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "gpuscope 0.1.0\n");
}

TEST(RunCli, VersionAfterTheVerb) {
  auto r = run_gpuscope({"dmon", "--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "gpuscope 0.1.0\n");
}

TEST(RunCli, HelpDocumentsExitCodesAndGlobalFlags) {
  auto r = run_gpuscope({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("Exit codes:"));
  EXPECT_THAT(r.out, HasSubstr("  3  no NVML library found"));
  EXPECT_THAT(r.out, HasSubstr("--simulate[=SCENARIO]"));
  EXPECT_THAT(r.out, HasSubstr("--nvml-lib PATH"));
  EXPECT_EQ(r.err, "");
}

TEST(RunCli, EveryVerbHasHelpWithAnExample) {
  for (const char* verb : {"list", "info", "query", "dmon", "check", "select"}) {
    auto r = run_gpuscope({verb, "--help"});
    EXPECT_EQ(r.code, 0) << verb;
    EXPECT_THAT(r.out, HasSubstr(std::string("Usage: gpuscope ") + verb)) << verb;
    EXPECT_THAT(r.out, HasSubstr("Example:\n  gpuscope ")) << verb;
    EXPECT_THAT(r.out, HasSubstr("Exit codes:")) << verb;
    EXPECT_EQ(r.err, "") << verb;
  }
}

TEST(RunCli, NoVerbIsAUsageError) {
  expect_usage_error(run_gpuscope({}), "no command given (list, info, query, dmon, pmon, top, check, select, serve, eval, diagnose, cost, import, trace, rules, backtest, grafana-dashboard; see 'gpuscope --help')");
}

TEST(RunCli, UnknownVerbIsAUsageError) {
  expect_usage_error(run_gpuscope({"htop"}), "unknown command 'htop' (list, info, query, dmon, pmon, top, check, select, serve, eval, diagnose, cost, import, trace, rules, backtest, grafana-dashboard; see 'gpuscope --help')");
}

TEST(RunCli, UnknownGlobalFlagIsAUsageError) {
  expect_usage_error(run_gpuscope({"--bogus", "list"}), "unknown option '--bogus' (see 'gpuscope --help')");
}

TEST(RunCli, UnknownVerbFlagNamesTheFlag) {
  auto r = run_gpuscope({"list", "--bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, StartsWith("gpuscope: "));
  EXPECT_THAT(r.err, HasSubstr("--bogus"));
  EXPECT_THAT(r.err, EndsWith("(see 'gpuscope list --help')\n"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(RunCli, MissingOptionValueIsOneLine) {
  auto r = run_gpuscope({"query", "--query-gpu=index", "-l"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, StartsWith("gpuscope: "));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(RunCli, UnknownFieldNamesTheOffenderBeforeTouchingNvml) {
  // No library is loadable here (--nvml-lib points nowhere): the usage error must come first.
  expect_usage_error(run_gpuscope({"--nvml-lib", "/nonexistent/libnvidia-ml.so.1", "query",
                                   "--query-gpu=index,temprature.gpu"}),
                     "unknown field 'temprature.gpu' in --query-gpu");
}

TEST(RunCli, BadDmonGroupLetter) {
  expect_usage_error(run_gpuscope({"dmon", "-s", "pz"}), "unknown metric group 'z' in -s 'pz' (any of pucvmet)");
}

// A library named on purpose that does not load: exit 3, and the error points at what named it (the
// default search's error, which suggests installing the driver or --simulate, is NvmlLibrary's test).
TEST(RunCli, NoLibraryExitsThreeAndNamesWhatNamedIt) {
  for (const char* verb : {"list", "info"}) {
    auto r = run_gpuscope({verb, "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"});
    EXPECT_EQ(r.code, 3) << verb;
    EXPECT_THAT(r.err, StartsWith("gpuscope: cannot load the NVML library named by --nvml-lib ("));
    EXPECT_THAT(r.err, HasSubstr("/nonexistent/libnvidia-ml.so.1"));
    EXPECT_THAT(r.err, HasSubstr("--simulate"));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  }
  ::setenv("GPUSCOPE_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  auto env = run_gpuscope({"list"});
  ::unsetenv("GPUSCOPE_NVML_LIB");
  EXPECT_EQ(env.code, 3);
  EXPECT_THAT(env.err, StartsWith("gpuscope: cannot load the NVML library named by GPUSCOPE_NVML_LIB ("));
  ::setenv("GPUSCOPE_SIM_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  auto sim = run_gpuscope({"--simulate", "list"});
  ::unsetenv("GPUSCOPE_SIM_LIB");
  EXPECT_EQ(sim.code, 3);
  EXPECT_THAT(sim.err, StartsWith("gpuscope: cannot load the NVML library named by GPUSCOPE_SIM_LIB (for --simulate) ("));
  EXPECT_THAT(sim.err, EndsWith("No such file or directory)\n")) << "no advice to use --simulate when it is in use";
}

TEST(RunCli, LibraryNamedByTheEnvironmentSaysSo) {
  setenv("GPUSCOPE_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  auto r = run_gpuscope({"list"});
  unsetenv("GPUSCOPE_NVML_LIB");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, StartsWith("gpuscope: cannot load the NVML library named by GPUSCOPE_NVML_LIB "
                                "(/nonexistent/libnvidia-ml.so.1: "));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(RunCli, ScenarioAfterBareSimulateHintsAtTheEqualsSign) {
  for (const char* file : {"scenarios/ecc.yaml", "ecc.yml"}) {
    expect_usage_error(run_gpuscope({"--simulate", file, "list"}),
                       fmt::format("unknown command '{}': to simulate that scenario, write --simulate={}", file, file));
  }
  // Without --simulate an unknown word is just an unknown command.
  auto r = run_gpuscope({"ecc.yaml", "list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'ecc.yaml' (list, info"));
}

// Help is read in a terminal: no line runs past 100 columns. Example commands are copied whole, so
// they may be longer; everything else is wrapped.
void expect_help_fits_a_terminal(const std::string& help, const std::string& context) {
  std::size_t start = 0;
  while (start < help.size()) {
    auto end = help.find('\n', start);
    if (end == std::string::npos) end = help.size();
    const std::string line = help.substr(start, end - start);
    if (!line.starts_with("  gpuscope ")) {
      EXPECT_LE(line.size(), 100u) << context << ": " << line;
    }
    start = end + 1;
  }
}

TEST(RunCli, TheTopLevelHelpFitsATerminal) {
  auto r = run_gpuscope({"--help"});
  ASSERT_EQ(r.code, 0);
  expect_help_fits_a_terminal(r.out, "gpuscope --help");
}

TEST(RunCli, EveryHelpFitsATerminalAndSaysWhatTheVerbCanExitWith) {
  const std::vector<std::vector<std::string>> helps{
      {"list"},   {"info"},     {"query"},  {"dmon"},  {"pmon"},  {"check"}, {"select"},         {"serve"},
      {"eval"},   {"diagnose"}, {"import"}, {"trace"}, {"backtest"}, {"rules", "check"}, {"rules", "test"}};
  for (auto args : helps) {
    const std::string verb = args.front();
    args.push_back("--help");
    auto r = run_gpuscope(args);
    ASSERT_EQ(r.code, 0) << verb;
    expect_help_fits_a_terminal(r.out, verb);
    const bool nvml = verb == "list" || verb == "info" || verb == "query" || verb == "dmon" || verb == "pmon" ||
                      verb == "serve" || verb == "check" || verb == "select";
    EXPECT_EQ(r.out.find("no NVML library found") != std::string::npos, nvml) << verb;
    EXPECT_EQ(r.out.find("--nvml-lib PATH") != std::string::npos, nvml) << verb;
    // A verb that needs a GPU shows one example that runs on any machine.
    if (nvml) {
      EXPECT_THAT(r.out, HasSubstr("  gpuscope --simulate " + verb)) << verb;
    }
  }
}

TEST(ParseCommandLine, SimulateWithoutScenario) {
  std::vector<const char*> argv{"gpuscope", "--simulate", "list"};
  auto cl = parse_command_line(argv);
  ASSERT_TRUE(cl.has_value());
  EXPECT_TRUE(cl->global.simulate);
  EXPECT_EQ(cl->global.scenario, "");
  EXPECT_EQ(cl->verb, "list");
}

TEST(ParseCommandLine, SimulateWithScenarioFile) {
  std::vector<const char*> argv{"gpuscope", "query", "--simulate=scenarios/thermal.yaml", "--query-gpu=index"};
  auto cl = parse_command_line(argv);
  ASSERT_TRUE(cl.has_value());
  EXPECT_TRUE(cl->global.simulate);
  EXPECT_EQ(cl->global.scenario, "scenarios/thermal.yaml");
  EXPECT_EQ(cl->verb, "query");
  EXPECT_EQ(cl->verb_args, std::vector<std::string>{"--query-gpu=index"});
}

TEST(ParseCommandLine, BareSimulateDoesNotSwallowTheVerb) {
  std::vector<const char*> argv{"gpuscope", "--simulate", "dmon", "-c", "1"};
  auto cl = parse_command_line(argv);
  ASSERT_TRUE(cl.has_value());
  EXPECT_EQ(cl->verb, "dmon");
  EXPECT_EQ(cl->verb_args, (std::vector<std::string>{"-c", "1"}));
}

TEST(ParseCommandLine, EmptyScenarioIsAnError) {
  std::vector<const char*> argv{"gpuscope", "--simulate=", "list"};
  auto cl = parse_command_line(argv);
  ASSERT_FALSE(cl.has_value());
  EXPECT_EQ(cl.error(), "--simulate= needs a scenario file after '='");
}

TEST(ParseCommandLine, NvmlLibBeforeOrAfterTheVerb) {
  for (auto argv : {std::vector<const char*>{"gpuscope", "--nvml-lib", "/x/lib.so", "info"},
                    std::vector<const char*>{"gpuscope", "info", "--nvml-lib=/x/lib.so"}}) {
    auto cl = parse_command_line(argv);
    ASSERT_TRUE(cl.has_value());
    EXPECT_EQ(cl->global.nvml_lib, "/x/lib.so");
    EXPECT_EQ(cl->verb, "info");
    EXPECT_TRUE(cl->verb_args.empty());
  }
}

TEST(ParseCommandLine, NvmlLibNeedsAPath) {
  std::vector<const char*> argv{"gpuscope", "info", "--nvml-lib"};
  EXPECT_FALSE(parse_command_line(argv).has_value());
}

TEST(ParseCommandLine, HelpAfterTheVerbIsTheVerbs) {
  std::vector<const char*> argv{"gpuscope", "query", "--help"};
  auto cl = parse_command_line(argv);
  ASSERT_TRUE(cl.has_value());
  EXPECT_FALSE(cl->help);
  EXPECT_EQ(cl->verb_args, std::vector<std::string>{"--help"});
}

}  // namespace
}  // namespace gpuscope::cli
