# BRAID_BUILD_FUZZ: the libFuzzer targets of tests/fuzz (clang only). The layers that parse
# bytes from outside the process are compiled with -fsanitize=fuzzer-no-link (coverage for the
# fuzzer's guidance, no fuzzer runtime); the targets themselves with
# -fsanitize=fuzzer,address,undefined. Everything else in the tree links as it would: each
# executable gets the coverage callbacks from the sanitizer runtime it links (the fuzz preset
# and the sanitizer presets build the whole tree with -fsanitize=address,undefined, so ASan and
# UBSan watch the library code the fuzzers run too). kernels, algos and api are left
# uninstrumented: they parse nothing from outside, and counters in the reduction loops would
# only slow the tests that share the tree.
option(BRAID_BUILD_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)
set(BRAID_FUZZ_ENABLED OFF)
if(BRAID_BUILD_FUZZ)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(BRAID_FUZZ_ENABLED ON)
    set(BRAID_FUZZ_LAYERS base compress transport topo core)
    # Executables and shared libraries resolve the coverage callbacks from a sanitizer runtime:
    # -fsanitize=fuzzer-no-link at link time brings one (UBSan's) where the flags bring none.
    add_link_options("$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-fsanitize=fuzzer-no-link>")
    message(STATUS "Braid: fuzz targets ON (instrumented layers: ${BRAID_FUZZ_LAYERS})")
  else()
    message(WARNING "BRAID_BUILD_FUZZ needs clang (libFuzzer); ${CMAKE_CXX_COMPILER_ID} builds "
                    "no fuzz targets. Configure with the fuzz preset, or CC=clang CXX=clang++.")
  endif()
endif()
