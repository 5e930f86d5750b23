// GGUF v3 parsing and validation (see gguf_file.h). TODO(gguf helper): implementation.
#include "core/gguf_file.h"
