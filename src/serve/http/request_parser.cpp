// The incremental HTTP/1.1 request parser (serve/http/request_parser.h), after RFC 9112: the
// request line, header fields, and the body framed by Content-Length or chunked coding.
#include "serve/http/request_parser.h"

#include <algorithm>
#include <cstring>

namespace plexus {

namespace {

constexpr std::size_t kMaxChunkLine = 1024;  // a chunk's size line, extensions included

bool is_tchar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The elements of a comma-separated header list, trimmed, empty ones skipped.
std::vector<std::string_view> list_elements(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    const std::string_view e = trim_ows(s.substr(0, comma));
    if (!e.empty()) out.push_back(e);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

// The values of every header named `name`, as one list.
std::vector<std::string_view> header_list(const HttpRequest& r, std::string_view name) {
  std::vector<std::string_view> out;
  for (const auto& [n, v] : r.headers) {
    if (n != name) continue;
    for (std::string_view e : list_elements(v)) out.push_back(e);
  }
  return out;
}

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

// `s` shown in a message: at most 40 bytes, control bytes as '?'.
std::string shown(std::string_view s) {
  std::string out(s.substr(0, 40));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return "'" + out + (s.size() > 40 ? "...'" : "'");
}

}  // namespace

RequestParser::State RequestParser::fail(int status, std::string message) {
  phase_ = Phase::kError;
  error_ = {status, std::move(message)};
  return State::kError;
}

RequestParser::State RequestParser::fail_request_line_too_long() {
  return fail(414, "the request line is longer than " + std::to_string(limits_.max_request_line) + " bytes");
}

RequestParser::State RequestParser::fail_head_too_large() {
  return fail(431, "the request's headers are larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
}

RequestParser::State RequestParser::fail_body_too_large() {
  return fail(413, "the request body is larger than the limit of " + std::to_string(limits_.max_body) +
                       " bytes (plexus serve --max-body)");
}

RequestParser::State RequestParser::fail_chunk_line_too_long() {
  return fail(400, "a chunk size line longer than " + std::to_string(kMaxChunkLine) + " bytes");
}

RequestParser::State RequestParser::parse(std::string& input) {
  if (phase_ == Phase::kError) return State::kError;
  if (phase_ == Phase::kHead) {
    const State s = parse_head(input);
    if (s == State::kError || phase_ == Phase::kHead) return s;
  }
  if (phase_ == Phase::kDone) return State::kComplete;
  return parse_body(input);
}

RequestParser::State RequestParser::parse_head(std::string& input) {
  if (!head_started_) {
    // Blank lines before a request line are ignored (RFC 9112, 2.2).
    std::size_t skip = 0;
    for (;;) {
      if (input.compare(skip, 2, "\r\n") == 0) {
        skip += 2;
      } else if (skip < input.size() && input[skip] == '\n') {
        skip += 1;
      } else {
        break;
      }
    }
    input.erase(0, skip);
    if (input.empty() || input == "\r") return State::kNeedMore;
    head_started_ = true;
    scan_ = line_start_ = 0;
  }
  // The header section ends at the first empty line.
  std::size_t head_end = std::string::npos;
  while (scan_ < input.size()) {
    const std::size_t nl = input.find('\n', scan_);
    if (nl == std::string::npos) {
      scan_ = input.size();
      break;
    }
    const std::size_t len = nl - line_start_;
    if (line_start_ > 0 && (len == 0 || (len == 1 && input[line_start_] == '\r'))) {
      head_end = nl + 1;
      break;
    }
    if (line_start_ == 0 && len > limits_.max_request_line) {
      return fail_request_line_too_long();
    }
    line_start_ = scan_ = nl + 1;
  }
  if (head_end == std::string::npos) {
    if (line_start_ == 0 && input.size() > limits_.max_request_line) {
      return fail_request_line_too_long();
    }
    if (input.size() > limits_.max_header_bytes) {
      return fail_head_too_large();
    }
    return State::kNeedMore;
  }
  if (head_end > limits_.max_header_bytes) {
    return fail_head_too_large();
  }
  const std::string_view head(input.data(), head_end);
  std::size_t at = 0;
  for (bool first = true;; first = false) {
    const std::size_t nl = head.find('\n', at);
    std::string_view line = head.substr(at, nl - at);
    at = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the blank line that ends the section
    if (line.find('\r') != std::string_view::npos || line.find('\0') != std::string_view::npos) {
      return fail(400, "a bare CR or NUL in the request's head");
    }
    const State s = first ? parse_request_line(line) : parse_header_line(line);
    if (s == State::kError) return s;
  }
  input.erase(0, head_end);
  return resolve_framing();
}

RequestParser::State RequestParser::parse_request_line(std::string_view line) {
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return fail(400, "malformed request line " + shown(line) + ": expected METHOD TARGET HTTP/1.1");
  }
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!is_token(method)) return fail(400, "malformed method " + shown(method));
  if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
    return fail(400, "malformed request target " + shown(target));
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' || version[5] > '9' ||
      version[7] < '0' || version[7] > '9') {
    return fail(400, "malformed HTTP version " + shown(version));
  }
  if (version[5] != '1') return fail(505, "HTTP version " + std::string(version) + " is not supported: use HTTP/1.1");
  request_.method = std::string(method);
  request_.target = std::string(target);
  request_.minor_version = version[7] == '0' ? 0 : 1;  // 1.x above 1.1 is read as 1.1
  // origin-form "/path?query", absolute-form "http://host/path?query", asterisk-form "*".
  std::string_view path_query = target;
  const std::string scheme = lower(target.substr(0, 8));
  if (scheme.rfind("http://", 0) == 0 || scheme.rfind("https://", 0) == 0) {
    const std::string_view rest = target.substr(target.find("//") + 2);
    const std::size_t start = rest.find_first_of("/?");
    path_query = start == std::string_view::npos ? std::string_view("/") : rest.substr(start);
  } else if (target != "*" && target[0] != '/') {
    return fail(400, "malformed request target " + shown(target) + ": expected a path such as /v1/models");
  }
  const std::size_t q = path_query.find('?');
  std::string_view raw_path = path_query.substr(0, q);
  if (raw_path.empty()) raw_path = "/";
  if (q != std::string_view::npos) request_.query = std::string(path_query.substr(q + 1));
  if (!percent_decode(raw_path, request_.path)) return fail(400, "malformed percent-encoding in the path " + shown(raw_path));
  return State::kNeedMore;
}

