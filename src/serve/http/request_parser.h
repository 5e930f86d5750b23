// An incremental HTTP/1.1 request parser: a pure function over the bytes a connection received,
// with limits checked before anything is kept (request line, header section, header count, body
// however it is framed), answering what HTTP says for each fault: 400, 411 is the server's call,
// 413, 414, 417, 431, 501, 505. No sockets: the event loop feeds it, the fuzzer too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "serve/http/http_request.h"

namespace plexus {

struct HttpParseError {
  int status = 0;       // 0: none
  std::string message;  // what was wrong, for the error body
};

class RequestParser {
 public:
  enum class State {
    kNeedMore,  // the request is not complete: feed more bytes
    kComplete,  // take() the request
    kError,     // error(): the connection cannot be read further
  };

  explicit RequestParser(HttpLimits limits) : limits_(limits) {}

  // Parses what `input` holds, taking the bytes it used off its front (what follows a complete
  // request stays: the next one, pipelined).
  State parse(std::string& input);

  // A request's first byte arrived (blank lines before a request do not count).
  bool started() const { return phase_ != Phase::kHead || head_started_; }
  // The headers are parsed and the body is being read: request() holds them.
  bool reading_body() const { return phase_ != Phase::kHead && phase_ != Phase::kDone; }
  // The body bytes received so far (what the request holds in memory).
  std::size_t body_bytes() const { return request_.body.size(); }
  const HttpRequest& request() const { return request_; }
  const HttpParseError& error() const { return error_; }
  // The complete request (after kComplete); the parser is ready for the next.
  HttpRequest take();

 private:
  enum class Phase { kHead, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone, kError };
  State fail(int status, std::string message);
  State fail_request_line_too_long();  // 414
  State fail_head_too_large();         // 431
  State fail_body_too_large();         // 413 (--max-body)
  State fail_chunk_line_too_long();    // 400
  State parse_head(std::string& input);
  State parse_request_line(std::string_view line);
  State parse_header_line(std::string_view line);
  State resolve_framing();
  State parse_body(std::string& input);

  HttpLimits limits_;
  Phase phase_ = Phase::kHead;
  HttpRequest request_;
  HttpParseError error_;
  bool head_started_ = false;
  std::size_t scan_ = 0;        // kHead: where the search for the blank line goes on
  std::size_t line_start_ = 0;  // kHead: the start of the line being scanned
  std::size_t head_bytes_ = 0;  // kTrailers: trailer bytes so far
  std::uint64_t body_left_ = 0;  // kBody / kChunkData: bytes still to come
  std::size_t body_known_ = 0;  // Content-Length, or the chunk sizes announced so far
};

// Every request in `bytes` parsed in order, as a connection that received them at once would
// (the fuzz harness and tests): the complete requests, and the error that ended it (status 0
// when the bytes ended cleanly or mid-request).
struct ParsedStream {
  std::vector<HttpRequest> requests;
  HttpParseError error;
  bool incomplete = false;  // bytes of an unfinished request remained
};
ParsedStream parse_requests(std::string bytes, const HttpLimits& limits);

}  // namespace plexus
