// LD_PRELOAD library for deploy's tests: rename() of a path ending in "-new" or "-old" (plexus
// deploy's staging directory and the earlier directory set aside) fails with EIO, so both the new
// files' rename into place and the old ones' return fail, as on a failing disk.
#include <dlfcn.h>

#include <cerrno>
#include <cstring>

extern "C" int rename(const char* from, const char* to) {
  using Rename = int (*)(const char*, const char*);
  static const Rename real = reinterpret_cast<Rename>(::dlsym(RTLD_NEXT, "rename"));
  const std::size_t n = std::strlen(from);
  if (n >= 4 && (std::strcmp(from + n - 4, "-new") == 0 || std::strcmp(from + n - 4, "-old") == 0)) {
    errno = EIO;
    return -1;
  }
  return real(from, to);
}
