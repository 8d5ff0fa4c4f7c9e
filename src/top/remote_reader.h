// RemoteReader: one `gpuscope top --url` reading from a running agent (`gpuscope serve`): inventory,
// latest values and processes from /api/v1/gpus, each GPU's verdict from /api/v1/diagnosis (the
// agent's own diagnosis). The HTTP client is handed in, so this module needs none and tests need no
// server.
#pragma once

#include <expected>
#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "top/top_frame.h"

namespace gpuscope::top {

class RemoteReader {
 public:
  // GETs a path ("/api/v1/gpus") from the agent: the body of a 200 answer, or a one-line error.
  using Get = std::function<std::expected<std::string, std::string>(const std::string& path)>;
  // `gpus`: indices to show (empty: all); UUIDs are matched too.
  RemoteReader(Get get, std::set<std::string> gpus = {});
  std::expected<Frame, std::string> read();

  // The Frame of the two answers (an empty `diagnosis` leaves the verdicts out).
  static std::expected<Frame, std::string> frame_of(std::string_view gpus_json, std::string_view diagnosis_json,
                                                    const std::set<std::string>& only);

 private:
  Get get_;
  std::set<std::string> only_;
};

}  // namespace gpuscope::top
