// What a constrained request (structured output, a required tool call) allows next: one state per
// choice that masks the logits row of every step before sampling and follows each chosen token.
// The grammar matcher (structured/) sits behind it; the scheduler sees only this.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

namespace plexus {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // logits (vocab): every token not allowed now set to -infinity; at least one stays allowed.
  virtual void mask(float* logits) = 0;
  // The chosen token (an allowed one, not an end-of-sequence id) joins the output.
  virtual void accept(std::int32_t id) = 0;
};

// Makes the state of one choice (called once per choice when the request is submitted).
using TokenConstraintFactory = std::function<std::unique_ptr<TokenConstraint>()>;

}  // namespace plexus
