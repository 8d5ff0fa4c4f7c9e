#include "http/gzip.h"

#include <cstdlib>
#include <stdexcept>

#include <zlib.h>

namespace gpuscope::http {

bool accepts_gzip(std::string_view header) {
  for (std::size_t pos = 0; pos < header.size();) {
    std::size_t end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view item = header.substr(pos, end - pos);
    pos = end + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    const std::string_view coding = item.substr(0, item.find(';'));
    if (coding != "gzip" && coding != "x-gzip" && coding != "*") continue;
    const auto q = item.find("q=");
    if (q != std::string_view::npos && std::strtod(std::string(item.substr(q + 2)).c_str(), nullptr) <= 0) continue;
    return true;
  }
  return false;
}

std::string gzip_compress(std::string_view data) {
  z_stream zs{};
  // 15 window bits + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&zs, data.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}

void gzip_json_if_accepted(const HttpRequest& request, HttpResponse& response) {
  constexpr std::size_t kMinBytes = 1024;
  if (!response.content_type.starts_with("application/json") || response.content().size() < kMinBytes) return;
  for (const auto& [name, value] : response.headers) {
    if (name == "Content-Encoding") return;
  }
  if (!accepts_gzip(request.header("Accept-Encoding").value_or(""))) return;
  response.body = gzip_compress(response.content());
  response.shared_body.reset();
  response.headers.emplace_back("Content-Encoding", "gzip");
  response.headers.emplace_back("Vary", "Accept-Encoding");
}

}  // namespace gpuscope::http
