#include "agent/event_socket.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace gpuscope::agent {

namespace {

// One recvmmsg reads up to this many datagrams: at 100k events/s that is a few thousand calls a second
// rather than a hundred thousand.
constexpr std::size_t kBatch = 64;
// A datagram may hold several events (JSON lines); a longer one arrives truncated and is rejected whole.
constexpr std::size_t kDatagramBytes = 16 * 1024;
// The socket's buffer: what net.unix.max_dgram_qlen lets queue (a count of datagrams, which bounds the
// queue first on most systems) fits in it.
constexpr int kReceiveBufferBytes = 8 * 1024 * 1024;

// net.unix.max_dgram_qlen below this drops bursts of ranks stepping together (see deploy/sysctl/).
constexpr int kAdvisedDatagramQueue = 512;
// Under a stream of events (a read found several datagrams), the thread naps this long before it reads
// again, so each wake-up takes a batch rather than one datagram: at 100k events/s waking per datagram
// spent most of a core on context switches. Only with a queue that holds what arrives meanwhile
// (100k/s x 200 us = 20 datagrams, far under kAdvisedDatagramQueue); with the kernel's default of 10
// the thread reads as soon as it is woken.
constexpr auto kBatchingNap = std::chrono::microseconds(200);
constexpr int kBatchingNapMinQueue = 256;

std::string errno_text(int err) { return std::strerror(err); }

std::optional<int> read_max_dgram_qlen() {
  std::FILE* f = std::fopen("/proc/sys/net/unix/max_dgram_qlen", "re");
  if (f == nullptr) return std::nullopt;
  int value = 0;
  const bool read = std::fscanf(f, "%d", &value) == 1;
  std::fclose(f);
  return read ? std::optional<int>(value) : std::nullopt;
}

bool make_directory(const std::string& dir, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) == 0) return true;
  struct stat st {};
  return errno == EEXIST && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Another process receives on `path` (a live agent): a datagram to it is accepted.
bool socket_in_use(const std::string& path) {
  const int probe = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const bool live = ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(probe);
  return live;
}

}  // namespace

std::string default_events_socket_path(const std::function<const char*(const char*)>& env) {
  if (const char* runtime = env("RUNTIME_DIRECTORY"); runtime != nullptr && *runtime != '\0') {
    std::string first(runtime);
    first = first.substr(0, first.find(':'));  // systemd lists one directory per RuntimeDirectory= entry
    return first + "/events.sock";
  }
  // Group members must reach the socket through the directory: 0755, the socket itself 0660.
  if (::access("/run", W_OK) == 0 && make_directory("/run/gpuscope", 0755) && ::access("/run/gpuscope", W_OK) == 0) {
    return "/run/gpuscope/events.sock";
  }
  if (const char* xdg = env("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg != '\0') {
    const std::string dir = std::string(xdg) + "/gpuscope";
    if (make_directory(dir, 0700)) return dir + "/events.sock";
  }
  return {};
}

std::expected<gid_t, std::string> parse_group(const std::string& name) {
  std::vector<char> buffer(16 * 1024);
  group g{};
  group* found = nullptr;
  const int err = ::getgrnam_r(name.c_str(), &g, buffer.data(), buffer.size(), &found);
  if (err != 0 || found == nullptr) return std::unexpected(fmt::format("--events-group: no group {:?} on this system", name));
  return found->gr_gid;
}

std::expected<std::unique_ptr<EventSocket>, std::string> EventSocket::open(const EventSocketOptions& options,
                                                                           analysis::TrainingIntake& intake,
                                                                           const model::Clock& clock, log::Logger& log) {
  const std::string& path = options.path;
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return std::unexpected(fmt::format("events socket {:?}: a socket path is 1 to {} bytes long", path,
                                       sizeof(addr.sun_path) - 1));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      return std::unexpected(fmt::format("events socket {}: the path exists and is not a socket", path));
    }
    if (socket_in_use(path)) return std::unexpected(fmt::format("events socket {}: in use by another process", path));
    ::unlink(path.c_str());  // left by an agent that was killed
  }

  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return std::unexpected(fmt::format("events socket: {}", errno_text(errno)));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    ::close(fd);
    return std::unexpected(fmt::format("events socket {}: {}", path, errno_text(err)));
  }
  // Sending takes write permission on the socket: bound under the process's umask (no group or other
  // write, 022 or stricter), it opens to the group only now. (Not umask(): that is the whole process's,
  // and other threads create files meanwhile.)
  if (::chmod(path.c_str(), 0660) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return std::unexpected(fmt::format("events socket {}: {}", path, errno_text(err)));
  }
  if (options.group && ::chown(path.c_str(), static_cast<uid_t>(-1), *options.group) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return std::unexpected(fmt::format("events socket {}: cannot give it group {}: {}", path, *options.group,
                                       errno_text(err)));
  }
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
  // As root the limit (net.core.rmem_max) does not apply; otherwise the kernel caps what is asked.
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &kReceiveBufferBytes, sizeof(kReceiveBufferBytes)) != 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kReceiveBufferBytes, sizeof(kReceiveBufferBytes));
  }
  struct stat bound_stat {};
  ::stat(path.c_str(), &bound_stat);
  // stop() wakes the thread through it, so the thread sleeps in poll() until datagrams or a stop come.
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return std::unexpected(fmt::format("events socket {}: {}", path, errno_text(err)));
  }
  std::unique_ptr<EventSocket> socket(new EventSocket(fd, wake, path, bound_stat.st_ino, intake, clock, log));
  socket->thread_ = std::thread([s = socket.get()] { s->run(); });
  log.info("events socket listening", {{"path", path}});
  // The kernel queues this many datagrams for the socket, whatever its buffer: a burst beyond it is
  // dropped by the senders (their events never wait), so the agent cannot even count it.
  if (auto qlen = read_max_dgram_qlen(); qlen && *qlen < kAdvisedDatagramQueue) {
    log.warn("events socket: the kernel queues few events for it; bursts beyond them are lost by the senders",
             {{"net.unix.max_dgram_qlen", std::to_string(*qlen)},
              {"advised", std::to_string(kAdvisedDatagramQueue)},
              {"fix", "sysctl -w net.unix.max_dgram_qlen=512 (deploy/sysctl/90-gpuscope.conf), then restart"}});
  }
  return socket;
}

