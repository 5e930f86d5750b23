// The HTTP/1.1 request parser alone: request lines, headers, Content-Length and chunked framing,
// the limits and the status each fault gets, pipelining, and bytes arriving one at a time.
#include <gtest/gtest.h>

#include "serve/http/request_parser.h"

namespace plexus {
namespace {

HttpLimits limits(std::size_t max_body = 1024) {
  HttpLimits l;
  l.max_body = max_body;
  return l;
}

// The one request `bytes` hold (fails the test otherwise).
HttpRequest one(const std::string& bytes, const HttpLimits& l = limits()) {
  const ParsedStream s = parse_requests(bytes, l);
  EXPECT_EQ(s.error.status, 0) << s.error.message;
  EXPECT_FALSE(s.incomplete);
  EXPECT_EQ(s.requests.size(), 1u);
  return s.requests.empty() ? HttpRequest{} : s.requests[0];
}

// The status `bytes` are refused with (0: not refused).
int refused(const std::string& bytes, const HttpLimits& l = limits()) { return parse_requests(bytes, l).error.status; }

TEST(HttpRequestParser, RequestLinePathQueryAndHeaders) {
  const HttpRequest r = one("GET /v1/models/my%20model?x=1&y=%41 HTTP/1.1\r\nHost: a\r\nX-Thing:  spaced value \t\r\n\r\n");
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/v1/models/my%20model?x=1&y=%41");
  EXPECT_EQ(r.path, "/v1/models/my model");
  EXPECT_EQ(r.query, "x=1&y=%41");
  EXPECT_EQ(r.minor_version, 1);
  ASSERT_NE(r.header("x-thing"), nullptr);
  EXPECT_EQ(*r.header("x-thing"), "spaced value");
  EXPECT_FALSE(r.framed);
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(one("GET http://example.com:8080/health?q HTTP/1.1\r\n\r\n").path, "/health");
  EXPECT_EQ(one("GET http://example.com HTTP/1.1\r\n\r\n").path, "/");
  EXPECT_EQ(one("OPTIONS * HTTP/1.1\r\n\r\n").path, "*");
  // Blank lines before a request are skipped; bare LF line ends are read too.
  EXPECT_EQ(one("\r\n\r\nGET /a HTTP/1.1\nHost: x\n\n").path, "/a");
  EXPECT_EQ(one("GET /a HTTP/1.2\r\n\r\n").minor_version, 1);  // a later 1.x is read as 1.1
}

TEST(HttpRequestParser, KeepAliveByVersionAndConnectionHeader) {
  EXPECT_TRUE(one("GET / HTTP/1.1\r\n\r\n").keep_alive);
  EXPECT_FALSE(one("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(one("GET / HTTP/1.0\r\n\r\n").keep_alive);
  EXPECT_TRUE(one("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
}

TEST(HttpRequestParser, ContentLengthBodyAndPipelining) {
  const ParsedStream s = parse_requests(
      "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
      "POST /b HTTP/1.1\r\ncontent-length: 3, 3\r\n\r\nxyz"
      "GET /c HTTP/1.1\r\n\r\nGET /d",
      limits());
  ASSERT_EQ(s.requests.size(), 3u);
  EXPECT_EQ(s.requests[0].body, "hello");
  EXPECT_TRUE(s.requests[0].framed);
  EXPECT_EQ(s.requests[1].path, "/b");
  EXPECT_EQ(s.requests[1].body, "xyz");
  EXPECT_EQ(s.requests[2].path, "/c");
  EXPECT_TRUE(s.incomplete);  // "GET /d" has no end yet
  EXPECT_EQ(s.error.status, 0);
  EXPECT_EQ(one("POST /a HTTP/1.1\r\nContent-Length: 0\r\n\r\n").body, "");
}

TEST(HttpRequestParser, ChunkedBodiesWithExtensionsAndTrailers) {
  const HttpRequest r = one("POST /a HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
                            "5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n");
  EXPECT_TRUE(r.framed);
  EXPECT_TRUE(r.chunked);
  EXPECT_EQ(r.body, "hello 0123456789");
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400);
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5 junk\r\n"), 400);
}

// Issue 32, item 3: --max-body held for Content-Length but not for chunked bodies.
TEST(HttpRequestParser, BodiesOverTheLimitAre413HoweverFramed) {
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nContent-Length: 1025\r\n\r\n"), 413);
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nContent-Length: 99999999999999999999999999\r\n\r\n"), 413);
  // Chunks are counted as they are announced: refused at the size line, before the data.
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + std::string(1024, 'a') + "\r\n1\r\n"), 413);
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffffff\r\n"), 413);
  EXPECT_EQ(one("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + std::string(1024, 'a') + "\r\n0\r\n\r\n").body.size(),
            1024u);
  RequestParser p(limits());
  std::string in = "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n" + std::string(300, 'a');
  EXPECT_EQ(p.parse(in), RequestParser::State::kNeedMore);
  EXPECT_EQ(p.body_bytes(), 300u);  // what arrived, not what was announced
}

// Issue 32, item 7: two Content-Lengths (the first won), a negative one (413 after 30 s).
TEST(HttpRequestParser, ContentLengthFaultsAre400) {
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 3\r\n\r\nhello"), 400);
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nContent-Length: 5, 3\r\n\r\nhello"), 400);
  for (const char* v : {"-5", "+5", "1e3", "0x10", "5 5", "five", ""}) {
    EXPECT_EQ(refused(std::string("POST /a HTTP/1.1\r\nContent-Length: ") + v + "\r\n\r\n"), 400) << v;
  }
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
}

TEST(HttpRequestParser, MalformedHeadsAndLimits) {
  EXPECT_EQ(refused("GET /a\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET  /a HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a HTTP/1.1 x\r\n\r\n"), 400);
  EXPECT_EQ(refused("G(T /a HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET a HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a%zz HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a%4 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a HTTP/1.x\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(refused("GET /a HTTP/1.1\r\nX: a\r\n  folded\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a HTTP/1.1\r\nX : a\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a HTTP/1.1\r\nno colon\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a HTTP/1.1\r\nX: a\rb\r\n\r\n"), 400);
  EXPECT_EQ(refused(std::string("GET /a HTTP/1.1\r\nX: a\0b\r\n\r\n", 27)), 400);
  EXPECT_EQ(refused("GET /a HTTP/1.1\r\nX: a\x01\r\n\r\n"), 400);
  EXPECT_EQ(refused("GET /a HTTP/1.1\r\nExpect: something\r\n\r\n"), 417);
  EXPECT_EQ(refused("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n"), 414);
  EXPECT_EQ(refused("GET /" + std::string(9000, 'a')), 414);  // before the line ends
  std::string many = "GET /a HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(refused(many + "\r\n"), 431);
  EXPECT_EQ(refused("GET /a HTTP/1.1\r\nX: " + std::string(70000, 'a') + "\r\n\r\n"), 431);
  EXPECT_EQ(refused("GET /a HTTP/1.1\r\nX: " + std::string(70000, 'a')), 431);  // before the section ends
  EXPECT_EQ(refused("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + std::string(70000, 'a')), 431);
}

TEST(HttpRequestParser, ExpectContinueOnlyWithABodyToRead) {
  EXPECT_TRUE(one("POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi").expect_continue);
  EXPECT_FALSE(one("POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n").expect_continue);
  RequestParser p(limits());
  std::string in = "POST /a HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n";
  EXPECT_EQ(p.parse(in), RequestParser::State::kNeedMore);
  EXPECT_TRUE(p.reading_body());
  EXPECT_TRUE(p.request().expect_continue);
}

TEST(HttpRequestParser, OneByteAtATimeGivesTheSameRequests) {
  const std::string bytes =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n{\"a\": true}"
      "POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: 1\r\n\r\n"
      "\r\nGET /health HTTP/1.0\r\n\r\n";
  const ParsedStream whole = parse_requests(bytes, limits());
  ASSERT_EQ(whole.requests.size(), 3u);
  RequestParser p(limits());
  std::string in;
  std::vector<HttpRequest> got;
  for (char c : bytes) {
    EXPECT_FALSE(p.started() && got.size() == 3);
    in += c;
    const RequestParser::State s = p.parse(in);
    ASSERT_NE(s, RequestParser::State::kError) << p.error().message;
    if (s == RequestParser::State::kComplete) got.push_back(p.take());
  }
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].method, whole.requests[i].method);
    EXPECT_EQ(got[i].path, whole.requests[i].path);
    EXPECT_EQ(got[i].body, whole.requests[i].body);
    EXPECT_EQ(got[i].headers, whole.requests[i].headers);
  }
  EXPECT_EQ(got[1].body, "abcde");
  EXPECT_TRUE(in.empty());
}

}  // namespace
}  // namespace plexus
