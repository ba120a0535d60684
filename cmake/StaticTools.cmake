# cmake/StaticTools.cmake: GPSCOPE_STATIC_TOOLS=ON links protobuf, abseil and
# zlib into every executable statically (zstd is always static), so the tools
# run on a node that has none of them: `ldd` of gpscope, gpscope-analyze and
# gpscope-monitor shows only the C runtime (gpscope_ship_tool in
# cmake/Install.cmake adds -static-libstdc++/-static-libgcc for those three).
# The release preset and scripts/package.sh turn it on; the dev build keeps
# Debian's shared libraries (faster links).
#
# It re-points the imported targets that find_package() made at the static
# archives that Debian ships beside the shared ones (libabsl-dev: every
# libabsl_*.a; libprotobuf-dev: libprotobuf.a; zlib1g-dev: libz.a;
# libsqlite3-dev: libsqlite3.a). Those
# archives are built -fPIE (Debian's default): fine for executables, PIE
# included; the collector (a shared library) links none of them.
# Include it after find_package(Protobuf) and find_package(absl).

if(NOT GPSCOPE_STATIC_TOOLS)
  return()
endif()

# gpscope_use_static_archive(TARGET ARCHIVE): TARGET's every configuration links ARCHIVE.
function(gpscope_use_static_archive target archive)
  get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
  set_property(TARGET ${target} PROPERTY IMPORTED_LOCATION ${archive})
  if(configs)
    foreach(config ${configs})
      set_property(TARGET ${target} PROPERTY IMPORTED_LOCATION_${config} ${archive})
    endforeach()
  endif()
endfunction()

# abseil: every imported absl:: library that has a location gets its .a.
get_property(_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
set(_absl_count 0)
foreach(t ${_imported})
  if(NOT t MATCHES "^absl::")
    continue()
  endif()
  get_target_property(type ${t} TYPE)
  if(NOT type STREQUAL "SHARED_LIBRARY")
    continue()  # header-only (INTERFACE) parts
  endif()
  get_target_property(configs ${t} IMPORTED_CONFIGURATIONS)
  list(GET configs 0 config)
  get_target_property(so ${t} IMPORTED_LOCATION_${config})
  get_filename_component(dir ${so} DIRECTORY)
  string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" ".a" archive ${so})
  if(NOT EXISTS ${archive})
    message(FATAL_ERROR "GPSCOPE_STATIC_TOOLS: ${t} has no static archive (${archive}); "
                        "install libabsl-dev with its .a files or configure with -DGPSCOPE_STATIC_TOOLS=OFF")
  endif()
  gpscope_use_static_archive(${t} ${archive})
  math(EXPR _absl_count "${_absl_count} + 1")
endforeach()

# protobuf (FindProtobuf's UNKNOWN IMPORTED target). libprotobuf.a needs zlib
# (gzip streams) and threads, which the shared library brought along itself.
find_library(GPSCOPE_PROTOBUF_STATIC NAMES libprotobuf.a REQUIRED)
gpscope_use_static_archive(protobuf::libprotobuf ${GPSCOPE_PROTOBUF_STATIC})

# zlib: created here so that every later find_package(ZLIB) reuses this target.
find_package(ZLIB REQUIRED)
find_library(GPSCOPE_ZLIB_STATIC NAMES libz.a REQUIRED)
gpscope_use_static_archive(ZLIB::ZLIB ${GPSCOPE_ZLIB_STATIC})
set_property(TARGET protobuf::libprotobuf APPEND PROPERTY INTERFACE_LINK_LIBRARIES
  ZLIB::ZLIB Threads::Threads)

# sqlite (export --format sqlite; FindSQLite3's UNKNOWN IMPORTED target, made
# here so that tools/CMakeLists.txt's find_package reuses it). libsqlite3.a
# needs libm, libdl and threads, which the shared library brought along.
find_package(SQLite3 REQUIRED)
find_library(GPSCOPE_SQLITE_STATIC NAMES libsqlite3.a REQUIRED)
gpscope_use_static_archive(SQLite::SQLite3 ${GPSCOPE_SQLITE_STATIC})
set_property(TARGET SQLite::SQLite3 APPEND PROPERTY INTERFACE_LINK_LIBRARIES
  m ${CMAKE_DL_LIBS} Threads::Threads)

message(STATUS "gpscope: static tools: ${_absl_count} abseil archives, "
               "${GPSCOPE_PROTOBUF_STATIC}, ${GPSCOPE_ZLIB_STATIC}, ${GPSCOPE_SQLITE_STATIC}")
