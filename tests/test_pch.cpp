// The one source of plexus_test_pch, the target that precompiles <gtest/gtest.h> for every test
// executable (tests/CMakeLists.txt).
#include <gtest/gtest.h>