RequestParser::State RequestParser::parse_header_line(std::string_view line) {
  if (line[0] == ' ' || line[0] == '\t') return fail(400, "obsolete line folding in the request's headers");
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return fail(400, "malformed header line " + shown(line) + ": expected NAME: VALUE");
  const std::string_view name = line.substr(0, colon), value = trim_ows(line.substr(colon + 1));
  if (!is_token(name)) return fail(400, "malformed header name " + shown(name));
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return fail(400, "a control character in the header " + shown(name));
  }
  if (static_cast<int>(request_.headers.size()) >= limits_.max_headers) {
    return fail(431, "more than " + std::to_string(limits_.max_headers) + " headers in the request");
  }
  request_.headers.emplace_back(lower(name), std::string(value));
  return State::kNeedMore;
}

RequestParser::State RequestParser::resolve_framing() {
  HttpRequest& r = request_;
  const std::vector<std::string_view> codings = header_list(r, "transfer-encoding");
  const std::vector<std::string_view> lengths = header_list(r, "content-length");
  const bool has_length_header = r.header("content-length") != nullptr;
  const bool has_coding_header = r.header("transfer-encoding") != nullptr;
  if (has_coding_header) {
    if (r.minor_version == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (has_length_header) return fail(400, "both Content-Length and Transfer-Encoding: send one");
    for (std::string_view c : codings) {
      if (lower(c) != "chunked") return fail(501, "transfer coding " + shown(c) + " is not supported: send the body as is or chunked");
    }
    if (codings.size() != 1) return fail(400, "Transfer-Encoding must be 'chunked' once");
    r.framed = r.chunked = true;
    phase_ = Phase::kChunkSize;
  } else if (has_length_header) {
    std::uint64_t length = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      const std::string_view v = lengths[i];
      if (!std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return fail(400, "Content-Length must be a number of bytes, got " + shown(v));
      }
      std::uint64_t n = 0;
      bool over = false;
      for (char c : v) {
        over = over || n > (UINT64_MAX - 9) / 10;
        if (!over) n = n * 10 + static_cast<std::uint64_t>(c - '0');
      }
      if (over) n = UINT64_MAX;
      if (i > 0 && n != length) {
        return fail(400, "two different Content-Length values (" + std::string(lengths[0]) + " and " + std::string(v) + ")");
      }
      length = n;
    }
    if (lengths.empty()) return fail(400, "an empty Content-Length");
    if (length > limits_.max_body) return fail_body_too_large();
    r.framed = true;
    body_left_ = length;
    body_known_ = static_cast<std::size_t>(length);
    phase_ = length ? Phase::kBody : Phase::kDone;
  } else {
    phase_ = Phase::kDone;
  }
  if (const std::string* expect = r.header("expect")) {
    if (lower(*expect) != "100-continue") return fail(417, "unsupported expectation " + shown(*expect));
    r.expect_continue = r.minor_version == 1 && phase_ != Phase::kDone;
  }
  bool close = false, keep_alive = false;
  for (std::string_view c : header_list(r, "connection")) {
    close = close || lower(c) == "close";
    keep_alive = keep_alive || lower(c) == "keep-alive";
  }
  r.keep_alive = r.minor_version == 1 ? !close : keep_alive && !close;
  return State::kNeedMore;
}

