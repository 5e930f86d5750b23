// What may come next in a sequence (structured output: a grammar or JSON Schema, src/structured):
// the decode loops mask the logits with it before every sampling and report the chosen id. The
// loops sample on the host; a constraint runs there too.
#pragma once
#include <cstdint>

namespace plexus {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets the logits (vocab) of every id that may not come next to -infinity. False when no id
  // may come next: the output cannot be continued (the sequence then ends, cut).
  virtual bool mask(float* logits) = 0;
  // The id chosen from the masked logits.
  virtual void accept(std::int32_t id) = 0;
};

}  // namespace plexus
