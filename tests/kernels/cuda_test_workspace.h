// A Workspace (model/llama_family.h) over device memory, made in its own translation unit: the
// CudaOps tests see the compute interface's TokenBatch and not the model header's.
#pragma once
#include <cstdint>
#include <memory>

namespace plexus {
class Workspace;
struct ModelConfig;
}  // namespace plexus

namespace plexus::cuda::test {

struct WorkspaceDeleter {
  void operator()(Workspace* ws) const;
};
using WorkspacePtr = std::unique_ptr<Workspace, WorkspaceDeleter>;

// Bytes of device memory a Workspace of max_tokens tokens needs (no CPU attention scores).
std::int64_t device_workspace_bytes(const ModelConfig& c, std::int64_t max_tokens, std::int64_t max_context);
// A Workspace whose buffers are in `device_memory` (device_workspace_bytes bytes).
WorkspacePtr device_workspace(const ModelConfig& c, std::int64_t max_tokens, std::int64_t max_context,
                              float* device_memory);

}  // namespace plexus::cuda::test