RequestParser::State RequestParser::parse_body(std::string& input) {
  for (;;) {
    switch (phase_) {
      case Phase::kBody:
      case Phase::kChunkData: {
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(body_left_, input.size()));
        // Room grows with what arrives (doubling), never past what was announced: a length
        // announced is not memory taken until its bytes come.
        std::string& body = request_.body;
        if (body.size() + take > body.capacity()) body.reserve(std::min(body_known_, std::max(body.size() + take, 2 * body.capacity())));
        body.append(input, 0, take);
        input.erase(0, take);
        body_left_ -= take;
        if (body_left_ > 0) return State::kNeedMore;
        phase_ = phase_ == Phase::kBody ? Phase::kDone : Phase::kChunkDataEnd;
        break;
      }
      case Phase::kChunkSize: {
        const std::size_t nl = input.find('\n');
        if (nl == std::string::npos) {
          if (input.size() > kMaxChunkLine) return fail_chunk_line_too_long();
          return State::kNeedMore;
        }
        if (nl > kMaxChunkLine) return fail_chunk_line_too_long();
        std::string_view line(input.data(), nl);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        std::size_t digits = 0;
        std::uint64_t size = 0;
        while (digits < line.size() && hex_value(line[digits]) >= 0) {
          size = size * 16 + static_cast<std::uint64_t>(hex_value(line[digits]));
          if (size > limits_.max_body) return fail_body_too_large();
          ++digits;
        }
        const std::string_view rest = trim_ows(line.substr(digits));
        if (digits == 0 || (!rest.empty() && rest[0] != ';')) return fail(400, "malformed chunk size " + shown(line));
        if (rest.find_first_of(std::string_view("\r\0", 2)) != std::string_view::npos) return fail(400, "malformed chunk extension");
        if (body_known_ + size > limits_.max_body) return fail_body_too_large();
        input.erase(0, nl + 1);
        if (size == 0) {
          phase_ = Phase::kTrailers;
          head_bytes_ = 0;
        } else {
          body_left_ = size;
          body_known_ += static_cast<std::size_t>(size);
          phase_ = Phase::kChunkData;
        }
        break;
      }
      case Phase::kChunkDataEnd:
        if (input.empty() || input == "\r") return State::kNeedMore;
        if (input[0] == '\n') {
          input.erase(0, 1);
        } else if (input.compare(0, 2, "\r\n") == 0) {
          input.erase(0, 2);
        } else {
          return fail(400, "a chunk's data is longer than its size");
        }
        phase_ = Phase::kChunkSize;
        break;
      case Phase::kTrailers: {
        const std::size_t nl = input.find('\n');
        const std::size_t seen = nl == std::string::npos ? input.size() : nl + 1;
        if (head_bytes_ + seen > limits_.max_header_bytes) {
          return fail(431, "the request's trailers are larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
        }
        if (nl == std::string::npos) return State::kNeedMore;
        const bool blank = nl == 0 || (nl == 1 && input[0] == '\r');
        head_bytes_ += nl + 1;
        input.erase(0, nl + 1);
        if (blank) phase_ = Phase::kDone;  // trailer fields are read and dropped
        break;
      }
      case Phase::kDone: return State::kComplete;
      case Phase::kError: return State::kError;
      case Phase::kHead: return State::kNeedMore;  // not reached: parse() reads the head first
    }
  }
}

HttpRequest RequestParser::take() {
  HttpRequest r = std::move(request_);
  request_ = HttpRequest{};
  phase_ = Phase::kHead;
  head_started_ = false;
  scan_ = line_start_ = head_bytes_ = body_known_ = 0;
  body_left_ = 0;
  error_ = {};
  return r;
}

ParsedStream parse_requests(std::string bytes, const HttpLimits& limits) {
  ParsedStream out;
  RequestParser parser(limits);
  for (;;) {
    const RequestParser::State s = parser.parse(bytes);
    if (s == RequestParser::State::kComplete) {
      out.requests.push_back(parser.take());
      continue;
    }
    if (s == RequestParser::State::kError) {
      out.error = parser.error();
    } else {
      out.incomplete = parser.started();
    }
    return out;
  }
}

}  // namespace plexus
