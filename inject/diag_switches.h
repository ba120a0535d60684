// inject/diag_switches.h: the overhead-diagnosis switches, compiled into
// bench/ and test builds of the injected library only.
//
// The shipped libgpscope_inject.so is built with none of the defines below:
// every switch is then a constant that is off, the code it guards compiles
// away, and no GPSCOPE_DIAG_* variable is read. A variant differs from it
// only in its DEFINES (gpscope_add_inject_library in inject/CMakeLists.txt).
//
// Build-time variants (bench/CMakeLists.txt: libgpscope_inject_diag_<name>.so,
// bench/overhead.py --variants):
//   GPSCOPE_DIAG_DISCARD      activity buffers recycled without being converted
//   GPSCOPE_DIAG_PROCESS_TID  CUPTI's default thread ids (no cuptiSetThreadIdType)
//   GPSCOPE_DIAG_NO_MARKER    NVTX marker records off
//   GPSCOPE_DIAG_NO_MEMSET    buffers not re-zeroed after conversion
// Run-time switches, read from the environment at start-up by the build with
// GPSCOPE_DIAG_ENV only (inject/CMakeLists.txt: libgpscope_inject_diag.so;
// the collector tests and bench/overhead.py --env-variant load it):
//   GPSCOPE_DIAG_OFF=LIST           memcpy,memset,sync,overhead: those
//                                   activity kinds stay off; unknown names are
//                                   named (one line) and ignored
//   GPSCOPE_DIAG_GATE_KERNELS=1     outside capture windows the kernel kind
//                                   stays on and its records are gated (older
//                                   CUPTI stalled for seconds when the kind
//                                   was switched on late, kineto#542)
//   GPSCOPE_DIAG_STACK_RING=N       capture ring slots per thread, 1..64
//                                   (tests fill a ring with it)
//   GPSCOPE_DIAG_STACK_NO_LAUNCH=1  no API callbacks for launches (the
//                                   launch stacks' cost shows apart; not
//                                   with GPSCOPE_API_SOURCE=callback, whose
//                                   API records need them)
//   GPSCOPE_DIAG_STACK_DRIVER_LAUNCHES=1  the driver's launch callbacks
//                                   on from the start, as before they waited
//                                   for a direct driver call (their cost,
//                                   dispatched inside every runtime launch,
//                                   shows apart)
//   GPSCOPE_DIAG_API_ROW_RING=N     API call row slots per thread with
//                                   GPSCOPE_API_SOURCE=callback, 1..16384
//                                   (tests fill a ring with it)
//
//   diag::Switches d = diag::ReadSwitches(getenv_fn, &problems);  // start-up
//   if (diag::kEnvSwitches && d.gate_kernels) ...   // folded away when off
#ifndef GPSCOPE_INJECT_DIAG_SWITCHES_H_
#define GPSCOPE_INJECT_DIAG_SWITCHES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/env_values.h"

namespace gpscope::inject::diag {

#ifdef GPSCOPE_DIAG_DISCARD
inline constexpr bool kDiscardBuffers = true;
#else
inline constexpr bool kDiscardBuffers = false;
#endif
#ifdef GPSCOPE_DIAG_PROCESS_TID
inline constexpr bool kProcessThreadIds = true;
#else
inline constexpr bool kProcessThreadIds = false;
#endif
#ifdef GPSCOPE_DIAG_NO_MARKER
inline constexpr bool kNoMarkers = true;
#else
inline constexpr bool kNoMarkers = false;
#endif
#ifdef GPSCOPE_DIAG_NO_MEMSET
inline constexpr bool kNoBufferMemset = true;
#else
inline constexpr bool kNoBufferMemset = false;
#endif
#ifdef GPSCOPE_DIAG_ENV
inline constexpr bool kEnvSwitches = true;
#else
inline constexpr bool kEnvSwitches = false;
#endif

// GPSCOPE_DIAG_OFF bits: optional activity kinds left off.
enum OffKind : uint32_t {
  kOffMemcpy = 1,  // MEMCPY and MEMCPY2
  kOffMemset = 2,
  kOffSync = 4,
  kOffOverhead = 8,
};

struct Switches {
  uint32_t off_kinds = 0;          // OffKind bits (GPSCOPE_DIAG_OFF)
  bool gate_kernels = false;       // GPSCOPE_DIAG_GATE_KERNELS=1
  uint32_t stack_ring_slots = 0;   // GPSCOPE_DIAG_STACK_RING (0: the default)
  bool stack_no_launch = false;    // GPSCOPE_DIAG_STACK_NO_LAUNCH=1
  bool stack_driver_launches = false;  // GPSCOPE_DIAG_STACK_DRIVER_LAUNCHES=1
  uint32_t api_row_slots = 0;      // GPSCOPE_DIAG_API_ROW_RING (0: the default)
};

using common::GetEnvFn;  // getenv, or a test's fake environment

// Parses the run-time switches; each problem is appended to *problems as
// one line. Defined in diag_switches.cc (gpscope_inject_diag_switches),
// which only the GPSCOPE_DIAG_ENV build and the tests link.
Switches ParseSwitches(GetEnvFn get_env, std::vector<std::string>* problems);
// off_kinds as GPSCOPE_DIAG_OFF names ("memcpy,sync"); empty when none.
std::string OffKindsText(uint32_t off_kinds);

// The run-time switches in effect: parsed from the environment in the
// GPSCOPE_DIAG_ENV build; all off, without reading it, otherwise.
inline Switches ReadSwitches(GetEnvFn get_env, std::vector<std::string>* problems) {
#ifdef GPSCOPE_DIAG_ENV
  return ParseSwitches(get_env, problems);
#else
  (void)get_env;
  (void)problems;
  return Switches{};
#endif
}

}  // namespace gpscope::inject::diag

#endif  // GPSCOPE_INJECT_DIAG_SWITCHES_H_
