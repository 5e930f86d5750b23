// The errors of the HTTP API in OpenAI's shape: a status and {"error": {"message", "type",
// "param", "code"}}, thrown by request parsing and the handlers, written by the server.
#pragma once
#include <stdexcept>
#include <string>

#include "core/json.h"

namespace plexus {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string type, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)),
        code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }  // "" → null
  const std::string& code() const { return code_; }    // "" → null

 private:
  int status_;
  std::string type_, param_, code_;
};

// 400 invalid_request_error naming the request field `param`.
ApiError invalid_request(const std::string& message, const std::string& param = {}, const std::string& code = {});

// {"error": {"message", "type", "param", "code"}} (param and code null when empty).
Json error_json(const std::string& message, const std::string& type, const std::string& param = {},
                const std::string& code = {});
Json error_json(const ApiError& e);

// The error of a status the server answers without a handler's own body (404, 405, 413, 500...).
ApiError error_for_status(int status);
// error_for_status(status) with `message` (when not empty) saying what exactly was wrong.
ApiError http_error(int status, const std::string& message);

}  // namespace plexus
