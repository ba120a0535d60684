# cmake/CheckLayers.cmake: fails when a file of the offline pipeline includes a
# header of a layer above its own. The layers, bottom up, are the folders of
# tools/ in data-flow order:
#
#   reader -> model -> analyses -> render -> analyze
#
# A file in tools/<L>/ may include tools/<X>/... only when X is L or a layer
# below it (tools/status_macros.h is shared by all). tools/gpscope (the
# launcher) sits on top of them all; tools/monitor is a program of its own
# beside the pipeline and may include only the reader.
#
# Run at build time (tools/CMakeLists.txt: every tools library depends on it,
# so a wrong include fails the build) and as the ctest `layering_check`:
#   cmake -DTOOLS_DIR=<repo>/tools [-DSTAMP=<file>] -P cmake/CheckLayers.cmake
cmake_minimum_required(VERSION 3.22)
if(NOT TOOLS_DIR)
  message(FATAL_ERROR "CheckLayers.cmake: -DTOOLS_DIR=<repo>/tools is required")
endif()

set(_layers reader model analyses render analyze gpscope)
function(_layer_rank name out)
  list(FIND _layers "${name}" _rank)
  set(${out} ${_rank} PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE _files RELATIVE "${TOOLS_DIR}" "${TOOLS_DIR}/*.h" "${TOOLS_DIR}/*.cc")
list(SORT _files)
set(_errors "")
foreach(_rel IN LISTS _files)
  string(REGEX MATCH "^[^/]+" _own "${_rel}")
  if(_rel STREQUAL _own)  # tools/status_macros.h etc.: shared
    continue()
  endif()
  _layer_rank("${_own}" _own_rank)
  file(STRINGS "${TOOLS_DIR}/${_rel}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"tools/")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"(tools/[^\"]+)\".*$" "\\1" _inc "${_line}")
    string(REGEX REPLACE "^tools/([^/]+)/.*$" "\\1" _dir "${_inc}")
    if(_dir STREQUAL _inc)  # tools/status_macros.h
      continue()
    endif()
    if(_own STREQUAL "gpscope")  # the launcher: on top of everything (monitor too)
      continue()
    endif()
    if(_own STREQUAL "monitor")
      if(NOT _dir STREQUAL "monitor" AND NOT _dir STREQUAL "reader")
        list(APPEND _errors "tools/${_rel}: includes ${_inc}: tools/monitor uses only the reader")
      endif()
      continue()
    endif()
    _layer_rank("${_dir}" _inc_rank)
    if(_own_rank LESS 0)
      list(APPEND _errors "tools/${_rel}: folder tools/${_own} is not a layer of cmake/CheckLayers.cmake")
      break()
    endif()
    if(_inc_rank LESS 0 OR _inc_rank GREATER _own_rank)
      list(APPEND _errors
           "tools/${_rel}: includes ${_inc}, a layer above ${_own} (the order is reader -> model -> analyses -> render -> analyze)")
    endif()
  endforeach()
endforeach()

if(_errors)
  list(JOIN _errors "\n  " _text)
  message(FATAL_ERROR "layering: an include goes against the pipeline's layers:\n  ${_text}\n")
endif()
if(STAMP)
  file(TOUCH "${STAMP}")
endif()
