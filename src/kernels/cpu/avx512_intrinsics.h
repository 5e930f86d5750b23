// <immintrin.h> for the AVX-512 kernel files. GCC 12's AVX-512 headers fill don't-care lanes
// from an uninitialised variable and then warn about it (fixed in GCC 13): silence that for the
// header only.
#pragma once
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
