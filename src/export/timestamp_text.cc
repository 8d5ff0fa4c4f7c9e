#include "export/timestamp_text.h"

#include <ctime>

#include <fmt/format.h>

namespace gpuscope::exporter {
namespace {

struct UtcParts {
  std::tm tm{};
  long long millis = 0;
};

UtcParts split(std::chrono::system_clock::time_point t, bool local = false) {
  using namespace std::chrono;
  // Floor, not truncate: a time before 1970 must not borrow a negative millisecond count.
  const auto ms = floor<milliseconds>(t.time_since_epoch());
  const auto secs = floor<seconds>(ms);
  UtcParts p;
  p.millis = (ms - secs).count();
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  if (local) {
    localtime_r(&tt, &p.tm);
  } else {
    gmtime_r(&tt, &p.tm);
  }
  return p;
}

}  // namespace

// nvidia-smi prints its timestamp column in local time (TZ); JSON stays UTC (iso_timestamp).
std::string smi_timestamp(std::chrono::system_clock::time_point t) {
  const UtcParts p = split(t, /*local=*/true);
  return fmt::format("{:04}/{:02}/{:02} {:02}:{:02}:{:02}.{:03}", p.tm.tm_year + 1900, p.tm.tm_mon + 1, p.tm.tm_mday,
                     p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec, p.millis);
}

std::string iso_timestamp(std::chrono::system_clock::time_point t) {
  const UtcParts p = split(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", p.tm.tm_year + 1900, p.tm.tm_mon + 1,
                     p.tm.tm_mday, p.tm.tm_hour, p.tm.tm_min, p.tm.tm_sec, p.millis);
}

double unix_seconds(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  return static_cast<double>(floor<milliseconds>(t.time_since_epoch()).count()) / 1000.0;
}

}  // namespace gpuscope::exporter
