// The web dashboard's files (web/src/ and uPlot), embedded into the binary at build time by
// cmake/embed_files.cmake: the agent serves its page with no files and no CDN at run time.
#pragma once

#include <span>
#include <string_view>

namespace gpuscope::http {

struct EmbeddedFile {
  std::string_view name;   // the file's name, as the page asks for it below static/ ("index.html" is /)
  std::string_view bytes;  // its contents
};

// Every embedded file (defined in the generated web_assets_data.cc).
std::span<const EmbeddedFile> embedded_web_files();
// A hash of all of them: the ETag a browser revalidates its copy with.
std::string_view embedded_web_version();

}  // namespace gpuscope::http
