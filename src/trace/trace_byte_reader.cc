#include "trace/trace_byte_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "trace/gzip_inflater.h"

namespace gpuscope::trace {
namespace {

// Large enough that read() and inflate() calls are rare, small enough to stay in cache.
constexpr std::size_t kCompressedChunk = 256 * 1024;

// The size of the gzip member header at the start of `bytes`, once they hold all of it (10 bytes, the
// extra field, the name and comment up to their zero bytes, the header CRC, as the flags say); nullopt
// before. Something that is no gzip header counts as 10 bytes: the inflater says what is wrong.
std::optional<std::size_t> gzip_header_size(const std::uint8_t* bytes, std::size_t size) {
  constexpr std::uint8_t kHeaderCrc = 2, kExtra = 4, kName = 8, kComment = 16;
  if (size < 10) return std::nullopt;
  if (bytes[0] != 0x1f || bytes[1] != 0x8b) return 10;
  const std::uint8_t flags = bytes[3];
  std::size_t at = 10;
  if ((flags & kExtra) != 0) {
    if (size < at + 2) return std::nullopt;
    at += 2 + (bytes[at] | static_cast<std::size_t>(bytes[at + 1]) << 8);
  }
  for (const std::uint8_t zero_ended : {kName, kComment}) {
    if ((flags & zero_ended) == 0) continue;
    if (at >= size) return std::nullopt;
    const void* zero = std::memchr(bytes + at, 0, size - at);
    if (zero == nullptr) return std::nullopt;
    at = static_cast<std::size_t>(static_cast<const std::uint8_t*>(zero) - bytes) + 1;
  }
  if ((flags & kHeaderCrc) != 0) at += 2;
  if (at > size) return std::nullopt;
  return at;
}

}  // namespace

struct TraceByteReader::State {
  int fd = -1;
  const char* memory = nullptr;  // from_memory
  std::size_t memory_size = 0;
  std::uint64_t size = 0;
  std::uint64_t consumed = 0;
  std::uint64_t produced = 0;
  bool gzip = false;
  bool sniffed = false;
  bool source_done = false;
  bool stream_ended = false;  // the last gzip member ended cleanly
  bool member_starts = false;  // the next compressed bytes begin a gzip member
  std::unique_ptr<GzipInflater> inflater;
  std::vector<std::uint8_t> compressed;
  std::size_t compressed_end = 0;  // bytes of `compressed` read from the file; the inflater has the last of them
  // Bytes read before we knew whether the input is gzip.
  std::vector<char> sniff;
  std::size_t sniff_pos = 0;

  void* map = nullptr;
  std::size_t map_size = 0;
  std::uint64_t released = 0;

  ~State() {
    if (map != nullptr) ::munmap(map, map_size);
    if (fd >= 0) ::close(fd);
  }

  // Raw bytes from the file or memory; 0 at the end.
  std::expected<std::size_t, TraceError> read_source(char* dst, std::size_t cap) {
    if (sniff_pos < sniff.size()) {
      const std::size_t n = std::min(cap, sniff.size() - sniff_pos);
      std::memcpy(dst, sniff.data() + sniff_pos, n);
      sniff_pos += n;
      return n;
    }
    if (memory != nullptr) {
      const std::size_t n = std::min<std::size_t>(cap, memory_size - consumed);
      std::memcpy(dst, memory + consumed, n);
      consumed += n;
      return n;
    }
    for (;;) {
      const ssize_t n = ::read(fd, dst, cap);
      if (n >= 0) {
        consumed += static_cast<std::uint64_t>(n);
        return static_cast<std::size_t>(n);
      }
      if (errno == EINTR) continue;
      return std::unexpected(TraceError{TraceErrorKind::kIo, -1, fmt::format("read failed: {}", std::strerror(errno)), {}});
    }
  }

  std::expected<void, TraceError> detect() {
    sniffed = true;
    char magic[2];
    std::size_t got = 0;
    while (got < 2) {
      auto n = read_source(magic + got, 2 - got);
      if (!n) return std::unexpected(n.error());
      if (*n == 0) break;
      got += *n;
    }
    sniff.assign(magic, magic + got);
    gzip = got == 2 && static_cast<unsigned char>(sniff[0]) == 0x1f && static_cast<unsigned char>(sniff[1]) == 0x8b;
    if (gzip) {
      inflater = GzipInflater::make();
      compressed.resize(kCompressedChunk);
      std::memcpy(compressed.data(), sniff.data(), 2);
      compressed_end = 2;
      inflater->set_input(compressed.data(), compressed_end);
      sniff_pos = sniff.size();
      member_starts = true;
    }
    return {};
  }

  // Before a member: its whole header in the unread input, what is left moved to the front of the
  // buffer and more read behind it, for igzip reads a header only when it has all of it at once
  // (intel/isa-l#224: the flags of a header cut in two are lost). A header the buffer cannot hold (a
  // name or an extra field of hundreds of KiB), or one the file ends inside, goes to zlib.
  std::expected<void, TraceError> start_member(bool first) {
    std::size_t unread = inflater->input_left();
    for (;;) {
      const std::uint8_t* at = compressed.data() + (compressed_end - unread);
      if (gzip_header_size(at, unread)) break;
      if (source_done || unread == compressed.size()) {
        if (std::string_view(inflater->name()) != "zlib") {
          inflater = GzipInflater::make(false);
          first = true;
        }
        break;
      }
      std::memmove(compressed.data(), at, unread);
      auto n = read_source(reinterpret_cast<char*>(compressed.data()) + unread, compressed.size() - unread);
      if (!n) return std::unexpected(n.error());
      if (*n == 0) source_done = true;
      unread += *n;
      compressed_end = unread;
    }
    if (!first) inflater->next_member();
    inflater->set_input(compressed.data() + (compressed_end - unread), unread);
    return {};
  }

