#include "http/web_ui.h"

#include <fmt/format.h>

#include "http/gzip.h"

namespace gpuscope::http {
namespace {

std::string_view content_type_of(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  if (name.ends_with(".png")) return "image/png";
  if (name.ends_with(".json")) return "application/json";
  return "application/octet-stream";
}

HttpResponse plain(int status, std::string body) { return {status, "text/plain; charset=utf-8", std::move(body), {}, nullptr}; }

}  // namespace

const EmbeddedFile* find_web_file(std::string_view name) {
  for (const auto& f : embedded_web_files()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::shared_ptr<const std::string> WebUi::compressed(const EmbeddedFile& file) {
  std::lock_guard lock(mu_);
  auto& slot = gzip_[file.name];
  if (!slot) slot = std::make_shared<const std::string>(gzip_compress(file.bytes));
  return slot;
}

HttpResponse WebUi::handle(const HttpRequest& request) {
  const auto path = request.path();
  if (request.method() != "GET" && request.method() != "HEAD") {
    auto r = plain(405, fmt::format("405 method {} not allowed on {} (GET or HEAD)\n", request.method(), path));
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  const std::string_view name = path == "/" ? std::string_view("index.html") : path.substr(std::string_view("/static/").size());
  const EmbeddedFile* file = find_web_file(name);
  if (file == nullptr) return plain(404, fmt::format("404 not found: {} (see / for the dashboard)\n", path));

  const std::string etag = fmt::format("\"{}\"", embedded_web_version());
  HttpResponse r;
  r.content_type = std::string(content_type_of(name));
  // Revalidated on each load (a 304 costs nothing), so a new agent's page is never stale.
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("ETag", etag);
  r.headers.emplace_back("Vary", "Accept-Encoding");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  if (name.ends_with(".html")) r.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  if (const auto inm = request.header("If-None-Match"); inm && inm->find(etag) != std::string_view::npos) {
    r.status = 304;
    r.content_type.clear();
    return r;
  }
  if (accepts_gzip(request.header("Accept-Encoding").value_or(""))) {
    r.headers.emplace_back("Content-Encoding", "gzip");
    r.shared_body = compressed(*file);
  } else {
    r.body.assign(file->bytes);
  }
  return r;
}

}  // namespace gpuscope::http
