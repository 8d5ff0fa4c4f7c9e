// The JSON answers of the agent's /api/v1/* endpoints in Prometheus's HTTP API envelope:
// {"status":"success","data":...} or {"status":"error","errorType":...,"error":...}.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "http/http_server.h"

namespace gpuscope::http {

// `body` as application/json, one line; text that is not UTF-8 is replaced, never a throw.
inline HttpResponse api_json(int status, const nlohmann::ordered_json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return r;
}

// Prometheus's error envelope: 400 bad_data, 405, 503 unavailable/timeout/canceled.
inline HttpResponse api_error(int status, std::string_view type, std::string_view message) {
  return api_json(status, {{"status", "error"}, {"errorType", type}, {"error", message}});
}

}  // namespace gpuscope::http
