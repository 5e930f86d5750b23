// Names of the ways a served request ends.
#include "serve/serve_request.h"

namespace plexus {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

std::uint64_t choice_seed(std::uint64_t seed, int index) {
  if (index == 0) return seed;
  // splitmix64 of the seed moved by the index: neighbouring seeds and indices spread apart.
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(index);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace plexus
