// The exp approximation shared by the generic and AVX2 kernels (same constants, same order
// of operations): e^x = 2^n · p(r), x = n·ln2 + r, |r| <= ln2/2, p a degree-7 polynomial.
// Relative error about 2e-7 on [-87, 88]; inputs are clamped to that range.
#pragma once

namespace plexus::exp_poly {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kMin = -87.33654f;
constexpr float kMax = 88.3762626647949f;
// p(r) = 1 + r + r²·(kP0 + r·(kP1 + r·(kP2 + r·(kP3 + r·(kP4 + r·kP5)))))  (Cephes' expf minimax)
constexpr float kP0 = 5.0000001201e-1f;
constexpr float kP1 = 1.6666665459e-1f;
constexpr float kP2 = 4.1666645683e-2f;
constexpr float kP3 = 8.3333400817e-3f;
constexpr float kP4 = 1.3981999507e-3f;
constexpr float kP5 = 1.9875691500e-4f;

}  // namespace plexus::exp_poly
