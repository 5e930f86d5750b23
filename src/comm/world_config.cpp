// Rank arithmetic and its checks.
#include "comm/world_config.h"

#include "core/error.h"

namespace plexus {

std::vector<int> WorldConfig::tp_group(int rank) const {
  std::vector<int> g;
  for (int t = 0; t < tp; ++t) g.push_back(rank_of(replica(rank), pp_rank(rank), t));
  return g;
}

std::vector<int> WorldConfig::pp_group(int rank) const {
  std::vector<int> g;
  for (int p = 0; p < pp; ++p) g.push_back(rank_of(replica(rank), p, tp_rank(rank)));
  return g;
}

std::string WorldConfig::describe() const {
  return (expert_parallel ? "ep " : "tp ") + std::to_string(tp) + " × pp " + std::to_string(pp) + " × " + std::to_string(replicas) +
         (replicas == 1 ? " replica" : " replicas") + " = " + std::to_string(size()) + (size() == 1 ? " rank" : " ranks");
}

WorldConfig make_world_config(long long tp, long long pp, long long replicas, long long ep) {
  auto check = [](long long v, const char* flag) {
    if (v < 1 || v > 4096) {
      throw InputError(std::string(flag) + " must be between 1 and 4096, got " + std::to_string(v));
    }
  };
  check(tp, "--tensor-parallel");
  check(pp, "--pipeline-parallel");
  check(replicas, "--replicas");
  check(ep, "--expert-parallel");
  if (ep > 1 && tp > 1 && tp != ep) {
    throw InputError("--ep " + std::to_string(ep) + " and --tp " + std::to_string(tp) +
                     ": expert parallelism is one tensor-parallel group whose ranks hold whole experts (attention and "
                     "dense MLPs split over the same " + std::to_string(ep) + " ranks): give --ep " + std::to_string(ep) +
                     " alone (or with --tp " + std::to_string(ep) + ")");
  }
  if (ep > 1) tp = ep;
  if (tp * pp * replicas > 4096) {
    throw InputError("--tensor-parallel " + std::to_string(tp) + " × --pipeline-parallel " + std::to_string(pp) +
                     " × --replicas " + std::to_string(replicas) + " = " + std::to_string(tp * pp * replicas) +
                     " ranks; at most 4096 are supported");
  }
  return WorldConfig{static_cast<int>(tp), static_cast<int>(pp), static_cast<int>(replicas), ep > 1};
}

void check_world_size(const WorldConfig& w, int launched, int extra, const std::string& launcher) {
  if (launched == w.size() + extra) return;
  throw InputError(launcher + " started " + std::to_string(launched) + " ranks but " + w.describe() +
                   (extra > 0 ? " + " + std::to_string(extra) + " coordinator" : std::string()) + " needs " +
                   std::to_string(w.size() + extra) + ": start " + std::to_string(w.size() + extra) +
                   " ranks, or change " + w.group_flag() + "/--pp/--replicas to match");
}

}  // namespace plexus
