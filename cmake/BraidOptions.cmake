# Resolves the AUTO options to ON/OFF from what this machine has.
include(CheckLanguage)

# CUDA: AUTO builds the device-memory path when nvcc is found (no GPU or driver is needed to
# build; at run time a missing driver or device only switches device support off).
if(BRAID_WITH_CUDA STREQUAL "AUTO")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(BRAID_CUDA_FOUND ON)
  else()
    set(BRAID_CUDA_FOUND OFF)
  endif()
elseif(BRAID_WITH_CUDA)
  set(BRAID_CUDA_FOUND ON)
else()
  set(BRAID_CUDA_FOUND OFF)
endif()
# sm_80 and sm_90 machine code plus compute_90 PTX (what "90" means to CMake: SASS and PTX), so
# newer GPUs JIT the PTX.
set(BRAID_CUDA_ARCHITECTURES "80-real;90" CACHE STRING "CUDA architectures Braid's kernels are built for")
# Fast development builds: instantiate the device kernels for these types and ops only (nccl-tests
# names: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2; ops sum
# prod max min). Calls on anything else return ncclInvalidUsage naming the option.
set(BRAID_CUDA_TYPES "all" CACHE STRING "Data types the CUDA kernels are built for (all, or a ;-list)")
set(BRAID_CUDA_OPS "all" CACHE STRING "Reduction ops the CUDA kernels are built for (all, or a ;-list)")
if(BRAID_CUDA_FOUND)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${BRAID_CUDA_ARCHITECTURES})
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # CUDA sources are C++20 like the rest; CMake 3.25 knows no C++20 flag for nvcc (nvcc 12+
  # takes -std=c++20), so it is taught here.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  message(STATUS "Braid: CUDA ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
                 "${CMAKE_CUDA_ARCHITECTURES}, types ${BRAID_CUDA_TYPES}, ops ${BRAID_CUDA_OPS})")
else()
  message(STATUS "Braid: CUDA OFF (host memory only)")
endif()

if(BRAID_WITH_VERBS STREQUAL "AUTO")
  find_path(BRAID_VERBS_INCLUDE infiniband/verbs.h)
  if(BRAID_VERBS_INCLUDE)
    set(BRAID_VERBS_FOUND ON)
  else()
    set(BRAID_VERBS_FOUND OFF)
  endif()
elseif(BRAID_WITH_VERBS)
  set(BRAID_VERBS_FOUND ON)
else()
  set(BRAID_VERBS_FOUND OFF)
endif()
# Without rdma-core's headers there is no ib transport; with them, libibverbs is still loaded
# only at run time (dlopen), so the library needs it nowhere.
message(STATUS "Braid: IB verbs headers ${BRAID_VERBS_FOUND} (ib transport ${BRAID_VERBS_FOUND})")

# Intel's ipsec-mb: the AES-GCM of the TLS record layer (src/base/net/gcm.h). Only its header
# is needed to build; libIPSec_MB.so.1 is loaded at run time where it is installed, and OpenSSL's
# AES-GCM serves where it is not, so the library needs it nowhere.
set(BRAID_WITH_IPSEC_MB AUTO CACHE STRING "Build the ipsec-mb AES-GCM for TLS records (AUTO, ON, OFF)")
set_property(CACHE BRAID_WITH_IPSEC_MB PROPERTY STRINGS AUTO ON OFF)
set(BRAID_IPSEC_MB_FOUND OFF)
if(BRAID_WITH_IPSEC_MB)
  find_path(BRAID_IPSEC_MB_INCLUDE intel-ipsec-mb.h)
  if(BRAID_IPSEC_MB_INCLUDE)
    set(BRAID_IPSEC_MB_FOUND ON)
  elseif(BRAID_WITH_IPSEC_MB STREQUAL "ON")
    message(FATAL_ERROR "BRAID_WITH_IPSEC_MB=ON but intel-ipsec-mb.h is missing (install libipsec-mb-dev)")
  endif()
