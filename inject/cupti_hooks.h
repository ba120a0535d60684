// inject/cupti_hooks.h: seeing another CUPTI client's calls from inside
// gpscope (hold mode).
//
// In hold mode an application's own profiler (torch.profiler's Kineto,
// Nsight, a tool of its own) gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_
// SUPPORTED from cuptiSubscribe and records no GPU events, while gpscope's
// trace would say "complete" and nothing else. CUPTI tells the holder
// nothing, and our library is loaded by libcuda (CUDA_INJECTION64_PATH), so
// symbol interposition does not apply either. What is left is where the
// other tool calls CUPTI: through its library's GOT (Kineto links libcupti;
// its PLT/GOT slots hold cuptiSubscribe's address). This module rewrites
// those slots to point at small wrappers that call the real CUPTI function
// (the one gpscope loaded) and note a refusal:
//   cuptiSubscribe, cuptiSubscribe_v2  passed through; MULTIPLE_SUBSCRIBERS_
//                                      NOT_SUPPORTED while we hold CUPTI is noted
//   cuptiActivityRegisterCallbacks    refused (MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
//                                      while we hold CUPTI, and noted: a second
//                                      client's callbacks would take our buffers
//                                      and both traces would end empty
// Calls through dlsym() are not seen (XLA's profiler loads CUPTI that way).
// The caller is named by the return address: a caller that tail-calls CUPTI
// is named by its own caller's library.
//
// Safety (it runs inside the application): every ELF structure read is
// bounds-checked against the object's mapped PT_LOAD segments; a slot is
// rewritten only when it already holds the real function (resolved) or, in
// an object that lists our libcupti in DT_NEEDED, its own lazy PLT stub; a
// read-only (RELRO) page is made writable for the one 8-byte store and then
// given back exactly the protection /proc/self/maps showed for it; our own
// library and libcupti itself are never touched. Objects loaded later are
// covered by Rescan(), which costs one dl_iterate_phdr step when nothing was
// loaded since.
//
// Thread model: Install/Rescan/Collect on the collector's start-up or writer
// thread (Rescan takes the loader lock: call it in a blocking section); the
// wrappers on any application thread (atomics only, no allocation, no lock).
#ifndef GPSCOPE_INJECT_CUPTI_HOOKS_H_
#define GPSCOPE_INJECT_CUPTI_HOOKS_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpscope::inject {

struct CuptiHookTargets {
  decltype(&::cuptiSubscribe) subscribe = nullptr;
  decltype(&::cuptiSubscribe_v2) subscribe_v2 = nullptr;  // null on CUPTI < 12.6
  decltype(&::cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  std::string cupti_path;  // the libcupti they come from (its name in DT_NEEDED)
};

// Process-global, once (the GOT slots are): patches what is loaded now.
void InstallCuptiHooks(const CuptiHookTargets& targets);
// Patches objects loaded since the last scan; nothing when none was.
void RescanCuptiHooks();
// While true the wrappers note subscribe refusals and refuse
// cuptiActivityRegisterCallbacks (we hold CUPTI).
void SetHoldingCupti(bool holding);
// GOT slots rewritten so far (tests, the info log).
size_t PatchedCuptiSlots();

// A refused call as the wrappers noted it; counts are cumulative.
struct CuptiRefusal {
  const char* api;             // static string
  uintptr_t caller_pc;         // return address in the caller (0: unknown, table full)
  uint64_t count;
  uint64_t first_realtime_ns;  // CLOCK_REALTIME
  uint64_t last_realtime_ns;
  uint32_t result;             // what the caller got
};
// Up to `cap` refusals whose count changed since the last call; returns
// how many were written to out.
size_t CollectCuptiRefusals(CuptiRefusal* out, size_t cap);

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_CUPTI_HOOKS_H_
