# Runs the layout probe built against NVIDIA's headers and the two built against Braid's
# (C and C++) and fails on any difference. The C build cannot print C++ mangled signatures,
# so it is compared without the "sig" lines.
#
# cmake -DNVIDIA=<probe> -DBRAID_C=<probe> -DBRAID_CXX=<probe> -P compare_layout.cmake
cmake_minimum_required(VERSION 3.25)
function(run_probe exe out_var)
  execute_process(COMMAND "${exe}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "compare_layout: ${exe} exited with ${rc}")
  endif()
  string(STRIP "${out}" out)
  string(REPLACE ";" "<semicolon>" out "${out}")
  string(REPLACE "\n" ";" out "${out}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(compare name reference candidate)
  if(reference STREQUAL candidate)
    list(LENGTH reference n)
    message(STATUS "compare_layout: ${name} matches NVIDIA's header (${n} facts)")
    return()
  endif()
  set(only_nvidia ${reference})
  set(only_braid ${candidate})
  list(REMOVE_ITEM only_nvidia ${candidate})
  list(REMOVE_ITEM only_braid ${reference})
  list(JOIN only_nvidia "\n    " a)
  list(JOIN only_braid "\n    " b)
  message(SEND_ERROR "compare_layout: ${name} differs from NVIDIA's header\n"
                     "  NVIDIA only:\n    ${a}\n  Braid only:\n    ${b}\n"
                     "  (empty lists mean the same facts in a different order)")
  set(failed TRUE PARENT_SCOPE)
endfunction()

run_probe("${NVIDIA}" nvidia)
run_probe("${BRAID_CXX}" braid_cxx)
run_probe("${BRAID_C}" braid_c)
set(nvidia_no_sig ${nvidia})
list(FILTER nvidia_no_sig EXCLUDE REGEX "^sig ")

set(failed FALSE)
compare("Braid's nccl.h as C++" "${nvidia}" "${braid_cxx}")
compare("Braid's nccl.h as C" "${nvidia_no_sig}" "${braid_c}")
if(failed)
  message(FATAL_ERROR "compare_layout: FAIL")
endif()
