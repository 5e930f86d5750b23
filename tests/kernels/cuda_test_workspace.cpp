// A Workspace over device memory for the CudaOps tests.
#include "cuda_test_workspace.h"

#include "model/llama_family.h"

namespace plexus::cuda::test {

void WorkspaceDeleter::operator()(Workspace* ws) const { delete ws; }

std::int64_t device_workspace_bytes(const ModelConfig& c, std::int64_t max_tokens, std::int64_t max_context) {
  return Workspace::bytes_for(c.layer_shape(), max_tokens, max_context, 0);
}

WorkspacePtr device_workspace(const ModelConfig& c, std::int64_t max_tokens, std::int64_t max_context,
                              float* device_memory) {
  return WorkspacePtr(new Workspace(c.layer_shape(), max_tokens, max_context, 0, device_memory));
}

}  // namespace plexus::cuda::test
