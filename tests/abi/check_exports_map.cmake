# Proves that the linker version script (src/api/exports.map) makes global exactly the
# names of src/api/exports.txt, and hides everything else: the two files are kept by hand
# and would otherwise drift apart.
#
# cmake -DMAP=<exports.map> -DEXPECTED=<exports.txt> -P check_exports_map.cmake
cmake_minimum_required(VERSION 3.25)
file(STRINGS "${EXPECTED}" expected REGEX "^[A-Za-z_][A-Za-z0-9_]*$")
file(READ "${MAP}" map)
string(REGEX REPLACE "#[^\n]*" "" map "${map}")
if(NOT map MATCHES "global:(.*)local:(.*)")
  message(FATAL_ERROR "check_exports_map: ${MAP} has no global: and local: sections")
endif()
set(global_text "${CMAKE_MATCH_1}")
string(REGEX REPLACE "[ \t\n]" "" local_text "${CMAKE_MATCH_2}")
if(NOT local_text STREQUAL "*;};")
  message(FATAL_ERROR "check_exports_map: the local: section must be exactly '*;' (got '${local_text}')")
endif()
# Each entry is "name;", and CMake reads that semicolon as a list separator: the names are
# then the non-empty elements.
string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*[ \t]*;" entries "${global_text}")
set(globals "")
foreach(entry IN LISTS entries)
  string(STRIP "${entry}" name)
  if(NOT name STREQUAL "")
    list(APPEND globals "${name}")
  endif()
endforeach()
list(SORT globals)
list(SORT expected)
if(NOT globals STREQUAL expected)
  set(missing ${expected})
  set(extra ${globals})
  if(globals)
    list(REMOVE_ITEM missing ${globals})
  endif()
  list(REMOVE_ITEM extra ${expected})
  message(FATAL_ERROR "check_exports_map: ${MAP} and ${EXPECTED} differ\n"
                      "  not global in the map: ${missing}\n  global but not listed: ${extra}")
endif()
list(LENGTH globals n)
message(STATUS "check_exports_map: ${n} global names, as listed")