endif()
message(STATUS "Braid: ipsec-mb header ${BRAID_IPSEC_MB_FOUND} (without it, TLS records use OpenSSL's AES-GCM)")

# liburing lets a rank with peers over TCP and in shared memory sleep on both at once
# (src/transport/any_wait.h); without it such a rank yields while it waits. Linked statically, so
# the library needs it nowhere at run time.
set(BRAID_WITH_URING AUTO CACHE STRING "Sleep on sockets and doorbells at once through liburing (AUTO, ON, OFF)")
set_property(CACHE BRAID_WITH_URING PROPERTY STRINGS AUTO ON OFF)
set(BRAID_URING_FOUND OFF)
if(BRAID_WITH_URING)
  find_path(BRAID_URING_INCLUDE liburing.h)
  find_library(BRAID_URING_LIBRARY NAMES liburing.a)
  if(BRAID_URING_INCLUDE AND BRAID_URING_LIBRARY)
    set(BRAID_URING_FOUND ON)
  elseif(BRAID_WITH_URING STREQUAL "ON")
    message(FATAL_ERROR "BRAID_WITH_URING=ON but liburing.h or liburing.a is missing (install liburing-dev)")
  endif()
endif()
message(STATUS "Braid: liburing ${BRAID_URING_FOUND} (without it, a rank waiting on sockets and shared memory at once yields)")

# pugixml reads NCCL_TOPO_FILE and the cluster map: required. hwloc discovers the host; without
# it the library still builds and discovery reads what it can from /proc and /sys.
set(BRAID_WITH_HWLOC AUTO CACHE STRING "Discover the host with hwloc (AUTO, ON, OFF)")
set_property(CACHE BRAID_WITH_HWLOC PROPERTY STRINGS AUTO ON OFF)
find_package(pugixml REQUIRED)
set(BRAID_HWLOC_FOUND OFF)
if(BRAID_WITH_HWLOC)
  find_package(PkgConfig)
  if(PkgConfig_FOUND)
    pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
  endif()
  if(HWLOC_FOUND)
    set(BRAID_HWLOC_FOUND ON)
  elseif(BRAID_WITH_HWLOC STREQUAL "ON")
    message(FATAL_ERROR "BRAID_WITH_HWLOC=ON but pkg-config finds no hwloc (install libhwloc-dev)")
  endif()
endif()
message(STATUS "Braid: hwloc ${BRAID_HWLOC_FOUND} (without it, host discovery reads /sys)")

# Sanitizers for the whole tree: a -fsanitize= list ("address,undefined", "thread"), compiled into
# every C and C++ object and linked into every binary. A sanitizer report stops the process
# (-fno-sanitize-recover=all), so it fails the test that made it. CUDA objects are not
# instrumented: the sanitizer presets build without CUDA (CMakePresets.json).
set(BRAID_SANITIZE "" CACHE STRING "Build everything with -fsanitize=<this list> (e.g. address,undefined; thread)")
if(BRAID_SANITIZE)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${BRAID_SANITIZE};-fno-sanitize-recover=all;-fno-omit-frame-pointer>")
  add_link_options("-fsanitize=${BRAID_SANITIZE}")
  message(STATUS "Braid: sanitizers ${BRAID_SANITIZE}")
endif()

# The time limit of a test that runs the suites' code (tests/, examples/). Sanitized code runs
# several times slower (under ASan on two loaded cores the longest schedule sweep,
# AllReduceSchedule.RingEveryRankCountAndChunk, took 194 s, and under TSan example.dp_train
# 274 s; tools/check-sanitizers.sh prints every test's time): an ASan+UBSan tree allows three
# times as long, a TSan tree five.
set(BRAID_TEST_TIMEOUT 300)
if(BRAID_SANITIZE MATCHES "thread")
  set(BRAID_TEST_TIMEOUT 1500)
elseif(BRAID_SANITIZE)
  set(BRAID_TEST_TIMEOUT 900)
endif()
