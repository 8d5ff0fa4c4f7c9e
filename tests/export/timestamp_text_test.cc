#include "export/timestamp_text.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

namespace gpuscope::exporter {
namespace {

using namespace std::chrono;

const system_clock::time_point kTime = system_clock::time_point(seconds(1767226200) + milliseconds(7));

// Sets TZ for one test and puts back what was there.
class TimeZone {
 public:
  explicit TimeZone(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~TimeZone() {
    if (old_) {
      setenv("TZ", old_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> old_;
};

TEST(TimestampText, SmiFormIsLocalTimeWithMilliseconds) {
  {
    TimeZone utc("UTC");
    EXPECT_EQ(smi_timestamp(kTime), "2026/01/01 00:10:00.007");
  }
  TimeZone new_york("America/New_York");  // like nvidia-smi: the host's local time
  EXPECT_EQ(smi_timestamp(kTime), "2025/12/31 19:10:00.007");
}

TEST(TimestampText, IsoFormIsUtcWithMilliseconds) { EXPECT_EQ(iso_timestamp(kTime), "2026-01-01T00:10:00.007Z"); }

TEST(TimestampText, UnixSecondsKeepMilliseconds) { EXPECT_DOUBLE_EQ(unix_seconds(kTime), 1767226200.007); }

TEST(TimestampText, SubMillisecondsAreDropped) {
  TimeZone utc("UTC");
  EXPECT_EQ(smi_timestamp(kTime + microseconds(999)), "2026/01/01 00:10:00.007");
}

}  // namespace
}  // namespace gpuscope::exporter
