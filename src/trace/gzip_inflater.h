// GzipInflater: a gzip stream (every member of it, as gunzip reads concatenated files) inflated piece by
// piece, by ISA-L's igzip where libisal is installed, else by zlib.
//
// Why two: most traces are written gzipped, and zlib's inflate took 30 of the 50 ms that reading the
// 35 MB real trace from its .json.gz cost; igzip inflates it in 9. libisal is opened with dlopen by
// the first gzip trace, not linked, so that every other command (and a plain .json trace) does not pay
// for loading it, and a host without it still reads gzip through zlib.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>

namespace gpuscope::trace {

class GzipInflater {
 public:
  // igzip when `igzip` is asked for, libisal.so.2 opens and tests have not turned it off; else zlib.
  static std::unique_ptr<GzipInflater> make(bool igzip = true);
  // Tests: make() uses zlib even where igzip is there, or goes back to choosing. Returns whether igzip
  // is now chosen. Not thread-safe: the choice is process-wide.
  static bool use_igzip(bool allowed);

  virtual ~GzipInflater() = default;
  virtual const char* name() const = 0;  // "igzip" or "zlib"

  // The compressed bytes to read next; they must stay put until input_left() is 0.
  virtual void set_input(const std::uint8_t* data, std::size_t size) = 0;
  virtual std::size_t input_left() const = 0;

  struct Step {
    std::size_t written = 0;
    bool member_ended = false;  // a gzip member ended, its CRC-32 and length checked
  };
  // Inflates into [out, out + capacity) what the input allows; the error says what is damaged.
  virtual std::expected<Step, std::string> inflate(std::uint8_t* out, std::size_t capacity) = 0;
  // After a member ended and more input follows: the next member starts.
  virtual void next_member() = 0;
};

}  // namespace gpuscope::trace
