#include "export/timestamp_text.h"

#include <gtest/gtest.h>

namespace gpuscope::exporter {
namespace {

using namespace std::chrono;

const system_clock::time_point kTime = system_clock::time_point(seconds(1767226200) + milliseconds(7));

TEST(TimestampText, SmiFormIsUtcWithMilliseconds) { EXPECT_EQ(smi_timestamp(kTime), "2026/01/01 00:10:00.007"); }

TEST(TimestampText, IsoFormIsUtcWithMilliseconds) { EXPECT_EQ(iso_timestamp(kTime), "2026-01-01T00:10:00.007Z"); }

TEST(TimestampText, UnixSecondsKeepMilliseconds) { EXPECT_DOUBLE_EQ(unix_seconds(kTime), 1767226200.007); }

TEST(TimestampText, SubMillisecondsAreDropped) {
  EXPECT_EQ(smi_timestamp(kTime + microseconds(999)), "2026/01/01 00:10:00.007");
}

}  // namespace
}  // namespace gpuscope::exporter