EventSocket::~EventSocket() { stop(); }

void EventSocket::stop() {
  stop_.store(true);
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    // Only our own socket: a newer agent may have replaced the file since.
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && st.st_ino == inode_) ::unlink(path_.c_str());
  }
}

void EventSocket::run() {
  analysis::TrainingEventParser parser;
  // Not zeroed: the kernel writes each datagram's bytes, so only the pages busy batches use take memory.
  const auto buffers = std::make_unique_for_overwrite<char[]>(kBatch * kDatagramBytes);
  constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(ucred));
  std::vector<char> controls(kBatch * kControlBytes);
  std::array<iovec, kBatch> iov{};
  std::array<mmsghdr, kBatch> messages{};
  const bool nap = read_max_dgram_qlen().value_or(0) >= kBatchingNapMinQueue;
  bool drained = true;  // the last read found the queue empty: wait for more
  bool busy = false;    // the last read found several datagrams
  while (!stop_.load()) {
    // While datagrams keep coming, read again at once: the kernel queues only net.unix.max_dgram_qlen of
    // them, so every wait in poll() is time in which senders may find the queue full.
    if (drained && busy && nap) std::this_thread::sleep_for(kBatchingNap);
    if (drained && !(busy && nap)) {
      std::array<pollfd, 2> p{{{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}}};
      const int ready = ::poll(p.data(), p.size(), -1);
      if (ready <= 0 || (p[0].revents & POLLIN) == 0) continue;
    }
    for (std::size_t i = 0; i < kBatch; ++i) {
      iov[i] = {buffers.get() + i * kDatagramBytes, kDatagramBytes};
      messages[i] = {};
      messages[i].msg_hdr.msg_iov = &iov[i];
      messages[i].msg_hdr.msg_iovlen = 1;
      messages[i].msg_hdr.msg_control = controls.data() + i * kControlBytes;
      messages[i].msg_hdr.msg_controllen = kControlBytes;
    }
    const int n = ::recvmmsg(fd_, messages.data(), kBatch, MSG_DONTWAIT, nullptr);
    drained = n < static_cast<int>(kBatch);
    busy = n > 1;
    if (n <= 0) continue;
    const std::int64_t now_ms = clock_.unix_ms();
    for (int i = 0; i < n; ++i) {
      const auto& header = messages[static_cast<std::size_t>(i)].msg_hdr;
      if ((header.msg_flags & MSG_TRUNC) != 0) {
        intake_.reject_whole(analysis::EventTransport::kSocket, analysis::EventRejectReason::kTooLarge);
        continue;
      }
      std::optional<int> sender;
      for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(const_cast<msghdr*>(&header), c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
          ucred cred{};
          std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
          if (cred.pid > 0) sender = cred.pid;
        }
      }
      const std::string_view text(static_cast<const char*>(header.msg_iov->iov_base),
                                  messages[static_cast<std::size_t>(i)].msg_len);
      intake_.take(text, now_ms, analysis::EventTransport::kSocket, sender, parser);
    }
  }
}

}  // namespace gpuscope::agent
