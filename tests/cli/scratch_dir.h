// A scratch directory for the CLI tests, removed at the end of the test (one definition for every test
// file: the sanitizer build compiles them together).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpuscope::testing {

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    char tmpl[] = "/tmp/gpuscope-cli-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  // Writes `text` to `rel` (a name, or a path with folders made as needed) in the directory; its path.
  std::string write(const std::string& rel, const std::string& text) const {
    const auto p = path / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  // A folder `rel` in the directory, made; its path.
  std::string dir(const std::string& rel) const {
    std::filesystem::create_directories(path / rel);
    return (path / rel).string();
  }
  // A data directory inside it, not yet created.
  std::string data_dir() const { return (path / "data").string(); }
};

}  // namespace gpuscope::testing