  // At least one byte (unless the stream ended), as much as the input read so far gives.
  std::expected<std::size_t, TraceError> inflate_into(char* dst, std::size_t cap) {
    auto* out = reinterpret_cast<std::uint8_t*>(dst);
    std::size_t written = 0;
    while (written == 0 && cap > 0) {
      if (inflater->input_left() == 0 && !source_done) {
        auto n = read_source(reinterpret_cast<char*>(compressed.data()), compressed.size());
        if (!n) return std::unexpected(n.error());
        if (*n == 0) source_done = true;
        compressed_end = *n;
        inflater->set_input(compressed.data(), compressed_end);
      }
      if (inflater->input_left() == 0 && source_done) {
        if (stream_ended) break;
        return std::unexpected(TraceError{TraceErrorKind::kTruncated, static_cast<std::int64_t>(produced),
                                          "the gzip stream ends early (truncated file)", {}});
      }
      if (stream_ended) {
        // Another gzip member follows (concatenated .gz files are one stream to gunzip).
        stream_ended = false;
        if (auto ok = start_member(false); !ok) return std::unexpected(ok.error());
      } else if (member_starts) {
        member_starts = false;
        if (auto ok = start_member(true); !ok) return std::unexpected(ok.error());
      }
      auto step = inflater->inflate(out, cap);
      if (!step) {
        return std::unexpected(TraceError{TraceErrorKind::kNotJson, static_cast<std::int64_t>(produced),
                                          fmt::format("damaged gzip data ({})", step.error()), {}});
      }
      written = step->written;
      stream_ended = step->member_ended;
    }
    return written;
  }
};

TraceByteReader::TraceByteReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
TraceByteReader::TraceByteReader(TraceByteReader&&) noexcept = default;
TraceByteReader& TraceByteReader::operator=(TraceByteReader&&) noexcept = default;
TraceByteReader::~TraceByteReader() = default;

std::expected<TraceByteReader, TraceError> TraceByteReader::open(const std::string& path) {
  auto state = std::make_unique<State>();
  state->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (state->fd < 0) {
    return std::unexpected(TraceError{TraceErrorKind::kIo, -1, fmt::format("cannot open: {}", std::strerror(errno)), path});
  }
  struct stat st {};
  if (::fstat(state->fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return std::unexpected(TraceError{TraceErrorKind::kIo, -1, "is a directory", path});
    state->size = static_cast<std::uint64_t>(st.st_size);
  }
  // Read once, front to back: let the kernel read ahead and drop pages behind us.
  ::posix_fadvise(state->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return TraceByteReader(std::move(state));
}

TraceByteReader TraceByteReader::from_memory(const char* bytes, std::size_t size) {
  auto state = std::make_unique<State>();
  state->memory = bytes;
  state->memory_size = size;
  state->size = size;
  return TraceByteReader(std::move(state));
}

std::expected<std::size_t, TraceError> TraceByteReader::read(char* destination, std::size_t capacity) {
  auto& s = *state_;
  if (!s.sniffed) {
    if (auto ok = s.detect(); !ok) return std::unexpected(ok.error());
  }
  std::expected<std::size_t, TraceError> n = s.gzip ? s.inflate_into(destination, capacity)
                                                     : s.read_source(destination, capacity);
  if (n) s.produced += *n;
  return n;
}

std::optional<std::span<const char>> TraceByteReader::map_whole_file() {
  auto& s = *state_;
  if (!s.sniffed && !s.detect()) return std::nullopt;
  if (s.gzip || s.fd < 0 || s.size == 0 || s.size > SIZE_MAX / 2) return std::nullopt;
  void* map = ::mmap(nullptr, s.size, PROT_READ, MAP_PRIVATE, s.fd, 0);
  if (map == MAP_FAILED) return std::nullopt;
  ::madvise(map, s.size, MADV_SEQUENTIAL);
  s.map = map;
  s.map_size = s.size;
  s.consumed = s.size;
  s.produced = s.size;
  return std::span<const char>(static_cast<const char*>(map), s.size);
}

void TraceByteReader::release_before(std::uint64_t offset) {
  auto& s = *state_;
  if (s.map == nullptr) return;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t end = std::min<std::uint64_t>(offset, s.map_size) / page * page;
  if (end <= s.released) return;
  ::madvise(static_cast<char*>(s.map) + s.released, end - s.released, MADV_DONTNEED);
  s.released = end;
}

std::uint64_t TraceByteReader::file_size() const { return state_->size; }
std::uint64_t TraceByteReader::file_consumed() const { return state_->consumed; }
std::uint64_t TraceByteReader::json_bytes() const { return state_->produced; }
bool TraceByteReader::gzip() const { return state_->gzip; }

}  // namespace gpuscope::trace
