// The Workspace's fields as CudaOps reads them.
#include "kernels/cuda/workspace_view.h"

#include "model/llama_family.h"

namespace plexus::cuda {

WorkspaceView view_of(Workspace& ws) {
  WorkspaceView v;
  v.q = ws.q.data();
  v.k = ws.k.data();
  v.v = ws.v.data();
  v.att = ws.att.data();
  v.rope_cos = ws.rope_cos.data();
  v.rope_sin = ws.rope_sin.data();
  v.max_tokens = ws.max_tokens();
  v.rope_floats = static_cast<std::int64_t>(ws.rope_cos.size());
  return v;
}

}  // namespace plexus::cuda
