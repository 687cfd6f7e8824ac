# Proves that check_exports.cmake can fail: against NVIDIA's libnccl.so.2 it must accept the
# export list as is, and reject it with one name dropped (an extra export) or one name
# added (a missing export).
#
# cmake -DNM=<nm> -DEXPECTED=<exports.txt> -DLIB=<NVIDIA libnccl.so.2> -DWORK=<dir> -P exports_selftest.cmake
cmake_minimum_required(VERSION 3.25)
set(check "${CMAKE_CURRENT_LIST_DIR}/check_exports.cmake")
file(STRINGS "${EXPECTED}" names REGEX "^[A-Za-z_][A-Za-z0-9_]*$")
file(MAKE_DIRECTORY "${WORK}")

set(fewer ${names})
list(REMOVE_ITEM fewer ncclAllReduce)
list(JOIN fewer "\n" text)
file(WRITE "${WORK}/exports_fewer.txt" "${text}\n")
list(JOIN names "\n" text)
file(WRITE "${WORK}/exports_more.txt" "${text}\nncclNoSuchFunction\n")

set(failed FALSE)
foreach(case "${EXPECTED};0" "${WORK}/exports_fewer.txt;1" "${WORK}/exports_more.txt;1")
  list(GET case 0 list_file)
  list(GET case 1 want_failure)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DNM=${NM} -DEXPECTED=${list_file} -DLIBS=${LIB}
                          -P "${check}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    set(got_failure 0)
  else()
    set(got_failure 1)
  endif()
  if(got_failure EQUAL want_failure)
    message(STATUS "exports_selftest ok: ${list_file} -> exit ${rc}")
  else()
    message(SEND_ERROR "exports_selftest: ${list_file} gave exit ${rc}, want failure=${want_failure}\n${out}")
    set(failed TRUE)
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "exports_selftest: FAIL")
endif()
