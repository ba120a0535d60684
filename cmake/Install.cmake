# cmake/Install.cmake: `cmake --install` rules and CPack, in one place.
#
# One relocatable tree, the same in the tarball and the .deb:
#   bin/gpscope, bin/gpscope-analyze, bin/gpscope-monitor
#   lib/libgpscope_inject.so                      (the collector)
#   share/gpscope/systemd/gpscope-monitor.service
#   share/gpscope/kubernetes/*.yaml               (DaemonSet, job example)
#   share/gpscope/grafana/gpscope-monitor.json    (Grafana dashboard)
#   share/gpscope/docs/                           (README, docs/, third-party notices)
# `gpscope run` finds the collector relative to its own executable
# (../lib/libgpscope_inject.so), so the tree works wherever it is unpacked.
#
# CPack makes gpscope-<version>-linux-x86_64.tar.gz (that tree under one
# top-level directory) and gpscope_<version>-1_amd64.deb (that tree under
# /opt/gpscope, plus /usr/share/doc/gpscope/{copyright,changelog.Debian.gz}).
# The version is read at packaging time from the build's gpscope_version.h
# (cmake/Version.cmake), so the file names match what the binaries print.
# scripts/package.sh drives it; packaging/ holds the files installed here.

include(GNUInstallDirs)

set(GPSCOPE_TOOLS gpscope gpscope-analyze gpscope-monitor)
set(GPSCOPE_SHARE share/gpscope)

# gpscope_ship_tool(TARGET): what a shipped executable needs beyond the build tree's.
function(gpscope_ship_tool target)
  if(GPSCOPE_STATIC_TOOLS AND NOT GPSCOPE_SANITIZE)
    # With the static protobuf/abseil/zlib (cmake/StaticTools.cmake): ldd shows libc only.
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
  install(TARGETS ${target} RUNTIME DESTINATION bin COMPONENT gpscope)
endfunction()

foreach(tool ${GPSCOPE_TOOLS})
  gpscope_ship_tool(${tool})
endforeach()
if(TARGET gpscope_inject)
  install(TARGETS gpscope_inject LIBRARY DESTINATION lib COMPONENT gpscope)
else()
  message(STATUS "gpscope: no CUDA toolkit: the install tree and packages lack the collector")
endif()

set(_pkg ${PROJECT_SOURCE_DIR}/packaging)
install(FILES ${_pkg}/systemd/gpscope-monitor.service
  DESTINATION ${GPSCOPE_SHARE}/systemd COMPONENT gpscope)
install(DIRECTORY ${_pkg}/kubernetes/ DESTINATION ${GPSCOPE_SHARE}/kubernetes
  COMPONENT gpscope FILES_MATCHING PATTERN "*.yaml")
install(FILES ${_pkg}/grafana/gpscope-monitor.json
  DESTINATION ${GPSCOPE_SHARE}/grafana COMPONENT gpscope)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${GPSCOPE_SHARE}/docs COMPONENT gpscope)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${GPSCOPE_SHARE}/docs/docs
  COMPONENT gpscope)

