// TraceError: why a PyTorch-profiler trace could not be read, with the byte offset where it went wrong,
// so a user can look at the exact spot (`head -c`, `zcat | dd`) instead of guessing.
#pragma once

#include <cstdint>
#include <string>

namespace gpuscope::trace {

enum class TraceErrorKind {
  kIo,           // the file could not be opened or read
  kTruncated,    // the input ended inside the document (or inside the gzip stream)
  kNotJson,      // bytes that are not JSON
  kNotATrace,    // valid JSON, but not a Chrome trace with a traceEvents array
  kBadField,     // a field the analysis needs has the wrong type
  kBadValue,     // a value out of range, e.g. a negative duration
  kNoSuchRank,   // --rank names a rank none of the files has
  kNotOneRun,    // a directory holds files of different runs or profiling windows, or two files of one rank
};

struct TraceError {
  TraceErrorKind kind = TraceErrorKind::kIo;
  // In the JSON text (after gzip decompression); -1 when the error is not about a place in the text.
  std::int64_t byte_offset = -1;
  std::string message;  // one line, without the file name and offset (what() adds them)
  std::string file;

  // "FILE: MESSAGE at byte N" on one line.
  std::string what() const;
};

}  // namespace gpuscope::trace
