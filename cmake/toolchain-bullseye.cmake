# cmake/toolchain-bullseye.cmake: builds with Debian 11 (bullseye)'s own
# toolchain and libraries, so what ships runs on glibc 2.31 and newer.
#
# A binary needs the glibc of the machine it was linked on (symbol versions:
# a Debian 12 build asks for GLIBC_2.34-2.36 through pthread_*/dl*,
# _dl_find_object in libgcc_eh.a and arc4random in libstdc++.a). The release
# packages (scripts/package.sh) therefore link everything that ships against
# a Debian 11 root made by scripts/sysroot.sh: its gcc-10/g++-10, its
# libstdc++.a and libgcc_eh.a (the collector's and the tools' static C++
# runtime), its glibc 2.31 headers and libraries, its static zstd, zlib,
# abseil and protobuf, and its protoc (through the root's own loader).
# The host supplies only CMake (bullseye's is 3.18, the project needs 3.22),
# make, git (the version) and binutils (as, ld, ar, strip...: newer ones link
# for an older glibc just as well), and the CUDA headers, copied into the
# root (the collector links nothing of CUDA). The root's gcc-10 runs on the
# host as it is (scripts/sysroot.sh checks that its cc1plus finds its
# libraries here).
#
#   cmake --preset release -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-bullseye.cmake \
#         -DGPSCOPE_SYSROOT=build-release/sysroot-bullseye
#
# GPSCOPE_SYSROOT: the root (scripts/sysroot.sh made or checked it).
# scripts/package.sh does all of this.

if(NOT GPSCOPE_SYSROOT AND DEFINED ENV{GPSCOPE_SYSROOT})
  set(GPSCOPE_SYSROOT "$ENV{GPSCOPE_SYSROOT}")
endif()
if(NOT GPSCOPE_SYSROOT)
  message(FATAL_ERROR "toolchain-bullseye.cmake: set GPSCOPE_SYSROOT to the Debian 11 root "
                      "that scripts/sysroot.sh makes")
endif()
get_filename_component(GPSCOPE_SYSROOT "${GPSCOPE_SYSROOT}" ABSOLUTE)
if(NOT EXISTS "${GPSCOPE_SYSROOT}/.gpscope-sysroot")
  message(FATAL_ERROR "toolchain-bullseye.cmake: ${GPSCOPE_SYSROOT} is not a root that "
                      "scripts/sysroot.sh prepared (no .gpscope-sysroot); run it first")
endif()
set(GPSCOPE_SYSROOT "${GPSCOPE_SYSROOT}" CACHE PATH "the Debian 11 root the release builds against")
# try_compile projects read this file again: hand them the root.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES GPSCOPE_SYSROOT)

# The oldest glibc what this builds runs on (the root's): the .deb's
# Depends (cmake/Install.cmake).
set(GPSCOPE_GLIBC_FLOOR 2.31)

set(CMAKE_SYSROOT "${GPSCOPE_SYSROOT}")
set(CMAKE_C_COMPILER "${GPSCOPE_SYSROOT}/usr/bin/gcc-10")
set(CMAKE_CXX_COMPILER "${GPSCOPE_SYSROOT}/usr/bin/g++-10")

# Headers, libraries and CMake packages only from the root; programs (git,
# dpkg, the assembler, linker) from the host.
set(CMAKE_FIND_ROOT_PATH "${GPSCOPE_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The root's protoc (it must match the root's libprotobuf headers), run on
# this machine through the root's loader and libraries (scripts/sysroot.sh
# writes the wrapper).
set(Protobuf_PROTOC_EXECUTABLE "${GPSCOPE_SYSROOT}/opt/gpscope-sysroot/bin/protoc"
  CACHE FILEPATH "protoc of the Debian 11 root")
# The CUDA headers copied into the root (no nvcc, no CUDA libraries there:
# the collector needs cuda.h and cupti.h only).
set(CUDAToolkit_ROOT "${GPSCOPE_SYSROOT}/usr/local/cuda")

# The binary tools are this machine's (the root's binutils would need its
# libbfd): CMake would otherwise take the ar, ranlib, strip ... beside the
# compiler. gcc-10 itself finds `as` and `ld` on PATH (its own prefix has none
# that it looks for), also this machine's.
foreach(_tool ar ranlib nm objcopy objdump readelf strip addr2line ld)
  string(TOUPPER ${_tool} _var)
  if(_tool STREQUAL "ld")
    set(_var LINKER)
  endif()
  find_program(GPSCOPE_HOST_${_var} ${_tool} PATHS /usr/bin /bin NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
  if(NOT GPSCOPE_HOST_${_var})
    message(FATAL_ERROR "toolchain-bullseye.cmake: no ${_tool} in /usr/bin (install binutils)")
  endif()
  set(CMAKE_${_var} "${GPSCOPE_HOST_${_var}}" CACHE FILEPATH "this machine's ${_tool}" FORCE)
endforeach()
