// Errors people can act on, and the exit code each kind maps to (0 ok, 1 runtime, 2 bad input,
// 130 interrupted).
#pragma once
#include <stdexcept>
#include <string>

namespace plexus {

enum class ExitCode : int { kOk = 0, kRuntime = 1, kBadInput = 2, kInterrupted = 130 };

// Base of every error plexus reports to a person: the message says what failed, with which
// value, and what to do.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad command line or bad input file (exit 2).
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(ExitCode::kBadInput, message) {}
};

// Something failed while doing valid work (exit 1).
class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& message) : Error(ExitCode::kRuntime, message) {}
};

// SIGINT or SIGTERM ended the work early (exit 130, as a shell reports Ctrl-C); what was complete
// has been kept.
class Interrupted : public Error {
 public:
  explicit Interrupted(const std::string& message) : Error(ExitCode::kInterrupted, message) {}
};

}  // namespace plexus
