// What the exposition tests share: the agent's own series rendered alone, and a whole file read back
// (promtool's output). One definition, so the unity build of the sanitizer tests sees no duplicates.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "export/agent_metrics.h"
#include "export/exposition_writer.h"

namespace gpuscope::testing {

inline std::string render_agent_metrics(const exporter::AgentStatus& status, exporter::ExpositionFormat format) {
  std::string out;
  exporter::ExpositionWriter w(format, out);
  exporter::write_agent_metrics(w, status);
  w.finish();
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gpuscope::testing
