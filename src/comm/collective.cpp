// Accounting shared by every collective implementation.
#include "comm/collective.h"

namespace plexus {

CommStats& CommStats::operator+=(const CommStats& o) {
  for (auto [a, b] : {std::pair{&all_reduce, &o.all_reduce}, {&all_gather, &o.all_gather}, {&broadcast, &o.broadcast}}) {
    a->calls += b->calls;
    a->bytes += b->bytes;
    a->seconds += b->seconds;
  }
  return *this;
}

Json comm_stats_to_json(const CommStats& s) {
  auto op = [](const CommStats::Op& o) { return Json{{"calls", o.calls}, {"bytes", o.bytes}, {"seconds", o.seconds}}; };
  return Json{{"all_reduce", op(s.all_reduce)}, {"all_gather", op(s.all_gather)}, {"broadcast", op(s.broadcast)},
              {"calls", s.calls()},           {"bytes", s.bytes()},           {"seconds", s.seconds()}};
}

}  // namespace plexus
