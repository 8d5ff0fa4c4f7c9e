// serve's diagnosis flags: defaults, accepted forms, and one-line errors naming the flag.
#include <gtest/gtest.h>

#include "cli/serve_verb.h"

namespace gpuscope::cli {
namespace {

std::string diagnosis_args_error(const std::expected<ServeOptions, ParseExit>& r) { return r ? "" : r.error().text; }

TEST(ServeDiagnosisArgs, DefaultsAndForms) {
  auto d = parse_serve_args(std::vector<std::string>{});
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->diagnosis);
  EXPECT_EQ(d->diagnosis_interval.count(), 0) << "the default: every 5 s, or every reading if they are further apart";
  EXPECT_EQ(d->diagnosis_window, std::chrono::seconds(30));
  EXPECT_EQ(d->diagnosis_thresholds.idle_gr_active, analysis::Thresholds{}.idle_gr_active);

  auto o = parse_serve_args(std::vector<std::string>{"--diagnosis.interval", "10s", "--diagnosis.window", "5m",
                                                     "--threshold", "idle_gr_active=0.1", "--threshold",
                                                     "memory_bound_dram_active=0.8", "--no-diagnosis"});
  ASSERT_TRUE(o) << diagnosis_args_error(o);
  EXPECT_EQ(o->diagnosis_interval, std::chrono::seconds(10));
  EXPECT_EQ(o->diagnosis_window, std::chrono::minutes(5));
  EXPECT_EQ(o->diagnosis_thresholds.idle_gr_active, 0.1);
  EXPECT_EQ(o->diagnosis_thresholds.memory_bound_dram_active, 0.8);
  EXPECT_FALSE(o->diagnosis);
}

TEST(ServeDiagnosisArgs, BadValuesAreOneLineErrors) {
  EXPECT_EQ(diagnosis_args_error(parse_serve_args(std::vector<std::string>{"--diagnosis.interval", "10ms"})),
            "invalid value '10ms' for --diagnosis.interval (100ms to 1h, e.g. 1s, 10s)");
  EXPECT_EQ(diagnosis_args_error(parse_serve_args(std::vector<std::string>{"--diagnosis.window", "2h"})),
            "invalid value '2h' for --diagnosis.window (1s to 1h, e.g. 30s, 5m)");
  EXPECT_EQ(diagnosis_args_error(parse_serve_args(std::vector<std::string>{"--diagnosis.window", "soon"})),
            "invalid value 'soon' for --diagnosis.window (1s to 1h, e.g. 30s, 5m)");
  const std::string unknown = diagnosis_args_error(parse_serve_args(std::vector<std::string>{"--threshold", "nope=1"}));
  EXPECT_TRUE(unknown.starts_with("--threshold: unknown threshold 'nope' (one of: idle_gr_active, ")) << unknown;
  EXPECT_EQ(unknown.find('\n'), std::string::npos);
  EXPECT_EQ(diagnosis_args_error(parse_serve_args(std::vector<std::string>{"--threshold", "idle_gr_active"})),
            "--threshold: threshold 'idle_gr_active': expected NAME=VALUE");
}

}  // namespace
}  // namespace gpuscope::cli
