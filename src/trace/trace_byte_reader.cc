#include "trace/trace_byte_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace gpuscope::trace {
namespace {

// Large enough that read() and inflate() calls are rare, small enough to stay in cache.
constexpr std::size_t kCompressedChunk = 256 * 1024;

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
  z_stream zs{};
  bool zs_ready = false;
  std::vector<unsigned char> compressed;
  // Bytes read before we knew whether the input is gzip.
  std::vector<char> sniff;
  std::size_t sniff_pos = 0;

  void* map = nullptr;
  std::size_t map_size = 0;
  std::uint64_t released = 0;

  ~State() {
    if (map != nullptr) ::munmap(map, map_size);
    if (zs_ready) inflateEnd(&zs);
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
      // 15 + 16: gzip wrapper only; members are restarted by hand below.
      if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        return std::unexpected(TraceError{TraceErrorKind::kIo, -1, "zlib could not be initialized", {}});
      }
      zs_ready = true;
      compressed.resize(kCompressedChunk);
      std::memcpy(compressed.data(), sniff.data(), 2);
      zs.next_in = compressed.data();
      zs.avail_in = 2;
      sniff_pos = sniff.size();
    }
    return {};
  }

  std::expected<std::size_t, TraceError> inflate_into(char* dst, std::size_t cap) {
    zs.next_out = reinterpret_cast<unsigned char*>(dst);
    zs.avail_out = static_cast<uInt>(std::min<std::size_t>(cap, 1u << 30));
    const uInt wanted = zs.avail_out;
    while (zs.avail_out == wanted) {
      if (zs.avail_in == 0 && !source_done) {
        auto n = read_source(reinterpret_cast<char*>(compressed.data()), compressed.size());
        if (!n) return std::unexpected(n.error());
        if (*n == 0) source_done = true;
        zs.next_in = compressed.data();
        zs.avail_in = static_cast<uInt>(*n);
      }
      if (zs.avail_in == 0 && source_done) {
        if (stream_ended) break;
        return std::unexpected(TraceError{TraceErrorKind::kTruncated, static_cast<std::int64_t>(produced),
                                          "the gzip stream ends early (truncated file)", {}});
      }
      if (stream_ended) {
        // Another gzip member follows (concatenated .gz files are one stream to gunzip).
        if (inflateReset(&zs) != Z_OK) break;
        stream_ended = false;
      }
      const int rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        stream_ended = true;
      } else if (rc == Z_BUF_ERROR) {
        continue;  // needs more input; read above
      } else if (rc != Z_OK) {
        return std::unexpected(TraceError{TraceErrorKind::kNotJson, static_cast<std::int64_t>(produced),
                                          fmt::format("damaged gzip data ({})", zs.msg != nullptr ? zs.msg : "zlib error"),
                                          {}});
      }
    }
    return wanted - zs.avail_out;
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
