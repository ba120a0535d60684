// tools/model/prefetch.h: asks the CPU to start loading a cache line that
// the caller will read or write soon, so that the access then need not wait
// for memory. A hint: it changes no value and never faults.
//
//   PrefetchLine(&counts[bucket]);  // ... other work ...  ++counts[bucket];
//
// Thread model: none (a CPU hint).
#ifndef GPSCOPE_TOOLS_MODEL_PREFETCH_H_
#define GPSCOPE_TOOLS_MODEL_PREFETCH_H_

namespace gpscope::model {

inline void PrefetchLine(const void* address) {
#if defined(__x86_64__)
  // GCC 12 at -O2 dropped __builtin_prefetch (and _mm_prefetch) of the
  // model's computed addresses, seen in the disassembly; the asm stays.
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address);
#endif
}

}  // namespace gpscope::model

#endif  // GPSCOPE_TOOLS_MODEL_PREFETCH_H_
