// The rank arithmetic of a parallel run, in one small value (like TensorRT-LLM's WorldConfig):
// `tp` ranks split every layer (a tensor-parallel group), `pp` groups hold consecutive layers
// (pipeline stages), `replicas` copies of the whole serve requests side by side. Ranks are
// numbered tensor-parallel rank fastest: rank = (replica · pp + pp_rank) · tp + tp_rank, so a
// group's ranks (and devices) are adjacent. Expert parallelism (--ep N) is a tensor-parallel
// group of N whose ranks hold a mixture's experts whole (expert_parallel). No devices involved:
// unit-tested on its own.
#pragma once
#include <string>
#include <vector>

namespace plexus {

struct WorldConfig {
  int tp = 1, pp = 1, replicas = 1;
  // --ep: the tp group's ranks each hold tp's share of every mixture-of-experts layer's experts
  // whole (model/tensor_split.h's TensorSplit::whole_experts); attention and dense MLPs split as --tp.
  bool expert_parallel = false;

  int size() const { return tp * pp * replicas; }
  int tp_rank(int rank) const { return rank % tp; }
  int pp_rank(int rank) const { return (rank / tp) % pp; }
  int replica(int rank) const { return rank / (tp * pp); }
  int rank_of(int replica, int pp_rank, int tp_rank) const { return (replica * pp + pp_rank) * tp + tp_rank; }
  // The ranks of `rank`'s tensor-parallel group (same replica and stage), in tp-rank order.
  std::vector<int> tp_group(int rank) const;
  // The ranks of `rank`'s pipeline (same replica and tp rank), stage by stage.
  std::vector<int> pp_group(int rank) const;
  // "tp 2 × pp 2 × 1 replica = 4 ranks" ("ep 2 × …" with expert_parallel)
  std::string describe() const;
  // The flag that made the tensor-parallel group, for messages: "--ep" with expert_parallel, else "--tp".
  const char* group_flag() const { return expert_parallel ? "--ep" : "--tp"; }
};

// --tp / --pp / --replicas / --ep checked (each at least 1, at most 4096 ranks in all); InputError
// naming the flag and the value otherwise. ep > 1 makes the tp group ep ranks that hold whole
// experts: --tp must then be 1 (left out) or ep, else InputError (they form one group).
WorldConfig make_world_config(long long tp, long long pp, long long replicas, long long ep = 1);

// A launcher's world (mpirun -np N) must be exactly tp × pp × replicas ranks (plus `extra`
// ranks that hold no shard, such as batch's coordinator); InputError naming the numbers.
void check_world_size(const WorldConfig& w, int launched, int extra, const std::string& launcher);

}  // namespace plexus
