#include "trace/trace_overlay.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "trace/trace_byte_reader.h"

namespace gpuscope::trace {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kOverlayChunk = 256u << 10;

void overlay_append_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Nanoseconds as Kineto's microseconds: "12.345", exact (a double would round past 2^53 ns).
void overlay_append_us(std::string& out, std::int64_t ns) {
  const bool negative = ns < 0;
  const std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  fmt::format_to(std::back_inserter(out), "{}{}.{:03}", negative ? "-" : "", magnitude / 1000, magnitude % 1000);
}

// Where the output goes: a temporary file beside it, plain or through deflate.
class OverlayWriter {
 public:
  OverlayWriter(int fd, bool gzip) : fd_(fd), gzip_(gzip) {
    if (gzip_) {
      // zlib's default level: on the 37 MB augmented real trace, 0.24 s for 1.9 MB; level 1 took 0.15 s
      // for 2.7 MB, and the file is usually copied somewhere to be opened in a browser.
      ready_ = deflateInit2(&zs_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
      compressed_.resize(kOverlayChunk);
    } else {
      ready_ = true;
    }
    buffer_.reserve(kOverlayChunk);
  }
  ~OverlayWriter() {
    if (gzip_) deflateEnd(&zs_);
  }
  OverlayWriter(const OverlayWriter&) = delete;
  OverlayWriter& operator=(const OverlayWriter&) = delete;

  bool ready() const { return ready_; }
  std::uint64_t written() const { return written_; }
  const std::string& error() const { return error_; }

  bool write(std::string_view bytes) {
    if (buffer_.size() + bytes.size() > kOverlayChunk && !flush(false)) return false;
    if (bytes.size() >= kOverlayChunk) return emit(bytes, false);
    buffer_.append(bytes);
    return true;
  }
  bool finish() { return flush(true); }

 private:
  bool flush(bool final) {
    const bool ok = emit(buffer_, final);
    buffer_.clear();
    return ok;
  }

  bool emit(std::string_view bytes, bool final) {
    if (!gzip_) return write_fd(bytes.data(), bytes.size());
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    zs_.avail_in = static_cast<uInt>(bytes.size());
    for (;;) {
      zs_.next_out = reinterpret_cast<Bytef*>(compressed_.data());
      zs_.avail_out = static_cast<uInt>(compressed_.size());
      const int rc = deflate(&zs_, final ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) {
        error_ = "deflate failed";
        return false;
      }
      if (!write_fd(compressed_.data(), compressed_.size() - zs_.avail_out)) return false;
      if (final ? rc == Z_STREAM_END : zs_.avail_in == 0 && zs_.avail_out != 0) return true;
    }
  }

  bool write_fd(const char* data, std::size_t size) {
    while (size > 0) {
      const ssize_t n = ::write(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = std::strerror(n < 0 ? errno : EIO);
        return false;
      }
      data += n;
      size -= static_cast<std::size_t>(n);
      written_ += static_cast<std::uint64_t>(n);
    }
    return true;
  }

  int fd_;
  bool gzip_;
  bool ready_ = false;
  z_stream zs_{};
  std::string buffer_;
  std::vector<char> compressed_;
  std::uint64_t written_ = 0;
  std::string error_;
};

// Finds where the new events go: one past the '[' of the top-level "traceEvents" array (or of a
// document that is a bare array), fed the JSON a piece at a time. Only strings and nesting are tracked;
// the parser that read the trace before has checked the rest.
class OverlayInsertionFinder {
 public:
  // The position in `piece` one past the '[', or npos when it is not in this piece.
  std::size_t feed(std::string_view piece) {
    for (std::size_t i = 0; i < piece.size(); ++i) {
      const char c = piece[i];
      if (in_string_) {
        if (escape_) {
          escape_ = false;
        } else if (c == '\\') {
          escape_ = true;
          key_.clear();
          key_overflow_ = true;  // a key spelt with escapes is not the one looked for
        } else if (c == '"') {
          in_string_ = false;
          just_closed_key_ = depth_ == 1 && !key_overflow_ && key_ == "traceEvents";
          after_key_colon_ = false;
        } else if (key_.size() < 16) {
          key_ += c;
        } else {
          key_overflow_ = true;
        }
        continue;
      }
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      if (depth_ == 0 && c == '[') return i + 1;  // a bare array of events
      if (just_closed_key_) {
        if (c == ':' && !after_key_colon_) {
          after_key_colon_ = true;
          continue;
        }
        if (c == '[' && after_key_colon_) return i + 1;
        just_closed_key_ = false;
      }
      switch (c) {
        case '"':
          in_string_ = true;
          key_.clear();
          key_overflow_ = false;
          break;
        case '{':
        case '[':
          ++depth_;
          break;
        case '}':
        case ']':
          --depth_;
          break;
        default:
          break;
      }
    }
    return std::string_view::npos;
  }

