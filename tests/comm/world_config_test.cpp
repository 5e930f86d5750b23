// Rank arithmetic of WorldConfig without devices: numbering, groups, and the checks of sizes.
#include <gtest/gtest.h>

#include <set>

#include "comm/world_config.h"
#include "core/error.h"

namespace plexus {
namespace {

TEST(WorldConfig, RanksRoundTripWithTensorParallelFastest) {
  const WorldConfig w{2, 3, 2};
  EXPECT_EQ(w.size(), 12);
  std::set<int> seen;
  for (int rep = 0; rep < 2; ++rep) {
    for (int p = 0; p < 3; ++p) {
      for (int t = 0; t < 2; ++t) {
        const int r = w.rank_of(rep, p, t);
        EXPECT_EQ(w.replica(r), rep);
        EXPECT_EQ(w.pp_rank(r), p);
        EXPECT_EQ(w.tp_rank(r), t);
        seen.insert(r);
      }
    }
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(w.rank_of(0, 0, 1), 1);  // a group's ranks are adjacent
  EXPECT_EQ(w.rank_of(0, 1, 0), 2);
  EXPECT_EQ(w.rank_of(1, 0, 0), 6);
}

TEST(WorldConfig, GroupsHoldTheRightRanks) {
  const WorldConfig w{4, 2, 1};
  EXPECT_EQ(w.tp_group(5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(w.pp_group(5), (std::vector<int>{1, 5}));
  EXPECT_EQ(w.tp_group(0), (std::vector<int>{0, 1, 2, 3}));
}

TEST(WorldConfig, RefusesSizesOutOfRangeNamingTheFlag) {
  EXPECT_NO_THROW(make_world_config(8, 2, 1));
  try {
    make_world_config(0, 1, 1);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tensor-parallel must be between 1 and 4096, got 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_world_config(1, -2, 1), InputError);
  EXPECT_THROW(make_world_config(64, 64, 2), InputError);
}

// --ep N is one tensor-parallel group of N (with --tp left out or N); any other --tp is refused.
TEST(WorldConfig, ExpertParallelIsOneGroupOfItsSize) {
  const WorldConfig ep = make_world_config(1, 2, 1, 4);
  EXPECT_EQ(ep.tp, 4);
  EXPECT_EQ(ep.pp, 2);
  EXPECT_TRUE(ep.expert_parallel);
  EXPECT_EQ(ep.describe(), "ep 4 × pp 2 × 1 replica = 8 ranks");
  EXPECT_TRUE(make_world_config(4, 1, 1, 4).expert_parallel);
  EXPECT_FALSE(make_world_config(4, 1, 1, 1).expert_parallel);
  try {
    make_world_config(4, 1, 1, 2);
    FAIL();
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--ep 2 and --tp 4: expert parallelism is one tensor-parallel group"), std::string::npos) << m;
  }
  EXPECT_THROW(make_world_config(1, 1, 1, 0), InputError);
  EXPECT_THROW(make_world_config(1, 64, 1, 128), InputError);  // 8192 ranks
}

TEST(WorldConfig, WorldSizeMustMatchNamingTheNumbers) {
  const WorldConfig w{2, 1, 1};
  EXPECT_NO_THROW(check_world_size(w, 2, 0, "mpirun"));
  EXPECT_NO_THROW(check_world_size(w, 3, 1, "mpirun"));
  try {
    check_world_size(w, 3, 0, "mpirun");
    FAIL();
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("mpirun started 3 ranks"), std::string::npos) << m;
    EXPECT_NE(m.find("tp 2 × pp 1 × 1 replica = 2 ranks needs 2"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace plexus
