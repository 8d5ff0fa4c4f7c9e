// TraceByteReader: the JSON bytes of one trace file, plain or gzip (detected by its magic bytes, not its
// name), read in caller-sized pieces so a multi-GB trace never has to fit in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "trace/trace_error.h"

namespace gpuscope::trace {

class TraceByteReader {
 public:
  static std::expected<TraceByteReader, TraceError> open(const std::string& path);
  // Reads from memory (tests, the fuzz target); `bytes` must outlive the reader. Gzip is detected too.
  static TraceByteReader from_memory(const char* bytes, std::size_t size);

  TraceByteReader(TraceByteReader&&) noexcept;
  TraceByteReader& operator=(TraceByteReader&&) noexcept;
  ~TraceByteReader();

  // Fills up to `capacity` bytes; 0 means the end of the JSON text. A gzip stream that stops early is
  // kTruncated, damaged compressed data kNotJson, both with the offset of the JSON bytes produced so far.
  std::expected<std::size_t, TraceError> read(char* destination, std::size_t capacity);

  // The whole file mapped read-only, for a plain (not gzip) file: the parser then reads it in place
  // instead of copying it through read(2). Empty for gzip, memory input, or when mmap fails.
  std::optional<std::span<const char>> map_whole_file();
  // Drops the mapped pages before `offset` from this process (they stay in the page cache), so the
  // resident size stays at the parser's window, not the part of the file read so far.
  void release_before(std::uint64_t offset);

  std::uint64_t file_size() const;      // on disk (compressed size for gzip)
  std::uint64_t file_consumed() const;  // bytes of the file read so far, for progress
  std::uint64_t json_bytes() const;     // JSON bytes handed out so far
  bool gzip() const;

 private:
  struct State;
  explicit TraceByteReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gpuscope::trace