 private:
  std::int64_t depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  std::string key_;
  bool key_overflow_ = false;
  bool just_closed_key_ = false;
  bool after_key_colon_ = false;
};

struct OverlayTempFile {
  std::string path;
  int fd = -1;
  bool keep = false;
  ~OverlayTempFile() {
    if (fd >= 0) ::close(fd);
    if (!keep && !path.empty()) ::unlink(path.c_str());
  }
};

TraceError overlay_error(TraceErrorKind kind, std::string message, const std::string& file) {
  return TraceError{kind, -1, std::move(message), file};
}

}  // namespace

void append_counter_track(const std::string& name, const std::string& category, std::int64_t pid, const std::string& key,
                          std::span<const CounterPoint> points, std::vector<OverlayEvent>& out) {
  out.reserve(out.size() + points.size());
  for (const CounterPoint& p : points) {
    OverlayEvent e;
    e.phase = OverlayEvent::Phase::kCounter;
    e.name = name;
    e.category = category;
    e.pid = pid;
    e.ts_ns = p.ts_ns;
    e.args.push_back(OverlayArg{key, p.value});
    out.push_back(std::move(e));
  }
}

std::string overlay_event_json(const OverlayEvent& event) {
  std::string out = "{\"ph\":\"";
  out += static_cast<char>(event.phase);
  out += "\",\"name\":";
  overlay_append_string(out, event.name);
  if (!event.category.empty()) {
    out += ",\"cat\":";
    overlay_append_string(out, event.category);
  }
  fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"tid\":{},\"ts\":", event.pid, event.tid);
  overlay_append_us(out, event.ts_ns);
  if (event.phase == OverlayEvent::Phase::kComplete) {
    out += ",\"dur\":";
    overlay_append_us(out, event.duration_ns);
  }
  out += ",\"args\":{";
  for (std::size_t i = 0; i < event.args.size(); ++i) {
    if (i > 0) out += ',';
    overlay_append_string(out, event.args[i].key);
    out += ':';
    const auto& v = event.args[i].value;
    if (const auto* n = std::get_if<std::int64_t>(&v)) {
      fmt::format_to(std::back_inserter(out), "{}", *n);
    } else if (const auto* d = std::get_if<double>(&v)) {
      // JSON has no NaN or infinity.
      if (std::isfinite(*d)) {
        fmt::format_to(std::back_inserter(out), "{}", *d);
      } else {
        out += "null";
      }
    } else {
      overlay_append_string(out, std::get<std::string>(v));
    }
  }
  out += "}}";
  return out;
}

std::expected<bool, std::string> overlay_output_gzip(const std::string& output) {
  if (output.ends_with(".json.gz")) return true;
  if (output.ends_with(".json")) return false;
  return std::unexpected(fmt::format("'{}': an augmented trace must be named .json or .json.gz", output));
}

