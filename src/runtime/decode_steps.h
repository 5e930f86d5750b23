// The steps of a decode loop (one forward each) and the time spent inside those forwards (the
// runner computing, and waiting for its devices). The rest of the loop's time is host work
// between forwards — sampling, batching, streaming — which a GPU waits through.
#pragma once
#include <algorithm>
#include <cstdint>

namespace plexus {

struct DecodeSteps {
  std::int64_t count = 0;
  double forward_s = 0;
  // The host time per step of a loop that took decode_s in all, in milliseconds; 0 without steps.
  double host_ms_per_step(double decode_s) const {
    return count > 0 ? std::max(0.0, decode_s - forward_s) * 1e3 / static_cast<double>(count) : 0;
  }
  DecodeSteps& operator+=(const DecodeSteps& o) {
    count += o.count;
    forward_s += o.forward_s;
    return *this;
  }
};

}  // namespace plexus
