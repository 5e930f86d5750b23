// Run under mpirun by mpi_collective_test: every collective of comm/mpi_collective.h checked on
// every rank against what each rank can compute alone (every rank's data is a function of its
// rank). Prints one line per failed check on stderr and "rank R: N checks ok" on stdout; exit 1
// on any failure.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/mpi_collective.h"
#include "comm/mpi_world.h"

namespace {

int g_checks = 0, g_failed = 0;

void expect(bool ok, const std::string& what, int rank) {
  ++g_checks;
  if (ok) return;
  ++g_failed;
  std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
}

// Rank 0's elements are large (whole numbers of either sign), the other ranks' small fractions:
// float sums in another order round differently, so a wrong order shows in the bits.
float value(int r, std::int64_t i) {
  if (r == 0) return static_cast<float>((i % 2 == 0 ? 1.0 : -1.0) * 1e7 * static_cast<double>(i * 7 % 11 + 1));
  return static_cast<float>(0.1 * static_cast<double>((i * 3 + r * 5) % 17) + 0.05);
}

bool same_bits(const float* a, const float* b, std::int64_t n) { return std::memcmp(a, b, static_cast<std::size_t>(n) * sizeof(float)) == 0; }

}  // namespace

int main(int argc, char** argv) {
  plexus::MpiWorld world(&argc, &argv);
  plexus::MpiCollective c;
  const int rank = c.rank(), n = c.size();
  expect(rank == world.rank() && n == world.size(), "rank and size are the world's", rank);
  expect(c.kind() == "mpi", "kind", rank);

  // All-reduce: the sum in rank order 0, 1, …, bit for bit, for sizes below and above the rank
  // count (empty chunks) and uneven chunks.
  std::int64_t reduced_bytes = 0;
  for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, std::int64_t{7}, std::int64_t{1000}, std::int64_t{300001}}) {
    std::vector<float> data(static_cast<std::size_t>(count)), want(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      data[static_cast<std::size_t>(i)] = value(rank, i);
      float s = value(0, i);
      for (int r = 1; r < n; ++r) s += value(r, i);
      want[static_cast<std::size_t>(i)] = s;
    }
    c.all_reduce_sum(data.data(), count);
    reduced_bytes += count * 4;
    expect(same_bits(data.data(), want.data(), count), "all_reduce_sum of " + std::to_string(count) + " is the rank-order sum", rank);
    // Every rank holds the same bits: gather everyone's result and compare with ours.
    std::vector<float> all(static_cast<std::size_t>(count * n));
    c.all_gather(data.data(), count, all.data());
    for (int r = 0; r < n; ++r) {
      expect(same_bits(all.data() + r * count, data.data(), count), "rank " + std::to_string(r) + " holds the same sum of " + std::to_string(count), rank);
    }
  }
  // The order matters for this data (otherwise the check above could not fail for a wrong order).
  if (n >= 3) {
    bool differs = false;
    for (std::int64_t i = 0; i < 1000 && !differs; ++i) {
      float f = value(0, i), b = value(n - 1, i);
      for (int r = 1; r < n; ++r) f += value(r, i);
      for (int r = n - 2; r >= 0; --r) b += value(r, i);
      differs = std::memcmp(&f, &b, sizeof f) != 0;
    }
    expect(differs, "the test data's sum depends on the order", rank);
  }

  // All-gather: row r is rank r's buffer.
  {
    const std::int64_t count = 513;
    std::vector<float> in(static_cast<std::size_t>(count)), out(static_cast<std::size_t>(count * n));
    for (std::int64_t i = 0; i < count; ++i) in[static_cast<std::size_t>(i)] = value(rank, i);
    c.all_gather(in.data(), count, out.data());
    bool ok = true;
    for (int r = 0; r < n; ++r)
      for (std::int64_t i = 0; i < count; ++i) ok = ok && out[static_cast<std::size_t>(r * count + i)] == value(r, i);
    expect(ok, "all_gather places rank r's buffer at row r", rank);
  }

  // Broadcast from the last rank, of a byte count that is not a multiple of 4.
  {
    std::vector<unsigned char> bytes(1001);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(rank == n - 1 ? (i * 31 + 7) % 251 : 0);
    c.broadcast(bytes.data(), bytes.size(), n - 1);
    bool ok = true;
    for (std::size_t i = 0; i < bytes.size(); ++i) ok = ok && bytes[i] == static_cast<unsigned char>((i * 31 + 7) % 251);
    expect(ok, "broadcast gives every rank the root's bytes", rank);
  }
  c.barrier();

  // The statistics count what this rank contributed.
  const plexus::CommStats& s = c.stats();
  expect(s.all_reduce.calls == 6 && s.all_reduce.bytes == reduced_bytes, "all_reduce stats", rank);
  expect(s.all_gather.calls == 7, "all_gather calls", rank);
  expect(s.broadcast.calls == 1 && s.broadcast.bytes == 1001, "broadcast stats", rank);

  std::printf("rank %d of %d: %d checks, %d failed\n", rank, n, g_checks, g_failed);
  std::fflush(stdout);
  return g_failed == 0 ? 0 : 1;
}