std::expected<OverlaySummary, TraceError> write_trace_overlay(const std::string& input, const std::string& output,
                                                              std::span<const OverlayEvent> events) {
  OverlaySummary summary;
  auto gzip = overlay_output_gzip(output);
  if (!gzip) return std::unexpected(overlay_error(TraceErrorKind::kIo, gzip.error(), ""));
  summary.gzip = *gzip;
  std::error_code ec;
  if (fs::exists(output, ec) && fs::equivalent(input, output, ec)) {
    return std::unexpected(overlay_error(TraceErrorKind::kIo, "is the input trace: the augmented copy needs another name", output));
  }
  if (fs::is_directory(output, ec)) {
    return std::unexpected(overlay_error(TraceErrorKind::kIo, "is a directory", output));
  }
  const auto input_error = [&](TraceError e) {
    if (e.file.empty()) e.file = input;
    return std::unexpected(std::move(e));
  };
  auto reader = TraceByteReader::open(input);
  if (!reader) return input_error(reader.error());

  const fs::path out_path(output);
  OverlayTempFile temp;
  temp.path = (out_path.parent_path().empty() ? fs::path(".") : out_path.parent_path()) /
              (out_path.filename().string() + ".partial-XXXXXX");
  temp.fd = ::mkstemp(temp.path.data());
  if (temp.fd < 0) {
    const int err = errno;
    temp.path.clear();
    return std::unexpected(overlay_error(TraceErrorKind::kIo, fmt::format("cannot be written: {}", std::strerror(err)), output));
  }
  ::fchmod(temp.fd, 0644);
  OverlayWriter writer(temp.fd, summary.gzip);
  if (!writer.ready()) return std::unexpected(overlay_error(TraceErrorKind::kIo, "cannot start the gzip stream", output));
  const auto write_failed = [&] {
    return std::unexpected(overlay_error(TraceErrorKind::kIo, fmt::format("cannot be written: {}", writer.error()), output));
  };

  // The new events go out one by one, not as one string: a 10 GB trace has tens of millions of points.
  const auto write_added = [&] {
    std::string line;
    for (std::size_t i = 0; i < events.size(); ++i) {
      line = i == 0 ? "\n" : ",\n";
      line += overlay_event_json(events[i]);
      if (!writer.write(line)) return false;
    }
    return true;
  };
  summary.added_events = events.size();

  OverlayInsertionFinder finder;
  bool inserted = false;
  bool need_separator = false;  // a ',' between the new events and the first original one, unless the array is empty
  std::vector<char> buffer(kOverlayChunk);
  for (;;) {
    auto n = reader->read(buffer.data(), buffer.size());
    if (!n) return input_error(n.error());
    if (*n == 0) break;
    summary.input_json_bytes += *n;
    std::string_view piece(buffer.data(), *n);
    if (!inserted) {
      const std::size_t at = finder.feed(piece);
      if (at == std::string_view::npos) {
        if (!writer.write(piece)) return write_failed();
        continue;
      }
      if (!writer.write(piece.substr(0, at)) || !write_added()) return write_failed();
      inserted = true;
      need_separator = !events.empty();
      piece.remove_prefix(at);
    }
    if (need_separator) {
      const std::size_t first = piece.find_first_not_of(" \n\r\t");
      if (first == std::string_view::npos) {
        if (!writer.write(piece)) return write_failed();
        continue;
      }
      if (!writer.write(piece.substr(0, first)) || (piece[first] != ']' && !writer.write(","))) return write_failed();
      need_separator = false;
      piece.remove_prefix(first);
    }
    if (!writer.write(piece)) return write_failed();
  }
  if (!inserted) {
    return std::unexpected(overlay_error(TraceErrorKind::kNotATrace, "not a Chrome trace: no top-level traceEvents array", input));
  }
  if (need_separator) {
    return std::unexpected(overlay_error(TraceErrorKind::kTruncated, "ends inside its traceEvents array", input));
  }
  if (!writer.finish()) return write_failed();
  if (::close(temp.fd) != 0) {
    temp.fd = -1;
    return std::unexpected(overlay_error(TraceErrorKind::kIo, fmt::format("cannot be written: {}", std::strerror(errno)), output));
  }
  temp.fd = -1;
  if (::rename(temp.path.c_str(), output.c_str()) != 0) {
    return std::unexpected(overlay_error(TraceErrorKind::kIo, fmt::format("cannot be written: {}", std::strerror(errno)), output));
  }
  temp.keep = true;
  summary.output_file_bytes = writer.written();
  return summary;
}

}  // namespace gpuscope::trace
