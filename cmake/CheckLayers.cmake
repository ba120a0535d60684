# cmake/CheckLayers.cmake: fails when a file includes a header of a layer
# above its own. The layers, bottom up (README "How it is built"):
#
#   proto/            the format and the trace writer: includes only proto/
#   common/           shared by the collector, the monitor and the launcher:
#                     proto/, common/ (not common/control/)
#   common/control/   capture windows, the control socket: proto/, common/
#   metrics/          the sampler: proto/, common/ (not common/control/)
#   inject/           what runs inside the user's process: all of the above
#   tools/            the offline pipeline, in data-flow order
#                       reader -> model -> analyses -> render -> analyze
#                     a file in tools/<L>/ may include tools/<X>/ only when X
#                     is L or a layer below it, and of the rest only proto/
#                     (tools/status_macros.h and the other tools/*.h are
#                     shared by all)
#   tools/monitor/    the node monitor, a program of its own beside the
#                     pipeline: proto/, common/ (common/control/ too: the
#                     capture settings of the traces it follows), metrics/,
#                     and the pipeline up to analyses/ (its window
#                     summaries are the analyzer's analyses), never
#                     render/ or analyze/
#   tools/gpscope/    the launcher, on top of the pipeline and the monitor:
#                     proto/, common/ (common/control/ too), metrics/, tools/
# Nothing outside inject/ includes inject/: it is only the collector, loaded
# into the traced process. tests/ and bench/ are not checked (they test
# every layer). Headers of other projects ("absl/...", the generated
# "gpscope/trace.pb.h") are not layers.
#
# Run at build time (the top CMakeLists.txt: every gpscope library depends on
# it, so a wrong include fails the build) and as the ctest `layering_check`:
#   cmake -DSOURCE_DIR=<repo> [-DSTAMP=<file>] -P cmake/CheckLayers.cmake
cmake_minimum_required(VERSION 3.22)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "CheckLayers.cmake: -DSOURCE_DIR=<repo> is required")
endif()

set(_pipeline reader model analyses render analyze)
set(_roots proto common metrics inject tools)

# The layer a path (relative to the repo) belongs to: proto, common,
# common/control, metrics, inject, tools (a shared tools/*.h), tools/<dir>;
# "" when it is none of ours.
function(_unit_of rel out)
  string(REGEX MATCH "^[^/]+" _root "${rel}")
  list(FIND _roots "${_root}" _i)
  if(_i LESS 0 OR _root STREQUAL rel)
    set(${out} "" PARENT_SCOPE)
  elseif(_root STREQUAL "common" AND rel MATCHES "^common/control/")
    set(${out} "common/control" PARENT_SCOPE)
  elseif(_root STREQUAL "tools")
    if(rel MATCHES "^tools/([^/]+)/")
      set(${out} "tools/${CMAKE_MATCH_1}" PARENT_SCOPE)
    else()
      set(${out} "tools" PARENT_SCOPE)
    endif()
  else()
    set(${out} "${_root}" PARENT_SCOPE)
  endif()
endfunction()

# What a layer may include besides itself, and the rule in words.
function(_allowed unit out_list out_words)
  set(_w "")
  if(unit STREQUAL "proto")
    set(_a "")
    set(_w "proto/ includes only proto/ (the format links nothing of gpscope)")
  elseif(unit STREQUAL "common")
    set(_a proto)
    set(_w "common/ includes only proto/ and common/")
  elseif(unit STREQUAL "common/control")
    set(_a proto common)
    set(_w "common/control/ includes only proto/ and common/")
  elseif(unit STREQUAL "metrics")
    set(_a proto common)
    set(_w "metrics/ includes only proto/ and common/")
  elseif(unit STREQUAL "inject")
    set(_a proto common common/control metrics)
    set(_w "inject/ includes proto/, common/, metrics/ and inject/, never tools/")
  elseif(unit STREQUAL "tools")
    set(_a proto)
    set(_w "the shared tools/*.h include only proto/")
  elseif(unit STREQUAL "tools/monitor")
    set(_a proto common common/control metrics tools tools/reader tools/model tools/analyses)
    set(_w "tools/monitor uses only proto/, common/, metrics/ and the pipeline up to analyses/ (not render/ or analyze/; inject/ is the collector's, inside the traced process)")
  elseif(unit STREQUAL "tools/gpscope")
    set(_a proto common common/control metrics tools tools/monitor)
    foreach(_l IN LISTS _pipeline)
      list(APPEND _a "tools/${_l}")
    endforeach()
    set(_w "tools/gpscope uses proto/, common/, metrics/ and tools/, never inject/ (the collector, inside the traced process)")
  else()
    string(REPLACE "tools/" "" _own "${unit}")
    list(FIND _pipeline "${_own}" _rank)
    if(_rank LESS 0)
      set(${out_list} "-" PARENT_SCOPE)  # not a layer
      return()
    endif()
    set(_a proto tools)
    foreach(_l IN LISTS _pipeline)
      list(FIND _pipeline "${_l}" _r)
      if(_r LESS_EQUAL _rank)
        list(APPEND _a "tools/${_l}")
      endif()
    endforeach()
    set(_w "a layer above ${_own} (the order is reader -> model -> analyses -> render -> analyze)")
  endif()
  set(${out_list} "${_a}" PARENT_SCOPE)
  set(${out_words} "${_w}" PARENT_SCOPE)
endfunction()

set(_files "")
foreach(_root IN LISTS _roots)
  file(GLOB_RECURSE _found RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/${_root}/*.h" "${SOURCE_DIR}/${_root}/*.cc")
  list(APPEND _files ${_found})
endforeach()
list(SORT _files)
set(_errors "")
foreach(_rel IN LISTS _files)
  if(_rel MATCHES "/(node_modules|dist)/")
    continue()
  endif()
  _unit_of("${_rel}" _own)
  _allowed("${_own}" _ok _words)
  if(_ok STREQUAL "-")
    list(APPEND _errors "${_rel}: folder ${_own} is not a layer of cmake/CheckLayers.cmake")
    continue()
  endif()
  file(STRINGS "${SOURCE_DIR}/${_rel}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"[a-z]+/")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" _inc "${_line}")
    _unit_of("${_inc}" _dep)
    if(_dep STREQUAL "" OR _dep STREQUAL _own)
      continue()
    endif()
    list(FIND _ok "${_dep}" _i)
    if(_i GREATER_EQUAL 0)
      continue()
    endif()
    if(_dep MATCHES "^inject")
      list(APPEND _errors "${_rel}: includes ${_inc}: only inject/ may include inject/ (it runs inside the traced process)")
    elseif(_own MATCHES "^tools/" AND _dep MATCHES "^tools/")
      list(APPEND _errors "${_rel}: includes ${_inc}, ${_words}")
    elseif(_words MATCHES "^a layer above")
      list(APPEND _errors "${_rel}: includes ${_inc}: the offline pipeline (${_own}) uses only proto/ besides tools/")
    else()
      list(APPEND _errors "${_rel}: includes ${_inc}: ${_words}")
    endif()
  endforeach()
endforeach()

if(_errors)
  list(JOIN _errors "\n  " _text)
  message(FATAL_ERROR "layering: an include goes against the layers:\n  ${_text}\n")
endif()
if(STAMP)
  file(TOUCH "${STAMP}")
endif()
