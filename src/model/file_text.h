// Whole-file reads of the small text files gpuscope takes by name (rule files and their tests,
// simulator scenarios, the price catalog), with the reason when a file cannot be read.
// Header-only so the simulated NVML library, which links nothing of gpuscope's, can use it too.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <expected>
#include <string>

namespace gpuscope::model {

// The file's bytes, or why not as strerror says it ("No such file or directory", "Permission
// denied", "Is a directory"). Not std::ifstream: it opens a directory without complaint and its read
// then fails with EISDIR, which `out << in.rdbuf()` turns into an empty text (an "empty file" error,
// or a check that passes on zero rules) and YAML::LoadFile into an exception from inside libstdc++.
inline std::expected<std::string, std::string> read_file_text(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::unexpected(std::string(std::strerror(errno)));
  std::string text;
  struct stat st {};
  int error = 0;
  if (::fstat(fd, &st) != 0) {
    error = errno;
  } else if (S_ISDIR(st.st_mode)) {
    error = EISDIR;
  } else {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        text.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0) {
        break;
      } else if (errno != EINTR) {
        error = errno;
        break;
      }
    }
  }
  ::close(fd);
  if (error != 0) return std::unexpected(std::string(std::strerror(error)));
  return text;
}

}  // namespace gpuscope::model
