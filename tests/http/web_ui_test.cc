#include "http/web_ui.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "e2e/http_client.h"
#include "http/gzip.h"
#include "http/route_prefix.h"

namespace gpuscope::http {
namespace {

namespace fs = std::filesystem;

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string header_of(const HttpResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

const fs::path kWeb = fs::path(GPUSCOPE_SOURCE_DIR) / "web";

TEST(WebUi, EmbedsEveryFileOfWebSrcAndUplotExactlyAsTheyAreOnDisk) {
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(kWeb / "src")) on_disk.insert(e.path().filename().string());
  on_disk.insert("uPlot.iife.min.js");
  on_disk.insert("uPlot.min.css");
  std::set<std::string> embedded;
  for (const auto& f : embedded_web_files()) embedded.insert(std::string(f.name));
  EXPECT_EQ(embedded, on_disk) << "rebuild: the embedded dashboard differs from web/src";
  for (const auto& f : embedded_web_files()) {
    const fs::path source = f.name.starts_with("uPlot") ? kWeb / "node_modules/uplot/dist" / f.name : kWeb / "src" / f.name;
    EXPECT_EQ(f.bytes, file_text(source)) << f.name;
  }
  EXPECT_EQ(embedded_web_version().size(), 16u);
}

TEST(WebUi, ServesThePageAtTheRootWithItsSecurityPolicyAndTheFilesBelowStatic) {
  WebUi ui;
  auto page = ui.handle(HttpRequest("GET", "/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page.content(), file_text(kWeb / "src/index.html"));
  EXPECT_EQ(header_of(page, "Content-Security-Policy"), WebUi::kContentSecurityPolicy);
  EXPECT_EQ(header_of(page, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(header_of(page, "Cache-Control"), "no-cache");

  auto js = ui.handle(HttpRequest("GET", "/static/uPlot.iife.min.js"));
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(js.content(), file_text(kWeb / "node_modules/uplot/dist/uPlot.iife.min.js"));
  auto css = ui.handle(HttpRequest("GET", "/static/uPlot.min.css"));
  EXPECT_EQ(css.content_type, "text/css; charset=utf-8");
  EXPECT_EQ(header_of(css, "Content-Security-Policy"), "") << "the policy is the page's";
}

TEST(WebUi, GzipOnRequestInflatesToTheSameBytesAndIsMadeOnce) {
  WebUi ui;
  const std::vector<std::pair<std::string, std::string>> gz{{"Accept-Encoding", "gzip, deflate"}};
  auto a = ui.handle(HttpRequest("GET", "/static/uPlot.iife.min.js", gz));
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(header_of(a, "Content-Encoding"), "gzip");
  ASSERT_NE(a.shared_body, nullptr);
  EXPECT_LT(a.shared_body->size(), find_web_file("uPlot.iife.min.js")->bytes.size() / 2);
  EXPECT_EQ(e2e::gunzip(*a.shared_body), find_web_file("uPlot.iife.min.js")->bytes);
  auto b = ui.handle(HttpRequest("GET", "/static/uPlot.iife.min.js", gz));
  EXPECT_EQ(b.shared_body, a.shared_body) << "compressed again";
  auto plain = ui.handle(HttpRequest("GET", "/static/uPlot.iife.min.js"));
  EXPECT_EQ(header_of(plain, "Content-Encoding"), "");
}

TEST(WebUi, AMatchingEtagIsNotModifiedAndAnotherGetsTheFile) {
  WebUi ui;
  auto first = ui.handle(HttpRequest("GET", "/"));
  const auto etag = header_of(first, "ETag");
  ASSERT_EQ(etag, "\"" + std::string(embedded_web_version()) + "\"");
  auto again = ui.handle(HttpRequest("GET", "/", {{"If-None-Match", etag}}));
  EXPECT_EQ(again.status, 304);
  EXPECT_EQ(again.content(), "");
  EXPECT_EQ(header_of(again, "ETag"), etag);
  auto list = ui.handle(HttpRequest("GET", "/static/uPlot.min.css", {{"If-None-Match", "\"old\", " + etag}}));
  EXPECT_EQ(list.status, 304);
  auto stale = ui.handle(HttpRequest("GET", "/", {{"If-None-Match", "\"0123456789abcdef\""}}));
  EXPECT_EQ(stale.status, 200);
  EXPECT_FALSE(stale.content().empty());
}

TEST(WebUi, UnknownFilesAre404AndOtherMethods405) {
  WebUi ui;
  for (const char* path : {"/static/nope.js", "/static/", "/static/../CMakeLists.txt", "/static/src/index.html"}) {
    auto r = ui.handle(HttpRequest("GET", path));
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_NE(r.content().find(path), std::string_view::npos) << "the answer names the path";
  }
  auto post = ui.handle(HttpRequest("POST", "/"));
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(header_of(post, "Allow"), "GET, HEAD");
  EXPECT_TRUE(WebUi::handles("/"));
  EXPECT_TRUE(WebUi::handles("/static/x.js"));
  EXPECT_FALSE(WebUi::handles("/metrics"));
  EXPECT_FALSE(WebUi::handles("/staticx"));
}

TEST(RoutePrefix, NormalizesSlashesAndRefusesWhatAUrlPathCannotHold) {
  EXPECT_EQ(normalize_route_prefix("").value(), "");
  EXPECT_EQ(normalize_route_prefix("/").value(), "");
  EXPECT_EQ(normalize_route_prefix("/gpuscope").value(), "/gpuscope");
  EXPECT_EQ(normalize_route_prefix("/gpuscope/").value(), "/gpuscope");
  EXPECT_EQ(normalize_route_prefix("gpuscope").value(), "/gpuscope");
  EXPECT_EQ(normalize_route_prefix("/a/b-c_d.e~f").value(), "/a/b-c_d.e~f");
  for (const char* bad : {"/a b", "/a?b", "/a#b", "/a%20", "/a//b", "/a/../b", "/..", "/a/./b", "/\"x", "/a\\b"}) {
    auto r = normalize_route_prefix(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().find("--web.route-prefix"), std::string::npos) << r.error();
    EXPECT_EQ(r.error().find('\n'), std::string::npos) << "one line";
  }
}

TEST(RoutePrefix, ForwardsWhatIsBelowThePrefixWithItsQueryAndRedirectsTheRoots) {
  std::vector<std::string> seen;
  auto handler = with_route_prefix("/gs", [&](const HttpRequest& r) {
    seen.push_back(std::string(r.path()) + "?" + std::string(r.query("query").value_or("")) + " " +
                   std::string(r.header("Accept").value_or("")));
    return HttpResponse{200, "text/plain", "inner", {}, nullptr};
  });
  auto ok = handler(HttpRequest("GET", "/gs/api/v1/query", {{"Accept", "json"}}, {{"query", "up"}}));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(handler(HttpRequest("GET", "/gs/")).status, 200);
  EXPECT_EQ(seen, (std::vector<std::string>{"/api/v1/query?up json", "/? "}));
  for (const char* root : {"/", "/gs"}) {
    auto r = handler(HttpRequest("GET", root));
    EXPECT_EQ(r.status, 302) << root;
    EXPECT_EQ(header_of(r, "Location"), "/gs/") << root;
  }
  for (const char* outside : {"/metrics", "/gsx/metrics", "/g", "/static/index.html"}) {
    auto r = handler(HttpRequest("GET", outside));
    EXPECT_EQ(r.status, 404) << outside;
    EXPECT_NE(r.content().find("/gs/"), std::string_view::npos) << r.content();
  }
  EXPECT_EQ(seen.size(), 2u) << "nothing outside the prefix reached the routes";
}

TEST(GzipJson, AnApiAnswerOfAKibibyteOrMoreIsGzippedWhenAcceptedAndNothingElseIs) {
  std::string json = "{\"data\":[";
  for (int i = 0; i < 400; ++i) json += std::to_string(i) + ",";
  json += "0]}";
  ASSERT_GE(json.size(), 1024u);
  const HttpRequest accepts("GET", "/api/v1/query", {{"Accept-Encoding", "gzip"}});
  HttpResponse r{200, "application/json", json, {}, nullptr};
  gzip_json_if_accepted(accepts, r);
  EXPECT_EQ(header_of(r, "Content-Encoding"), "gzip");
  EXPECT_EQ(header_of(r, "Vary"), "Accept-Encoding");
  EXPECT_LT(r.content().size(), json.size() / 2);
  EXPECT_EQ(e2e::gunzip(std::string(r.content())), json);

  // A shared body (a cached answer) is compressed into the response's own body, the cache untouched.
  auto shared = std::make_shared<const std::string>(json);
  HttpResponse cached{200, "application/json", "", {}, shared};
  gzip_json_if_accepted(accepts, cached);
  EXPECT_EQ(cached.shared_body, nullptr);
  EXPECT_EQ(e2e::gunzip(std::string(cached.content())), json);
  EXPECT_EQ(*shared, json);

  const auto untouched = [&](HttpResponse response, const HttpRequest& request) {
    const std::string before(response.content());
    gzip_json_if_accepted(request, response);
    return response.content() == before && header_of(response, "Content-Encoding") != "gzip";
  };
  EXPECT_TRUE(untouched({200, "application/json", json, {}, nullptr}, HttpRequest("GET", "/api/v1/query")));
  EXPECT_TRUE(untouched({200, "application/json", json, {}, nullptr},
                        HttpRequest("GET", "/api/v1/query", {{"Accept-Encoding", "gzip;q=0, identity"}})));
  EXPECT_TRUE(untouched({200, "application/json", "{\"status\":\"success\"}", {}, nullptr}, accepts)) << "under 1 KiB";
  EXPECT_TRUE(untouched({200, "text/plain; charset=utf-8", json, {}, nullptr}, accepts));
  HttpResponse encoded{200, "application/json", json, {{"Content-Encoding", "identity"}}, nullptr};
  EXPECT_TRUE(untouched(encoded, accepts)) << "already encoded";
}

}  // namespace
}  // namespace gpuscope::http
