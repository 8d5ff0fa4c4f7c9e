#include "log/logger.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace gpuscope::log {
namespace {

TEST(Logger, WritesOneLogfmtLinePerEventWithQuotingWhereNeeded) {
  std::ostringstream out;
  Logger log(out, Level::kInfo);
  log.info("listening", {{"address", "127.0.0.1:9400"}, {"note", "two words \"quoted\"\nnext"}, {"empty", ""}});
  const std::string line = out.str();
  EXPECT_TRUE(std::regex_match(line, std::regex(R"(ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z level=info msg=listening )"
                                                R"(address=127\.0\.0\.1:9400 note="two words \\"quoted\\"\\nnext" empty=""\n)")))
      << line;
}

TEST(Logger, DropsEventsBelowItsLevel) {
  std::ostringstream out;
  Logger log(out, Level::kWarn);
  log.info("hidden");
  log.debug("hidden");
  log.warn("shown");
  EXPECT_EQ(out.str().find("hidden"), std::string::npos);
  EXPECT_NE(out.str().find("level=warn msg=shown"), std::string::npos);
}

TEST(Logger, ParsesLevelNames) {
  EXPECT_EQ(parse_level("debug"), Level::kDebug);
  EXPECT_EQ(parse_level("warning"), Level::kWarn);
  EXPECT_EQ(parse_level("error"), Level::kError);
  EXPECT_EQ(parse_level("verbose"), std::nullopt);
}

TEST(Logger, ControlBytesAreEscapedNotWrittenRaw) {
  std::string v;
  append_logfmt_value(v, std::string("a\x01" "b\tc", 5));
  EXPECT_EQ(v, "\"a\\x01b\\tc\"");
}

}  // namespace
}  // namespace gpuscope::log
