// Helpers for the trace tests: a hand-written trace (a JSON string) parsed and analysed in memory,
// optionally through a tiny window so window and batch boundaries fall inside events, and temp files.
#pragma once

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <unistd.h>

#include "trace/rank_analysis.h"
#include "trace/rank_timeline.h"
#include "trace/trace_byte_reader.h"
#include "trace/trace_parser.h"

namespace gpuscope::trace::testing {

struct ParsedTrace {
  std::expected<ParseSummary, TraceError> summary;
  RankTimeline timeline;
};

inline ParsedTrace parse_text(const std::string& json, ParseOptions options = {}) {
  static const std::regex kPattern("DataLoader");
  ParsedTrace parsed{std::unexpected(TraceError{}), {}};
  auto reader = TraceByteReader::from_memory(json.data(), json.size());
  TimelineBuilder builder(parsed.timeline, kPattern);
  parsed.summary = parse_trace(reader, builder, parsed.timeline.header, options);
  return parsed;
}

inline RankReport analyze_text(const std::string& json, ParseOptions options = {}, AnalysisOptions analysis = {}) {
  auto parsed = parse_text(json, std::move(options));
  EXPECT_TRUE(parsed.summary.has_value()) << (parsed.summary ? "" : parsed.summary.error().what());
  return analyze_rank(parsed.timeline, analysis);
}

// Everything `reader` gives, `chunk` bytes at a time, or the first error.
inline std::expected<std::string, TraceError> read_all(TraceByteReader& reader, std::size_t chunk = 1 << 20) {
  std::string out, buffer(chunk, '\0');
  for (;;) {
    auto n = reader.read(buffer.data(), buffer.size());
    if (!n) return std::unexpected(n.error());
    if (*n == 0) return out;
    out.append(buffer.data(), *n);
  }
}

inline std::string gzip_text(const std::string& text) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A directory under the system temp dir, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuscope-trace-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What a Python 3 program (stdlib only) prints when run on `arg`: the tests' independent computation of
// expected figures. Empty when there is no python3 to run (the caller skips).
inline std::string python_program_output(const std::string& program, const std::string& arg) {
  TempDir dir;
  const std::string file = dir.write("expected.py", program);
  std::string result;
  if (std::FILE* pipe = ::popen(("python3 " + file + " " + arg + " 2>/dev/null").c_str(), "r")) {
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) result.append(buffer, n);
    ::pclose(pipe);
  }
  return result;
}

inline std::string conformance_trace(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR "/../shared/conformance/traces/") + name;
}

}  // namespace gpuscope::trace::testing