# Third-party notices: the licenses of what the tools carry inside them
# (static abseil, protobuf, zlib, zstd, sqlite; libstdc++ under the GCC runtime
# library exception), from the Debian packages the archives came from.
set(_notices ${PROJECT_BINARY_DIR}/packaging/THIRD-PARTY-NOTICES)
set(_text "gpscope's executables and its collector contain these libraries, linked
statically. Their copyright and license terms follow, as the Debian packages
that provided them state them.\n")
set(_archives ${GPSCOPE_ZSTD_STATIC})
if(GPSCOPE_STATIC_TOOLS)
  list(APPEND _archives ${GPSCOPE_PROTOBUF_STATIC} ${GPSCOPE_ZLIB_STATIC} ${GPSCOPE_SQLITE_STATIC})
  get_target_property(_absl_base absl::base IMPORTED_LOCATION)
  list(APPEND _archives ${_absl_base})
endif()
# With a sysroot (the release build, cmake/toolchain-bullseye.cmake) the
# archives, and the packages they came from, are the root's.
find_program(GPSCOPE_DPKG dpkg)
set(_dpkg_root "")
set(_doc_root "")
if(CMAKE_SYSROOT)
  set(_dpkg_root --root=${CMAKE_SYSROOT})
  set(_doc_root ${CMAKE_SYSROOT})
endif()
foreach(archive ${_archives})
  set(pkg "")
  if(GPSCOPE_DPKG)
    set(in_root ${archive})
    if(CMAKE_SYSROOT)
      file(RELATIVE_PATH in_root ${CMAKE_SYSROOT} ${archive})
      set(in_root /${in_root})
    endif()
    execute_process(COMMAND ${GPSCOPE_DPKG} ${_dpkg_root} -S ${in_root} OUTPUT_VARIABLE owner
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
    if(rc EQUAL 0 AND owner MATCHES "^([^:]+)(:[a-z0-9]+)?: ")
      set(pkg ${CMAKE_MATCH_1})
    endif()
  endif()
  get_filename_component(name ${archive} NAME)
  string(APPEND _text "\n==== ${name} (Debian package ${pkg})\n\n")
  if(pkg AND EXISTS ${_doc_root}/usr/share/doc/${pkg}/copyright)
    file(READ ${_doc_root}/usr/share/doc/${pkg}/copyright copyright)
    string(APPEND _text "${copyright}")
  else()
    string(APPEND _text "(its copyright file was not found on the build machine)\n")
  endif()
endforeach()
# The .deb's copyright points at Debian's copy of the Apache License (policy
# 12.5); the tarball's notices carry its text, for systems without one.
set(_deb_text "${_text}")
if(GPSCOPE_STATIC_TOOLS AND EXISTS ${_doc_root}/usr/share/common-licenses/Apache-2.0)
  file(READ ${_doc_root}/usr/share/common-licenses/Apache-2.0 apache)
  string(APPEND _text "\n==== The Apache License, Version 2.0 (abseil)\n\n${apache}")
endif()
file(CONFIGURE OUTPUT ${_notices} CONTENT "${_text}" @ONLY)
install(FILES ${_notices} DESTINATION ${GPSCOPE_SHARE}/docs COMPONENT gpscope)

# The .deb's own documentation (Debian policy 12.5, 12.7), outside /opt:
# only the DEB generator installs this component (EXCLUDE_FROM_ALL keeps a
# plain `cmake --install` from writing to /usr/share/doc). CPack's project
# config writes the changelog, which carries the package version.
set(GPSCOPE_DEBIAN_DOC ${PROJECT_BINARY_DIR}/packaging/debian)
file(READ ${_pkg}/debian/copyright _copyright)
file(CONFIGURE OUTPUT ${GPSCOPE_DEBIAN_DOC}/copyright CONTENT "${_copyright}\n${_deb_text}" @ONLY)
install(FILES ${GPSCOPE_DEBIAN_DOC}/copyright ${GPSCOPE_DEBIAN_DOC}/changelog.Debian.gz
  DESTINATION /usr/share/doc/gpscope COMPONENT debian EXCLUDE_FROM_ALL)

# ---- CPack ------------------------------------------------------------------
set(CPACK_PACKAGE_NAME gpscope)
set(CPACK_PACKAGE_VENDOR "gpscope")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "zero-code-change GPU profiler for CUDA programs")
set(CPACK_PACKAGE_DESCRIPTION
"gpscope traces any CUDA program (PyTorch, JAX, CUDA C++, NCCL jobs)
without changes to its code, image or launch command: set
CUDA_INJECTION64_PATH to the collector. gpscope-analyze explains why the GPU
is idle or slow; gpscope-monitor watches every GPU of a node and serves
Prometheus metrics.")
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_SOURCE_GENERATOR "")
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENT_INCLUDE_TOPLEVEL_DIRECTORY ON)  # the tarball: gpscope-<version>-linux-x86_64/...
set(CPACK_ARCHIVE_COMPONENT_INSTALL ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_PACKAGE_NAME gpscope)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "gpscope developers <gpscope@users.noreply.github.com>")
if(GPSCOPE_GLIBC_FLOOR)
  # Built against an old root (cmake/toolchain-bullseye.cmake): dpkg-shlibdeps
  # would read this machine's symbol files, where libpthread's and libdl's
  # symbols moved into libc 2.34, and ask for libc6 (>= 2.34). The floor is
  # what the build is made and checked for (tests/install/check_glibc_floor.sh).
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= ${GPSCOPE_GLIBC_FLOOR})")
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_ARCHIVE_TYPE gnutar)
# Read by cpack for each generator: the version from the build, per-generator layout.
set(GPSCOPE_VERSION_HEADER_FOR_CPACK ${GPSCOPE_VERSION_HEADER})
configure_file(${PROJECT_SOURCE_DIR}/cmake/CPackProjectConfig.cmake.in
  ${PROJECT_BINARY_DIR}/CPackProjectConfig.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/CPackProjectConfig.cmake)
include(CPack)
