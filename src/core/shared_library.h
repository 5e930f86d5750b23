// Libraries loaded at run time with dlopen (cuBLAS, NCCL): the first of several candidate names
// that loads, and its symbols looked up by name. Header-only; the user links ${CMAKE_DL_LIBS}.
#pragma once
#include <dlfcn.h>

#include <string>
#include <vector>

namespace plexus {

// dlopen (RTLD_NOW | RTLD_LOCAL) of each candidate in turn: the handle of the first that loads,
// its name in *path; nullptr when none does, with every loader message in *why ("; " apart).
// Handles are never closed: what the library started may outlive any owner.
inline void* open_first_library(const std::vector<std::string>& candidates, std::string* path, std::string* why) {
  for (const std::string& c : candidates) {
    if (void* handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *path = c;
      return handle;
    }
    const char* err = dlerror();
    *why += (why->empty() ? "" : "; ") + (err != nullptr ? std::string(err) : c + ": cannot be loaded");
  }
  return nullptr;
}

// `out` = the symbol `name` of `handle`; a missing one is added to *missing (", " apart).
template <class F>
void resolve_symbol(void* handle, const char* name, F& out, std::string* missing) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (out == nullptr) *missing += (missing->empty() ? "" : ", ") + std::string(name);
}

// `out` = the symbol `name` of `handle`, null when it has none (optional symbols).
template <class F>
void load_symbol(void* handle, F& out, const char* name) {
  out = reinterpret_cast<F>(dlsym(handle, name));
}

}  // namespace plexus
