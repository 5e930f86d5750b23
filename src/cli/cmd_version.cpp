// `plexus version`: version and commit of this build.
#include <cstdio>

#include "cli/commands.h"
#include "core/args.h"
#include "core/version.h"

namespace plexus::cli {

int cmd_version(int argc, char** argv) {
  Args args("version", "Print the plexus version and the git commit it was built from.");
  if (!args.parse(argc, argv)) return 0;
  std::printf("plexus %s (%s)\n", PLEXUS_VERSION, PLEXUS_GIT_COMMIT);
  return 0;
}

}  // namespace plexus::cli
