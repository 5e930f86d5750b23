// OpenAI-shaped API errors (serve/api_error.h).
#include "serve/api_error.h"

namespace plexus {

ApiError invalid_request(const std::string& message, const std::string& param, const std::string& code) {
  return ApiError(400, message, "invalid_request_error", param, code);
}

Json error_json(const std::string& message, const std::string& type, const std::string& param, const std::string& code) {
  Json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return Json{{"error", e}};
}

Json error_json(const ApiError& e) { return error_json(e.what(), e.type(), e.param(), e.code()); }

ApiError error_for_status(int status) {
  switch (status) {
    case 400: return ApiError(400, "bad request", "invalid_request_error");
    case 401: return ApiError(401, "missing or wrong API key: send the header 'Authorization: Bearer KEY'",
                              "invalid_request_error", "", "invalid_api_key");
    case 404: return ApiError(404, "no such endpoint: the server answers GET /health, /v1/models, /metrics and POST "
                              "/v1/completions, /v1/chat/completions, /tokenize, /detokenize",
                              "invalid_request_error", "", "unknown_url");
    case 405: return ApiError(405, "method not allowed on this endpoint", "invalid_request_error", "", "method_not_allowed");
    case 408: return ApiError(408, "the request did not arrive in time (see plexus serve --request-timeout)",
                              "invalid_request_error", "", "request_timeout");
    case 411: return ApiError(411, "the request body needs a Content-Length", "invalid_request_error", "", "length_required");
    case 413: return ApiError(413, "request body too large (see plexus serve --max-body)", "invalid_request_error", "",
                              "request_too_large");
    case 414: return ApiError(414, "the request target is too long", "invalid_request_error", "", "uri_too_long");
    case 417: return ApiError(417, "unsupported Expect header", "invalid_request_error", "", "expectation_failed");
    case 431: return ApiError(431, "the request's headers are too large", "invalid_request_error", "", "headers_too_large");
    case 501: return ApiError(501, "not implemented", "invalid_request_error", "", "not_implemented");
    case 505: return ApiError(505, "HTTP version not supported: use HTTP/1.1", "invalid_request_error", "",
                              "http_version_not_supported");
    case 429: return ApiError(429, "too many requests waiting: try again later", "rate_limit_error", "", "queue_full");
    case 503: return ApiError(503, "the server is not serving requests now", "service_unavailable", "", "unavailable");
    default: break;
  }
  if (status >= 500) return ApiError(status, "internal server error", "server_error");
  return ApiError(status, "request failed", "invalid_request_error");
}

ApiError http_error(int status, const std::string& message) {
  const ApiError e = error_for_status(status);
  if (message.empty()) return e;
  return ApiError(status, message, e.type(), e.param(), e.code());
}

}  // namespace plexus
