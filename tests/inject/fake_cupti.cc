// tests/inject/fake_cupti.cc: a stand-in libcupti for the collector's tests
// (tests/inject/collector_cupti_test.cc), so the CUPTI path of the real
// libgpscope_inject.so runs on a machine without a GPU.
//
// It exports every entry point inject/cupti_loader.cc resolves (the required
// ones and the optional cuptiSubscribe_v2; built with -DFAKE_CUPTI_NO_V2 it
// leaves that one out, like CUPTI before 12.6), compiled against the
// installed CUPTI headers: the signatures must match the headers' prototypes
// and the records it writes are the headers' current structs
// (CUpti_ActivityKernel10, Memcpy6, MemcpyPtoP4, Memset4, Synchronization2,
// API, Marker2, Overhead3, Device5, Context3), so layouts cannot drift.
//
// Behaviour, as CUPTI documents it:
//   * cuptiActivityRegisterCallbacks stores the buffer callbacks. A "device"
//     thread (started by fake_cupti_start(), blocks every signal like a
//     driver worker) asks BufferRequested for a buffer, writes records into
//     it back to back (each record's size is that of its kind's struct) and
//     hands a full buffer to BufferCompleted. A refused request (NULL) drops
//     that record and counts it; the next record asks again.
//   * Records are written only for enabled kinds. API records: each call id
//     has an on/off state; enabling the whole RUNTIME/DRIVER kind turns
//     every id of it on and disabling it turns them all off (the kind
//     overrides earlier per-id settings), cuptiActivityEnableRuntimeApi/
//     DriverApi set one id. As measured on the H200 (CUPTI 13.0): a per-id
//     *enable* made after the workload started (fake_cupti_start) succeeds
//     and records nothing; the kind, then per-id disables, works then.
//   * cuptiActivityFlushAll(0) hands over the current buffer unless it holds
//     a record still in flight; CUPTI_ACTIVITY_FLAG_FLUSH_FORCED hands it
//     over in any case (the in-flight record keeps end == 0).
//   * cuptiActivityGetNumDroppedRecords returns the drops since the last
//     call and resets; cuptiGetTimestamp is CLOCK_REALTIME.
//   * With ZEROED_OUT_ACTIVITY_BUFFER set, every buffer handed to the fake
//     is checked to be all zero (counted in nonzero_buffers otherwise).
//
// Configuration, read from the environment when the library loads:
//   FAKE_CUPTI_VERSION=N      cuptiGetVersion's answer (default CUPTI_API_VERSION)
//   FAKE_CUPTI_SUBSCRIBE=busy cuptiSubscribe(_v2) fail with MULTIPLE_SUBSCRIBERS_
//                             NOT_SUPPORTED; _v2 names FAKE_CUPTI_HOLDER as holder
//                             (default "CUPTI for torch.profiler")
//   FAKE_CUPTI_SUBSCRIBE=error  ... fail with CUPTI_ERROR_NOT_INITIALIZED (CUPTI's
//                             callback API failing on its own; activity still works)
//   FAKE_CUPTI_UNSUPPORTED=K,K activity kinds (numbers) cuptiActivityEnable refuses
//   FAKE_CUPTI_KERNELS=N|forever  kernels in the workload (default 0)
//   FAKE_CUPTI_RATE=R         kernels per second (default 0: as fast as possible);
//                             paced kernels are stamped with the time they are made
//   FAKE_CUPTI_MIXED=1        first the fixed "mixed" script (MixedScript below:
//                             device, context, copies, memset, syncs, API calls,
//                             NVTX ranges and a mark, overheads)
//   FAKE_CUPTI_DROPPED=K      CUPTI drops K records at the start of the workload
//   FAKE_CUPTI_DROPPED_AT_END=K  ... and K more once its last buffer was handed
//                             back (as when requests are refused at the end of a
//                             burst: CUPTI then holds no buffer to complete)
//   FAKE_CUPTI_INCOMPLETE=N   N more kernels with end == 0 (device buffer full)
//   FAKE_CUPTI_IN_FLIGHT=1    one last kernel that never finishes (end == 0, holds
//                             its buffer back from non-forced flushes)
//   FAKE_CUPTI_QUEUED=K       while the workload runs, a forced flush hands over K
//                             more kernel records still queued on the device
//                             (start == end == 0): those of the next K launches
//   FAKE_CUPTI_QUEUED_LAG=L   ... of launches L kernels back instead (made before
//                             the flush and not run yet: a deep queue)
//   FAKE_CUPTI_STEAL=M        after kernel M another client re-registers the buffer
//                             callbacks: the buffer in flight and all later ones go
//                             to it (it ignores buffers it did not allocate)
//   FAKE_CUPTI_LATE_KERNELS=dead  CONCURRENT_KERNEL enabled after the workload
//                             started (fake_cupti_start) is accepted but yields no
//                             kernel records, as seen on the H200 after `gpscope
//                             attach` switched it on in a running PyTorch process
//   FAKE_CUPTI_FLUSH=full-only  cuptiActivityFlushAll(0) hands over no partly
//                             filled buffer (as seen on the H200: records of a
//                             slow application sat in one for seconds)
//   FAKE_CUPTI_FLUSH=forced-keeps-running  a forced flush keeps the buffer of the
//                             workload's thread while that workload runs (as seen on
//                             the H200 after SIGTERM landed inside a CUDA call: CUPTI
//                             kept one buffer through the final forced flush)
//   FAKE_CUPTI_CONTEXTS=D,D|none  devices the application creates a context on
//                             when it starts (fake_cupti_start), default "0": on
//                             the starting thread, the subscriber's callback gets
//                             CUPTI_CBID_RESOURCE_CONTEXT_CREATED for each (when
//                             enabled), context handle 0x1000 + D; cuptiGetDeviceId
//                             maps it back to D
//   FAKE_CUPTI_THREADS=N      N more application threads (at most 256), started with
//                             the workload, each with its own buffer (CUPTI's per-thread
//                             buffers): thread t writes FAKE_CUPTI_THREAD_KERNELS=K kernels
//                             i = FAKE_CUPTI_KERNELS + t * K .. + K - 1 (each with its launch
//                             record, spread over the threads' time) and then holds its
//                             partly filled buffer, as an idle thread of a pool does, until
//                             a forced flush; "done" waits for them too
//   FAKE_CUPTI_STATS=PATH     at unload, write the counters and the call log there
//
// Kernel i of the workload (the test states the same independently):
//   name kKernelNames[i % 3]; grid (1 + i % 5, 2, 1); block (128 << (i % 2), 1, 1);
//   32 registers, 1024 B static + 256 * (i % 2) B dynamic shared memory;
//   device 0, context 1, stream 7 + 6 * (i % 2); correlation id 1000 + i;
//   start t0 + 10000 * i, end start + 2000 + i; every 10th (i % 10 == 9) comes
//   from graph 5, node 0x1000 + i; preceded by a cudaLaunchKernel_v7000 runtime
//   record [start - 5000, start - 2000] with the same correlation id and a
//   cudaGetLastError_v3020 record (not in gpscope's list) with id 0.
//   t0 is cuptiGetTimestamp() when the workload starts.
//
// The "driver lock": cuptiActivityFlushAll takes a lock that the
// application holds while it is inside a CUDA call (as CUPTI's flush waits
// on libcuda's locks). It is a ticket lock, fair: a waiting flush gets it
// after the current holder.
//   void fake_cupti_app_call(uint32_t busy_us)  one "CUDA call": holds the lock busy_us
//   void fake_cupti_app_call_forever(void)      a call that never returns
//
// API callbacks (cuptiEnableCallback on the subscriber, runtime and driver
// domains): an application thread's "CUDA call" goes through
//   uint32_t fake_cupti_api_call(uint32_t domain, uint32_t cbid, uint32_t busy_us,
//                                uint32_t inner_driver_cbid)
//   uint32_t fake_cupti_api_call_result(... the same ..., uint32_t result)
// on the calling thread: a fresh correlation id (from 50000), the
// subscriber's callback at CUPTI_API_ENTER (when that id is enabled), busy_us
// of work, an inner driver call (inner_driver_cbid != 0: as libcudart makes
// one inside a runtime call, its own correlation id, 1 us long, callbacks
// when enabled, returning 0; no API record of its own: CUPTI's activity
// kinds leave a runtime call's own driver calls out, seen on the H100 in
// session 12), the callback at
// CUPTI_API_EXIT (functionReturnValue points at `result`, 0 for the first
// form), then the API record (when its id is on) stamped [entry, exit] with
// the calling thread's id and returnValue `result`. Returns the correlation
// id. Every callback made to the subscriber is counted (stat api_callbacks).
//   int fake_cupti_kernel_for(uint32_t correlation)  a kernel record of that
// call (kernel 0's fields but the correlation id, starting 1 us from now,
// 2 us long) into the calling thread's buffer, when kernels are on: 1 if written.
//
// Detaching (cuptiFinalize): every subscription, callback, kind and API id
// is dropped, as CUPTI documents; a later cuptiSubscribe(_v2) attaches
// again. Any other entry point called while detached would make real CUPTI
// attach again lazily: counted (stat calls_while_detached), as are the
// finalizes (stat finalizes). cuptiEnableDomain switches the callbacks of
// every id of a runtime or driver domain.
//
// Control functions (dlsym them from the test's child):
//   int fake_cupti_start(void)           start the device thread (0, or 1 if running)
//   int fake_cupti_wait_done(int ms)     1 when the workload is written
//   uint64_t fake_cupti_stat(const char*) a counter by name (UINT64_MAX if unknown)
//   void fake_cupti_write_stats(const char* path)
//
// A test double: no real CUPTI semantics beyond the above.
#include <cupti.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// Everything here is plain data, constant-initialized and never destroyed:
// the device thread and the collector's callbacks may run during exit.
constexpr const char* kKernelNames[3] = {
    "_Z6vecAddPKfS0_Pfi", "_ZN4gemm6kernelILi128EEEvPKfS2_Pf",
    "void at::native::elementwise_kernel<128, 4>(int, at::native::Add)"};

struct FakeConfig {
  uint32_t version;
  bool subscribe_busy;
  bool subscribe_error;
  char holder[96];
  uint64_t unsupported_kinds;  // bit per kind < 64
  int64_t kernels;             // -1: forever
  uint64_t rate_per_s;
  bool mixed;
  uint64_t dropped_at_start;
  uint64_t dropped_at_end;
  uint32_t incomplete;
  bool in_flight;
  uint32_t queued;
  uint64_t queued_lag;
  int64_t steal_after;  // -1: never
  bool late_kernels_dead;
  bool flush_full_only;
  bool forced_keeps_running;
  uint64_t context_devices;  // bit per device, FAKE_CUPTI_CONTEXTS
  uint32_t threads;          // FAKE_CUPTI_THREADS
  uint64_t thread_kernels;   // FAKE_CUPTI_THREAD_KERNELS
  char stats_path[512];
};
FakeConfig g_cfg;

struct Buffer {
  uint8_t* data;
  size_t size;
  size_t used;
  size_t max_records;
  size_t records;
  uint64_t kernels;
  bool from_first_client;  // requested through the first registered callbacks
  bool holds_in_flight;
};

struct LogEntry {
  uint64_t seq;
  uint64_t time_ns;
  const char* op;
  uint32_t arg;
  uint32_t value;
};
constexpr size_t kLogCap = 8192;
constexpr size_t kDistinctCap = 4096;

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;

// Guarded by g_mu.
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
CUpti_BuffersCallbackRequestFunc g_first_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_first_complete = nullptr;
bool g_kind[CUPTI_ACTIVITY_KIND_COUNT];
bool g_runtime_cbid[CUPTI_RUNTIME_TRACE_CBID_SIZE];
bool g_driver_cbid[CUPTI_DRIVER_TRACE_CBID_SIZE];
int g_subscribers = 0;
CUpti_CallbackFunc g_sub_callback = nullptr;
void* g_sub_userdata = nullptr;
bool g_context_callback_on = false;
// API callbacks enabled per id (cuptiEnableCallback), read without g_mu by
// the calling thread (set at start-up, before any call).
bool g_cb_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
bool g_cb_driver[CUPTI_DRIVER_TRACE_CBID_SIZE];
uint32_t g_next_api_corr = 50000;
char g_subscriber_name[96];
uint32_t g_thread_id_type = 0;
uint32_t g_zeroed_attr = 0;
// The buffer CUPTI fills, per thread (CUPTI_ACTIVITY_ATTR_PER_THREAD_
// ACTIVITY_BUFFER is 1 by default in CUDA 13): slot 0 is the device thread's,
// slots 1..N those of FAKE_CUPTI_THREADS application threads.
constexpr int kMaxSlots = 1 + 256;
struct Slot {
  Buffer cur;
  bool have;
};
Slot g_slots[kMaxSlots];
__thread int t_slot = 0;
bool g_device_done = false;
int g_threads_left = 0;
uint64_t g_pending_dropped = 0;
bool g_started = false;
bool g_done = false;
uint64_t g_next_kernel = 0;  // index of the workload's next kernel
uint32_t g_app_tid = 0;  // the thread that called fake_cupti_start: "the application"
LogEntry g_log[kLogCap];
size_t g_log_n = 0;
uint64_t g_seq = 0;
const uint8_t* g_distinct[kDistinctCap];

struct Counters {
  uint64_t requests, refused, first_delivered, other_delivered, stolen, records_written,
      kernels_written, kernels_delivered, records_delivered, records_dropped, dropped_reported,
      flushes, forced_flushes, nonzero_buffers, misaligned_buffers, distinct_buffers,
      buffer_lo, buffer_hi, log_overflow, get_next_calls, held_buffers, t0, queued_records;
};
Counters g_n;

uint64_t ClockNs(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The driver lock (see the header): tickets taken, ticket served.
uint64_t g_driver_next = 0;
uint64_t g_driver_serving = 0;
uint64_t g_app_calls = 0;
uint64_t g_api_callbacks = 0;  // subscriber API callbacks dispatched (ApiCallback)
bool g_finalized = false;      // cuptiFinalize called, no cuptiSubscribe since
uint64_t g_finalizes = 0;
uint64_t g_calls_while_detached = 0;

// An entry point other than cuptiSubscribe(_v2), cuptiGetVersion and
// cuptiGetResultString was called.
void NoteCall() {
  if (__atomic_load_n(&g_finalized, __ATOMIC_ACQUIRE)) {
    __atomic_fetch_add(&g_calls_while_detached, 1, __ATOMIC_RELAXED);
  }
}

void DriverLock() {
  const uint64_t ticket = __atomic_fetch_add(&g_driver_next, 1, __ATOMIC_ACQ_REL);
  while (__atomic_load_n(&g_driver_serving, __ATOMIC_ACQUIRE) != ticket) {
    const timespec pause{0, 20000};
    nanosleep(&pause, nullptr);
  }
}

void DriverUnlock() { __atomic_fetch_add(&g_driver_serving, 1, __ATOMIC_RELEASE); }

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// Caller holds g_mu.
void LogLocked(const char* op, uint32_t arg, uint32_t value) {
  ++g_seq;
  if (g_log_n == kLogCap) {
    ++g_n.log_overflow;
    return;
  }
  g_log[g_log_n++] = {g_seq, ClockNs(CLOCK_REALTIME), op, arg, value};
}

void Log(const char* op, uint32_t arg, uint32_t value) {
  pthread_mutex_lock(&g_mu);
  LogLocked(op, arg, value);
  pthread_mutex_unlock(&g_mu);
}

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return strtoull(v, nullptr, 10);
}

// A comma-separated list of numbers < 64 as a bit set; `fallback` when unset.
uint64_t EnvBits(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  if (v == nullptr) return fallback;
  uint64_t bits = 0;
  for (const char* p = v; *p != '\0';) {
    char* end = nullptr;
    unsigned long n = strtoul(p, &end, 10);
    if (end == p) break;
    if (n < 64) bits |= 1ull << n;
    p = *end == ',' ? end + 1 : end;
  }
  return bits;
}

__attribute__((constructor)) void ReadConfig() {
  g_cfg.version = static_cast<uint32_t>(EnvU64("FAKE_CUPTI_VERSION", CUPTI_API_VERSION));
  const char* sub = getenv("FAKE_CUPTI_SUBSCRIBE");
  g_cfg.subscribe_busy = sub != nullptr && strcmp(sub, "busy") == 0;
  g_cfg.subscribe_error = sub != nullptr && strcmp(sub, "error") == 0;
  const char* holder = getenv("FAKE_CUPTI_HOLDER");
  snprintf(g_cfg.holder, sizeof(g_cfg.holder), "%s",
           holder != nullptr ? holder : "CUPTI for torch.profiler");
  g_cfg.unsupported_kinds = EnvBits("FAKE_CUPTI_UNSUPPORTED", 0);
  const char* kernels = getenv("FAKE_CUPTI_KERNELS");
  g_cfg.kernels = kernels != nullptr && strcmp(kernels, "forever") == 0
                      ? -1
                      : static_cast<int64_t>(EnvU64("FAKE_CUPTI_KERNELS", 0));
  g_cfg.rate_per_s = EnvU64("FAKE_CUPTI_RATE", 0);
  g_cfg.mixed = EnvU64("FAKE_CUPTI_MIXED", 0) != 0;
  g_cfg.dropped_at_start = EnvU64("FAKE_CUPTI_DROPPED", 0);
  g_cfg.dropped_at_end = EnvU64("FAKE_CUPTI_DROPPED_AT_END", 0);
  g_cfg.incomplete = static_cast<uint32_t>(EnvU64("FAKE_CUPTI_INCOMPLETE", 0));
  g_cfg.in_flight = EnvU64("FAKE_CUPTI_IN_FLIGHT", 0) != 0;
  g_cfg.queued = static_cast<uint32_t>(EnvU64("FAKE_CUPTI_QUEUED", 0));
  g_cfg.queued_lag = EnvU64("FAKE_CUPTI_QUEUED_LAG", 0);
  g_cfg.steal_after = getenv("FAKE_CUPTI_STEAL") != nullptr
                          ? static_cast<int64_t>(EnvU64("FAKE_CUPTI_STEAL", 0))
                          : -1;
  const char* late = getenv("FAKE_CUPTI_LATE_KERNELS");
  g_cfg.late_kernels_dead = late != nullptr && strcmp(late, "dead") == 0;
  const char* flush = getenv("FAKE_CUPTI_FLUSH");
  g_cfg.flush_full_only = flush != nullptr && strcmp(flush, "full-only") == 0;
  g_cfg.forced_keeps_running = flush != nullptr && strcmp(flush, "forced-keeps-running") == 0;
  g_cfg.context_devices = EnvBits("FAKE_CUPTI_CONTEXTS", 1);  // "none": no number, no bit
  g_cfg.threads = static_cast<uint32_t>(EnvU64("FAKE_CUPTI_THREADS", 0));
  if (g_cfg.threads > kMaxSlots - 1) g_cfg.threads = kMaxSlots - 1;
  g_cfg.thread_kernels = EnvU64("FAKE_CUPTI_THREAD_KERNELS", 100);
  snprintf(g_cfg.stats_path, sizeof(g_cfg.stats_path), "%s",
           getenv("FAKE_CUPTI_STATS") != nullptr ? getenv("FAKE_CUPTI_STATS") : "");
}

// The size CUPTI gives a record of this kind (its struct in these headers);
// 0 for kinds the fake never writes.
size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MARKER:
      return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      return sizeof(CUpti_ActivityContext3);
    default:
      return 0;
  }
}

// Records are laid out back to back; every struct is 8-byte aligned
// (PACKED_ALIGNMENT), so each size is a multiple of 8.
static_assert(sizeof(CUpti_ActivityKernel10) % 8 == 0 && sizeof(CUpti_ActivityAPI) % 8 == 0 &&
                  sizeof(CUpti_ActivityMarker2) % 8 == 0 &&
                  sizeof(CUpti_ActivityContext3) % 8 == 0,
              "CUPTI records are 8-byte multiples");

bool KindOn(CUpti_ActivityKind k) {
  return static_cast<uint32_t>(k) < CUPTI_ACTIVITY_KIND_COUNT && g_kind[k];
}

// Caller holds g_mu: buffers the fake holds (one per thread at most).
uint64_t HeldBuffersLocked() {
  uint64_t n = 0;
  for (const Slot& slot : g_slots) n += slot.have ? 1 : 0;
  return n;
}

// Hands a detached buffer to whoever holds the completion callback now.
// Called without g_mu: the collector's callbacks must not run under our lock.
void Deliver(const Buffer& b) {
  pthread_mutex_lock(&g_mu);
  CUpti_BuffersCallbackCompleteFunc complete = g_complete;
  const bool to_first = complete == g_first_complete;
  if (to_first) {
    ++g_n.first_delivered;
    g_n.kernels_delivered += b.kernels;
    g_n.records_delivered += b.records;
  } else {
    ++g_n.other_delivered;
    if (b.from_first_client) ++g_n.stolen;
  }
  g_n.held_buffers = HeldBuffersLocked();
  pthread_mutex_unlock(&g_mu);
  if (complete != nullptr) complete(nullptr, 0, b.data, b.size, b.used);
}

// Caller holds g_mu. Checks a buffer the client just handed over.
void CheckNewBufferLocked(const uint8_t* data, size_t size) {
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) ++g_n.misaligned_buffers;
  if (g_zeroed_attr != 0) {
    for (size_t i = 0; i < size; ++i) {
      if (data[i] != 0) {
        ++g_n.nonzero_buffers;
        break;
      }
    }
  }
  bool seen = false;
  for (uint64_t i = 0; i < g_n.distinct_buffers && i < kDistinctCap; ++i) {
    if (g_distinct[i] == data) seen = true;
  }
  if (!seen) {
    if (g_n.distinct_buffers < kDistinctCap) g_distinct[g_n.distinct_buffers] = data;
    ++g_n.distinct_buffers;
    const uint64_t lo = reinterpret_cast<uintptr_t>(data);
    const uint64_t hi = lo + size;
    if (g_n.buffer_lo == 0 || lo < g_n.buffer_lo) g_n.buffer_lo = lo;
    if (hi > g_n.buffer_hi) g_n.buffer_hi = hi;
  }
}

// Device thread: appends one record to the current buffer, asking the
// client for buffers as CUPTI does. False when the record was dropped.
// `after_write` runs under g_mu right after the record is in the buffer.
template <typename AfterWrite>
bool EmitThen(const void* record, size_t size, bool kernel, bool in_flight,
              AfterWrite after_write) {
  Slot& slot = g_slots[t_slot];
  pthread_mutex_lock(&g_mu);
  for (;;) {
    if (slot.have && (slot.cur.used + size > slot.cur.size ||
                       (slot.cur.max_records != 0 && slot.cur.records >= slot.cur.max_records))) {
      Buffer full = slot.cur;
      slot.have = false;
      pthread_mutex_unlock(&g_mu);
      Deliver(full);
      pthread_mutex_lock(&g_mu);
      continue;
    }
    if (!slot.have) {
      CUpti_BuffersCallbackRequestFunc request = g_request;
      const bool first = request == g_first_request;
      pthread_mutex_unlock(&g_mu);
      uint8_t* data = nullptr;
      size_t bytes = 0, max_records = 0;
      if (request != nullptr) request(&data, &bytes, &max_records);
      pthread_mutex_lock(&g_mu);
      ++g_n.requests;
      if (data == nullptr || bytes < size) {
        ++g_n.refused;
        ++g_n.records_dropped;
        ++g_pending_dropped;
        pthread_mutex_unlock(&g_mu);
        if (data != nullptr) Deliver({data, bytes, 0, 0, 0, 0, first, false});
        return false;
      }
      if (slot.have) {
        // Another application thread on this slot installed a buffer while
        // this one asked for its own: hand the spare back empty (CUPTI never
        // loses a buffer it was given) and write into the installed one.
        pthread_mutex_unlock(&g_mu);
        Deliver({data, bytes, 0, 0, 0, 0, first, false});
        pthread_mutex_lock(&g_mu);
        continue;
      }
      CheckNewBufferLocked(data, bytes);
      slot.cur = {data, bytes, 0, max_records, 0, 0, first, false};
      slot.have = true;
      g_n.held_buffers = HeldBuffersLocked();
      continue;
    }
    memcpy(slot.cur.data + slot.cur.used, record, size);
    slot.cur.used += size;
    ++slot.cur.records;
    ++g_n.records_written;
    if (kernel) {
      ++slot.cur.kernels;
      ++g_n.kernels_written;
    }
    if (in_flight) slot.cur.holds_in_flight = true;
    after_write();
    pthread_mutex_unlock(&g_mu);
    return true;
  }
}

bool Emit(const void* record, size_t size, bool kernel = false, bool in_flight = false) {
  return EmitThen(record, size, kernel, in_flight, [] {});
}

template <typename T>
void Zero(T* r) {
  memset(static_cast<void*>(r), 0, sizeof(*r));
}

// The "other client" of FAKE_CUPTI_STEAL (torch.profiler re-registering the
// process-global callbacks). Its buffers come from a small static arena;
// buffers it did not hand out are ignored ("unknown buffer").
alignas(8) uint8_t g_other_arena[4][64 * 1024];
uint32_t g_other_next = 0;
void CUPTIAPI OtherRequest(uint8_t** buffer, size_t* size, size_t* max_records) {
  uint8_t* b = g_other_arena[g_other_next++ % 4];
  memset(b, 0, sizeof(g_other_arena[0]));
  *buffer = b;
  *size = sizeof(g_other_arena[0]);
  *max_records = 0;
}
void CUPTIAPI OtherComplete(CUcontext, uint32_t, uint8_t*, size_t, size_t) {}

// With g_mu held: the whole RUNTIME or DRIVER kind switched, every id of it.
void SetAllApiIds(CUpti_ActivityKind kind, bool on) {
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
    for (bool& b : g_runtime_cbid) b = on;
  } else if (kind == CUPTI_ACTIVITY_KIND_DRIVER) {
    for (bool& b : g_driver_cbid) b = on;
  }
}

// The API record of a call, when its id is on (written as CUPTI writes it,
// at the call's exit); tid: its thread as CUPTI names it.
void ApiRecordOf(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint64_t start, uint64_t end,
                 uint32_t correlation, uint32_t tid, uint32_t result) {
  pthread_mutex_lock(&g_mu);
  bool on = KindOn(kind);
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE) {
    on = g_runtime_cbid[cbid];
  }
  if (kind == CUPTI_ACTIVITY_KIND_DRIVER && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE) {
    on = g_driver_cbid[cbid];
  }
  pthread_mutex_unlock(&g_mu);
  if (!on) return;
  CUpti_ActivityAPI a;
  Zero(&a);
  a.kind = kind;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = static_cast<uint32_t>(getpid());
  a.threadId = tid;
  a.correlationId = correlation;
  a.returnValue = result;
  Emit(&a, sizeof(a));
}

// A call of the workload's "application" (made by the device thread).
void ApiRecord(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint64_t start, uint64_t end,
               uint32_t correlation) {
  pthread_mutex_lock(&g_mu);
  const uint32_t tid =
      g_thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM ? g_app_tid : g_app_tid + 0x10000;
  pthread_mutex_unlock(&g_mu);
  ApiRecordOf(kind, cbid, start, end, correlation, tid, 0);
}

bool KernelsOn() {
  pthread_mutex_lock(&g_mu);
  bool on = KindOn(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) || KindOn(CUPTI_ACTIVITY_KIND_KERNEL);
  pthread_mutex_unlock(&g_mu);
  return on;
}

bool On(CUpti_ActivityKind k) {
  pthread_mutex_lock(&g_mu);
  bool on = KindOn(k);
  pthread_mutex_unlock(&g_mu);
  return on;
}

void FillKernel(uint64_t i, uint64_t t0, CUpti_ActivityKernel10* k) {
  Zero(k);
  k->kind = KindOn(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                                          : CUPTI_ACTIVITY_KIND_KERNEL;
  k->registersPerThread = 32;
  k->start = t0 + 10000 * i;
  k->end = k->start + 2000 + i;
  k->completed = k->end;
  k->deviceId = 0;
  k->contextId = 1;
  k->streamId = static_cast<uint32_t>(7 + 6 * (i % 2));
  k->gridX = static_cast<int32_t>(1 + i % 5);
  k->gridY = 2;
  k->gridZ = 1;
  k->blockX = 128 << (i % 2);
  k->blockY = 1;
  k->blockZ = 1;
  k->staticSharedMemory = 1024;
  k->dynamicSharedMemory = static_cast<int32_t>(256 * (i % 2));
  k->correlationId = static_cast<uint32_t>(1000 + i);
  k->gridId = static_cast<int64_t>(i);
  k->name = kKernelNames[i % 3];
  k->queued = k->start - 1000;
  k->submitted = k->start - 500;
  if (i % 10 == 9) {
    k->graphId = 5;
    k->graphNodeId = 0x1000 + i;
  }
  k->clusterX = 1;
  k->clusterY = 1;
  k->clusterZ = 1;
}

// Kernel i without timestamps (start == end == 0): not run yet, or the
// device could not record them. False when the record was dropped.
bool EmitUntimedKernel(uint64_t i, uint64_t t0) {
  CUpti_ActivityKernel10 k;
  pthread_mutex_lock(&g_mu);
  FillKernel(i, t0, &k);
  pthread_mutex_unlock(&g_mu);
  k.start = 0;
  k.end = 0;
  k.completed = 0;
  return Emit(&k, sizeof(k), true);
}

// Pacing for FAKE_CUPTI_RATE: kernel i is due at start + i / rate.
void Pace(uint64_t i, uint64_t start_mono_ns) {
  if (g_cfg.rate_per_s == 0) return;
  const uint64_t due = start_mono_ns + i * 1000000000ull / g_cfg.rate_per_s;
  timespec ts{static_cast<time_t>(due / 1000000000ull), static_cast<long>(due % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

void Steal() {  // runs under g_mu, right after the record that triggers it
  g_request = OtherRequest;
  g_complete = OtherComplete;
  LogLocked("register_other", 0, 0);
}

// The fixed "mixed" script of FAKE_CUPTI_MIXED; offsets from t0 in ns.
void MixedScript(uint64_t t0) {
  const uint32_t tid = g_app_tid;
  if (On(CUPTI_ACTIVITY_KIND_DEVICE)) {
    CUpti_ActivityDevice5 d;
    Zero(&d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.globalMemoryBandwidth = 4800000000ull;
    d.globalMemorySize = 150754820096ull;
    d.l2CacheSize = 52428800;
    d.numThreadsPerWarp = 32;
    d.coreClockRate = 1980000;
    d.numMultiprocessors = 132;
    d.maxWarpsPerMultiprocessor = 64;
    d.maxBlocksPerMultiprocessor = 32;
    d.maxSharedMemoryPerMultiprocessor = 233472;
    d.maxRegistersPerMultiprocessor = 65536;
    d.computeCapabilityMajor = 9;
    d.computeCapabilityMinor = 0;
    d.id = 0;
    for (int b = 0; b < 16; ++b) d.uuid.bytes[b] = static_cast<char>(0xa0 + b);
    d.name = "Fake H200";
    d.isCudaVisible = 1;
    Emit(&d, sizeof(d));
  }
  if (On(CUPTI_ACTIVITY_KIND_CONTEXT)) {
    CUpti_ActivityContext3 c;
    Zero(&c);
    c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    c.contextId = 1;
    c.deviceId = 0;
    c.nullStreamId = 7;
    Emit(&c, sizeof(c));
  }
  auto marker = [&](uint32_t flags, uint32_t id, uint64_t ts, const char* name,
                    const char* domain) {
    if (!On(CUPTI_ACTIVITY_KIND_MARKER)) return;
    CUpti_ActivityMarker2 m;
    Zero(&m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = static_cast<CUpti_ActivityFlag>(flags);
    m.timestamp = ts;
    m.id = id;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = static_cast<uint32_t>(getpid());
    m.objectId.pt.threadId = tid;
    m.name = name;
    m.domain = domain;
    Emit(&m, sizeof(m));
  };
  marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, t0 + 500, "train_step", nullptr);
  ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, t0 + 1000,
            t0 + 9000, 2000);
  if (On(CUPTI_ACTIVITY_KIND_MEMCPY)) {
    CUpti_ActivityMemcpy6 m;
    Zero(&m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 1048576;
    m.start = t0 + 2000;
    m.end = t0 + 8000;
    m.deviceId = 0;
    m.contextId = 1;
    m.streamId = 7;
    m.correlationId = 2000;
    Emit(&m, sizeof(m));
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    m.bytes = 4096;
    m.start = t0 + 12000;
    m.end = t0 + 13000;
    m.streamId = 13;
    m.correlationId = 2100;
    m.runtimeCorrelationId = 2101;
    Emit(&m, sizeof(m));
  }
  ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
            t0 + 10000, t0 + 11000, 2101);
  marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, t0 + 15000, "ncclAllReduce", "NCCL");
  if (On(CUPTI_ACTIVITY_KIND_MEMCPY2)) {
    CUpti_ActivityMemcpyPtoP4 p;
    Zero(&p);
    p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    p.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    p.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    p.bytes = 8388608;
    p.start = t0 + 14000;
    p.end = t0 + 20000;
    p.deviceId = 0;
    p.contextId = 1;
    p.streamId = 13;
    p.srcDeviceId = 0;
    p.srcContextId = 1;
    p.dstDeviceId = 1;
    p.dstContextId = 2;
    p.correlationId = 2200;
    Emit(&p, sizeof(p));
  }
  marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, t0 + 19000, nullptr, "NCCL");
  marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, t0 + 20500, "checkpoint", "app");
  if (On(CUPTI_ACTIVITY_KIND_MEMSET)) {
    CUpti_ActivityMemset4 s;
    Zero(&s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.value = 0xab;
    s.bytes = 65536;
    s.start = t0 + 21000;
    s.end = t0 + 22000;
    s.deviceId = 0;
    s.contextId = 1;
    s.streamId = 7;
    s.correlationId = 2300;
    s.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    Emit(&s, sizeof(s));
  }
  ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
            t0 + 23000, t0 + 30000, 2400);
  if (On(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) {
    CUpti_ActivitySynchronization2 y;
    Zero(&y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    y.start = t0 + 23500;
    y.end = t0 + 29500;
    y.correlationId = 2400;
    y.contextId = 1;
    y.streamId = 7;
    y.cudaEventId = 0xffffffffu;
    Emit(&y, sizeof(y));
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
    y.start = t0 + 31000;
    y.end = t0 + 32000;
    y.correlationId = 2401;
    y.streamId = 0xffffffffu;
    y.cudaEventId = 42;
    Emit(&y, sizeof(y));
  }
  ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, t0 + 33000,
            t0 + 34000, 2500);
  // Not in gpscope's call list: present only if a whole API kind is on.
  ApiRecord(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, t0 + 34100,
            t0 + 34200, 2501);
  ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, t0 + 34300,
            t0 + 34400, 2502);
  marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, t0 + 35000, nullptr, nullptr);
  if (On(CUPTI_ACTIVITY_KIND_OVERHEAD)) {
    CUpti_ActivityOverhead3 o;
    Zero(&o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.processId = static_cast<uint32_t>(getpid());
    o.objectId.pt.threadId = tid;
    o.start = t0 + 36000;
    o.end = t0 + 36500;
    Emit(&o, sizeof(o));
    Zero(&o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;
    o.objectId.dcs.deviceId = 0;
    o.start = t0 + 37000;
    o.end = t0 + 38000;
    Emit(&o, sizeof(o));
  }
}

void* DeviceMain(void*) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  const uint64_t t0 = ClockNs(CLOCK_REALTIME);
  const uint64_t start_mono = ClockNs(CLOCK_MONOTONIC);
  pthread_mutex_lock(&g_mu);
  g_n.t0 = t0;
  g_pending_dropped += g_cfg.dropped_at_start;
  g_n.records_dropped += g_cfg.dropped_at_start;
  pthread_mutex_unlock(&g_mu);

  if (g_cfg.mixed) MixedScript(t0);
  uint64_t i = 0;
  for (; g_cfg.kernels < 0 || i < static_cast<uint64_t>(g_cfg.kernels); ++i) {
    Pace(i, start_mono);
    if (!KernelsOn()) continue;
    CUpti_ActivityKernel10 k;
    // A paced workload stamps each kernel with the time it is produced (as
    // a GPU would), so capture windows can be checked against real time.
    const uint64_t base = g_cfg.rate_per_s > 0 ? ClockNs(CLOCK_REALTIME) - 10000 * i : t0;
    pthread_mutex_lock(&g_mu);
    FillKernel(i, base, &k);
    g_next_kernel = i + 1;
    pthread_mutex_unlock(&g_mu);
    ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
              k.start - 5000, k.start - 2000, k.correlationId);
    ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
              k.start - 1900, k.start - 1800, 0);
    const bool steal = g_cfg.steal_after >= 0 && i + 1 == static_cast<uint64_t>(g_cfg.steal_after);
    if (steal) {
      EmitThen(&k, sizeof(k), true, false, Steal);
    } else {
      Emit(&k, sizeof(k), true);
    }
  }
  // Kernels whose timestamps the device could not record.
  for (uint32_t j = 0; j < g_cfg.incomplete && KernelsOn(); ++j, ++i) EmitUntimedKernel(i, t0);
  if (g_cfg.in_flight && KernelsOn()) {
    CUpti_ActivityKernel10 k;
    pthread_mutex_lock(&g_mu);
    FillKernel(i, t0, &k);
    pthread_mutex_unlock(&g_mu);
    k.end = 0;
    k.completed = 0;
    Emit(&k, sizeof(k), true, /*in_flight=*/true);
  }
  pthread_mutex_lock(&g_mu);
  if (g_cfg.dropped_at_end > 0) {
    // Wait (at most 5 s) for a flush to take the last buffer.
    const uint64_t deadline = ClockNs(CLOCK_MONOTONIC) + 5000000000ull;
    while (g_slots[0].have && ClockNs(CLOCK_MONOTONIC) < deadline) {
      pthread_mutex_unlock(&g_mu);
      const timespec pause{0, 2000000};
      nanosleep(&pause, nullptr);
      pthread_mutex_lock(&g_mu);
    }
  }
  g_pending_dropped += g_cfg.dropped_at_end;
  g_n.records_dropped += g_cfg.dropped_at_end;
  g_device_done = true;
  g_done = g_threads_left == 0;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  return nullptr;
}

// Application thread t (FAKE_CUPTI_THREADS): its kernels into its own buffer.
void* AppThreadMain(void* arg) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the main thread gets the signals
  const uint32_t t = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(arg));
  t_slot = 1 + static_cast<int>(t);
  pthread_mutex_lock(&g_mu);
  while (g_n.t0 == 0) {  // the device thread sets the workload's t0
    pthread_mutex_unlock(&g_mu);
    const timespec pause{0, 100000};
    nanosleep(&pause, nullptr);
    pthread_mutex_lock(&g_mu);
  }
  const uint64_t t0 = g_n.t0;
  const uint64_t first = (g_cfg.kernels > 0 ? static_cast<uint64_t>(g_cfg.kernels) : 0) +
                         uint64_t{t} * g_cfg.thread_kernels;
  pthread_mutex_unlock(&g_mu);
  for (uint64_t j = 0; j < g_cfg.thread_kernels; ++j) {
    if (!KernelsOn()) continue;
    CUpti_ActivityKernel10 k;
    pthread_mutex_lock(&g_mu);
    FillKernel(first + j, t0, &k);
    pthread_mutex_unlock(&g_mu);
    ApiRecord(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
              k.start - 5000, k.start - 2000, k.correlationId);
    Emit(&k, sizeof(k), true);
    if (j % 16 == 15) sched_yield();  // the threads' requests interleave
  }
  pthread_mutex_lock(&g_mu);
  --g_threads_left;
  g_done = g_device_done && g_threads_left == 0;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  return nullptr;
}

const char* ResultName(CUptiResult r) {
  switch (r) {
    case CUPTI_SUCCESS: return "CUPTI_SUCCESS";
    case CUPTI_ERROR_INVALID_PARAMETER: return "CUPTI_ERROR_INVALID_PARAMETER";
    case CUPTI_ERROR_INVALID_KIND: return "CUPTI_ERROR_INVALID_KIND";
    case CUPTI_ERROR_INVALID_OPERATION: return "CUPTI_ERROR_INVALID_OPERATION";
    case CUPTI_ERROR_MAX_LIMIT_REACHED: return "CUPTI_ERROR_MAX_LIMIT_REACHED";
    case CUPTI_ERROR_NOT_COMPATIBLE: return "CUPTI_ERROR_NOT_COMPATIBLE";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case CUPTI_ERROR_NOT_INITIALIZED: return "CUPTI_ERROR_NOT_INITIALIZED";
    default: return nullptr;
  }
}

#define FAKE_CB(domain, name) {domain##_##name, #name}
struct CallbackName {
  uint32_t cbid;
  const char* name;
};
constexpr CallbackName kRuntimeNames[] = {
    FAKE_CB(CUPTI_RUNTIME_TRACE_CBID, cudaLaunchKernel_v7000),
    FAKE_CB(CUPTI_RUNTIME_TRACE_CBID, cudaGetLastError_v3020),
    FAKE_CB(CUPTI_RUNTIME_TRACE_CBID, cudaMemcpy_v3020),
    FAKE_CB(CUPTI_RUNTIME_TRACE_CBID, cudaMemcpyAsync_v3020),
    FAKE_CB(CUPTI_RUNTIME_TRACE_CBID, cudaStreamSynchronize_v3020),
    FAKE_CB(CUPTI_RUNTIME_TRACE_CBID, cudaGetDevice_v3020),
};
constexpr CallbackName kDriverNames[] = {
    FAKE_CB(CUPTI_DRIVER_TRACE_CBID, cuLaunchKernel),
    FAKE_CB(CUPTI_DRIVER_TRACE_CBID, cuCtxGetCurrent),
    FAKE_CB(CUPTI_DRIVER_TRACE_CBID, cuCtxSynchronize),
    FAKE_CB(CUPTI_DRIVER_TRACE_CBID, cuMemcpyHtoD_v2),
};
#undef FAKE_CB

int g_subscriber_token;

}  // namespace

// ------------------------------------------------------------ CUPTI API --

extern "C" {

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = g_cfg.version;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *str = ResultName(result);
  return *str != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  NoteCall();
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = ClockNs(CLOCK_REALTIME);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  NoteCall();
  pthread_mutex_lock(&g_mu);
  g_thread_id_type = static_cast<uint32_t>(type);
  LogLocked("thread_id_type", static_cast<uint32_t>(type), 1);
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  NoteCall();
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  g_request = request;
  g_complete = complete;
  if (g_first_request == nullptr) {
    g_first_request = request;
    g_first_complete = complete;
  }
  LogLocked("register", 0, 0);
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  NoteCall();
  if (static_cast<uint32_t>(kind) >= CUPTI_ACTIVITY_KIND_COUNT) return CUPTI_ERROR_INVALID_KIND;
  pthread_mutex_lock(&g_mu);
  const bool refused = kind < 64 && (g_cfg.unsupported_kinds >> kind & 1) != 0;
  LogLocked("enable_kind", static_cast<uint32_t>(kind), refused ? 0 : 1);
  const bool dead = g_cfg.late_kernels_dead && g_started &&
                    kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  if (!refused && !dead) g_kind[kind] = true;
  if (!refused) SetAllApiIds(kind, true);
  pthread_mutex_unlock(&g_mu);
  return refused ? CUPTI_ERROR_NOT_COMPATIBLE : CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  NoteCall();
  if (static_cast<uint32_t>(kind) >= CUPTI_ACTIVITY_KIND_COUNT) return CUPTI_ERROR_INVALID_KIND;
  pthread_mutex_lock(&g_mu);
  g_kind[kind] = false;
  SetAllApiIds(kind, false);
  LogLocked("disable_kind", static_cast<uint32_t>(kind), 0);
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  NoteCall();
  if (cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  if (enable == 0 || !g_started) g_runtime_cbid[cbid] = enable != 0;  // late enables: no effect
  LogLocked("runtime_api", cbid, enable);
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  NoteCall();
  if (cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  if (enable == 0 || !g_started) g_driver_cbid[cbid] = enable != 0;  // late enables: no effect
  LogLocked("driver_api", cbid, enable);
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* value_size,
                                               void* value) {
  NoteCall();
  if (value_size == nullptr || value == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  uint32_t v = 0;
  memcpy(&v, value, *value_size < sizeof(v) ? *value_size : sizeof(v));
  if (*value_size == 1) v &= 0xff;
  pthread_mutex_lock(&g_mu);
  if (attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) g_zeroed_attr = v;
  LogLocked("attribute", static_cast<uint32_t>(attr), v);
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                                CUpti_Activity** record) {
  NoteCall();
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  __atomic_add_fetch(&g_n.get_next_calls, 1, __ATOMIC_RELAXED);
  uint8_t* p = buffer;
  if (*record != nullptr) {
    const size_t size = RecordSize((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    p = reinterpret_cast<uint8_t*>(*record) + size;
  }
  if (p < buffer || p >= buffer + valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  const size_t size = RecordSize(reinterpret_cast<CUpti_Activity*>(p)->kind);
  if (size == 0 || p + size > buffer + valid_bytes) return CUPTI_ERROR_INVALID_KIND;
  *record = reinterpret_cast<CUpti_Activity*>(p);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  *dropped = static_cast<size_t>(g_pending_dropped);
  g_n.dropped_reported += g_pending_dropped;
  g_pending_dropped = 0;
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

namespace {

// The flushing thread, forced flush: FAKE_CUPTI_QUEUED kernels not run yet
// (no timestamps) go into the buffer being handed over.
void EmitQueued() {
  pthread_mutex_lock(&g_mu);
  const bool running = g_started && !g_done && g_next_kernel > g_cfg.queued_lag;
  const uint64_t first = g_cfg.queued_lag > 0 ? g_next_kernel - g_cfg.queued_lag : g_next_kernel;
  const uint64_t t0 = g_n.t0;
  pthread_mutex_unlock(&g_mu);
  if (!running || !KernelsOn()) return;
  for (uint64_t i = first; i < first + g_cfg.queued; ++i) {
    if (!EmitUntimedKernel(i, t0)) continue;
    pthread_mutex_lock(&g_mu);
    ++g_n.queued_records;
    pthread_mutex_unlock(&g_mu);
  }
}

CUptiResult FlushAllLocked(uint32_t flag) {
  const bool forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
  if (forced && g_cfg.queued > 0) EmitQueued();
  pthread_mutex_lock(&g_mu);
  if (g_complete == nullptr) {
    pthread_mutex_unlock(&g_mu);
    return CUPTI_ERROR_INVALID_OPERATION;
  }
  ++(forced ? g_n.forced_flushes : g_n.flushes);
  LogLocked(forced ? "flush_forced" : "flush", flag, 0);
  // Every thread's buffer that qualifies, delivered outside g_mu.
  Buffer out[kMaxSlots];
  int n = 0;
  for (Slot& slot : g_slots) {
    if (forced && g_cfg.forced_keeps_running && &slot == &g_slots[0] && g_started && !g_done) {
      continue;
    }
    if (slot.have && (forced || (slot.cur.used > 0 && !slot.cur.holds_in_flight &&
                                 !g_cfg.flush_full_only))) {
      out[n++] = slot.cur;
      slot.have = false;
    }
  }
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < n; ++i) Deliver(out[i]);
  return CUPTI_SUCCESS;
}

}  // namespace

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  NoteCall();
  DriverLock();  // waits while the application is inside a call
  const CUptiResult r = FlushAllLocked(flag);
  DriverUnlock();
  return r;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc cb,
                                    void* userdata) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (g_cfg.subscribe_error) return CUPTI_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_mu);
  const bool busy = g_cfg.subscribe_busy || g_subscribers > 0;
  LogLocked("subscribe", 0, busy ? 0 : 1);
  __atomic_store_n(&g_finalized, false, __ATOMIC_RELEASE);
  if (!busy) {
    ++g_subscribers;
    g_sub_callback = cb;
    g_sub_userdata = userdata;
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_token);
  }
  pthread_mutex_unlock(&g_mu);
  return busy ? CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED : CUPTI_SUCCESS;
}

#ifndef FAKE_CUPTI_NO_V2
CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber,
                                       CUpti_CallbackFunc cb, void* userdata,
                                       CUpti_SubscriberParams* params) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (params != nullptr && params->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  if (g_cfg.subscribe_error) return CUPTI_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_mu);
  const bool busy = g_cfg.subscribe_busy || g_subscribers > 0;
  LogLocked("subscribe_v2", 0, busy ? 0 : 1);
  __atomic_store_n(&g_finalized, false, __ATOMIC_RELEASE);
  if (busy) {
    if (params != nullptr && params->oldSubscriberName != nullptr &&
        params->oldSubscriberSize > 0) {
      snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", g_cfg.holder);
    }
  } else {
    ++g_subscribers;
    g_sub_callback = cb;
    g_sub_userdata = userdata;
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_token);
    snprintf(g_subscriber_name, sizeof(g_subscriber_name), "%s",
             params != nullptr && params->subscriberName != nullptr ? params->subscriberName
                                                                    : "");
  }
  pthread_mutex_unlock(&g_mu);
  return busy ? CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED : CUPTI_SUCCESS;
}
#endif

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  NoteCall();
  if (subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_token)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  pthread_mutex_lock(&g_mu);
  if (g_subscribers > 0) --g_subscribers;
  g_sub_callback = nullptr;
  g_context_callback_on = false;
  LogLocked("unsubscribe", 0, 0);
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  NoteCall();
  pthread_mutex_lock(&g_mu);
  LogLocked("enable_callback", static_cast<uint32_t>(domain) << 16 | (cbid & 0xffff), enable);
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    g_context_callback_on = enable != 0;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE) {
    __atomic_store_n(&g_cb_runtime[cbid], enable != 0, __ATOMIC_RELEASE);
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE) {
    __atomic_store_n(&g_cb_driver[cbid], enable != 0, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t* device_id) {
  NoteCall();
  const uintptr_t c = reinterpret_cast<uintptr_t>(context);
  if (device_id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (c < 0x1000 || c >= 0x1000 + 64) return CUPTI_ERROR_INVALID_DEVICE;
  *device_id = static_cast<uint32_t>(c - 0x1000);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle,
                                       CUpti_CallbackDomain domain) {
  NoteCall();
  Log("enable_domain", static_cast<uint32_t>(domain), enable);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    for (bool& on : g_cb_runtime) __atomic_store_n(&on, enable != 0, __ATOMIC_RELEASE);
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    for (bool& on : g_cb_driver) __atomic_store_n(&on, enable != 0, __ATOMIC_RELEASE);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                          const char** name) {
  NoteCall();
  if (name == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = nullptr;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    for (const CallbackName& n : kRuntimeNames) {
      if (n.cbid == cbid) *name = n.name;
    }
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    for (const CallbackName& n : kDriverNames) {
      if (n.cbid == cbid) *name = n.name;
    }
  }
  return *name != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiFinalize(void) {
  pthread_mutex_lock(&g_mu);
  LogLocked("finalize", 0, 0);
  ++g_finalizes;
  if (g_subscribers > 0) --g_subscribers;
  g_sub_callback = nullptr;
  g_context_callback_on = false;
  for (bool& on : g_cb_runtime) __atomic_store_n(&on, false, __ATOMIC_RELEASE);
  for (bool& on : g_cb_driver) __atomic_store_n(&on, false, __ATOMIC_RELEASE);
  for (bool& on : g_kind) on = false;
  for (bool& on : g_runtime_cbid) on = false;
  for (bool& on : g_driver_cbid) on = false;
  __atomic_store_n(&g_finalized, true, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

}  // extern "C"

// ------------------------------------------------------ test controls --

FAKE_EXPORT int fake_cupti_start(void) {
  pthread_mutex_lock(&g_mu);
  if (g_started) {
    pthread_mutex_unlock(&g_mu);
    return 1;
  }
  g_started = true;
  g_app_tid = Tid();
  LogLocked("start", 0, 0);
  CUpti_CallbackFunc cb = g_context_callback_on ? g_sub_callback : nullptr;
  void* userdata = g_sub_userdata;
  pthread_mutex_unlock(&g_mu);
  // The application creates its contexts (callbacks run without our lock).
  for (uint32_t d = 0; d < 64 && cb != nullptr; ++d) {
    if (!((g_cfg.context_devices >> d) & 1)) continue;
    CUpti_ResourceData rd{};
    rd.context = reinterpret_cast<CUcontext>(static_cast<uintptr_t>(0x1000 + d));
    cb(userdata, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
  }
  pthread_mutex_lock(&g_mu);
  g_threads_left = static_cast<int>(g_cfg.threads);
  pthread_mutex_unlock(&g_mu);
  pthread_t t;
  if (pthread_create(&t, nullptr, DeviceMain, nullptr) != 0) return 2;
  pthread_detach(t);
  for (uint32_t i = 0; i < g_cfg.threads; ++i) {
    pthread_t a;
    if (pthread_create(&a, nullptr, AppThreadMain, reinterpret_cast<void*>(uintptr_t{i})) != 0) {
      return 3;
    }
    pthread_detach(a);
  }
  return 0;
}

namespace {
bool CallbackOn(CUpti_CallbackDomain domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE && __atomic_load_n(&g_cb_runtime[cbid], __ATOMIC_ACQUIRE);
  }
  return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE && __atomic_load_n(&g_cb_driver[cbid], __ATOMIC_ACQUIRE);
}

// One callback site of one call, without g_mu (the collector's callback
// must not run under our lock).
void ApiCallback(CUpti_CallbackDomain domain, uint32_t cbid, CUpti_ApiCallbackSite site,
                 uint32_t correlation, int32_t* result = nullptr) {
  if (!CallbackOn(domain, cbid)) return;
  pthread_mutex_lock(&g_mu);
  CUpti_CallbackFunc cb = g_sub_callback;
  void* userdata = g_sub_userdata;
  pthread_mutex_unlock(&g_mu);
  if (cb == nullptr) return;
  __atomic_fetch_add(&g_api_callbacks, 1, __ATOMIC_RELAXED);
  CUpti_CallbackData d;
  memset(&d, 0, sizeof(d));
  d.callbackSite = site;
  d.functionName = "fake";
  d.correlationId = correlation;
  d.functionReturnValue = site == CUPTI_API_EXIT ? result : nullptr;
  cb(userdata, domain, cbid, &d);
}

// A call made through fake_cupti_api_call: its record, on the calling thread.
void CallRecord(CUpti_CallbackDomain dom, uint32_t cbid, uint64_t start, uint32_t corr,
                uint32_t result) {
  ApiRecordOf(
      dom == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER,
      cbid, start, ClockNs(CLOCK_REALTIME), corr, Tid(), result);
}

void BusyUs(uint32_t us) {
  const uint64_t until = ClockNs(CLOCK_MONOTONIC) + uint64_t{us} * 1000;
  while (ClockNs(CLOCK_MONOTONIC) < until) {
  }
}
}  // namespace

FAKE_EXPORT uint32_t fake_cupti_api_call_result(uint32_t domain, uint32_t cbid, uint32_t busy_us,
                                                uint32_t inner_driver_cbid, uint32_t result) {
  const auto dom = static_cast<CUpti_CallbackDomain>(domain);
  const uint32_t corr = __atomic_fetch_add(&g_next_api_corr, inner_driver_cbid ? 2 : 1,
                                           __ATOMIC_RELAXED);
  const uint64_t start = ClockNs(CLOCK_REALTIME);
  ApiCallback(dom, cbid, CUPTI_API_ENTER, corr);
  BusyUs(busy_us);
  if (inner_driver_cbid != 0) {
    int32_t inner_result = 0;
    ApiCallback(CUPTI_CB_DOMAIN_DRIVER_API, inner_driver_cbid, CUPTI_API_ENTER, corr + 1);
    BusyUs(1);
    ApiCallback(CUPTI_CB_DOMAIN_DRIVER_API, inner_driver_cbid, CUPTI_API_EXIT, corr + 1,
                &inner_result);
  }
  int32_t returned = static_cast<int32_t>(result);
  ApiCallback(dom, cbid, CUPTI_API_EXIT, corr, &returned);
  CallRecord(dom, cbid, start, corr, result);
  return corr;
}

FAKE_EXPORT uint32_t fake_cupti_api_call(uint32_t domain, uint32_t cbid, uint32_t busy_us,
                                         uint32_t inner_driver_cbid) {
  return fake_cupti_api_call_result(domain, cbid, busy_us, inner_driver_cbid, 0);
}

FAKE_EXPORT int fake_cupti_kernel_for(uint32_t correlation) {
  if (!KernelsOn()) return 0;
  CUpti_ActivityKernel10 k;
  const uint64_t now = ClockNs(CLOCK_REALTIME);
  pthread_mutex_lock(&g_mu);
  FillKernel(0, now + 1000, &k);
  pthread_mutex_unlock(&g_mu);
  k.correlationId = correlation;
  return Emit(&k, sizeof(k), true) ? 1 : 0;
}

FAKE_EXPORT void fake_cupti_app_call(uint32_t busy_us) {
  DriverLock();
  __atomic_add_fetch(&g_app_calls, 1, __ATOMIC_RELAXED);
  const uint64_t until = ClockNs(CLOCK_MONOTONIC) + uint64_t{busy_us} * 1000;
  while (ClockNs(CLOCK_MONOTONIC) < until) {
  }
  DriverUnlock();
}

FAKE_EXPORT void fake_cupti_app_call_forever(void) {
  DriverLock();
  __atomic_add_fetch(&g_app_calls, 1, __ATOMIC_RELAXED);
  for (;;) pause();  // a signal handler may run; the call never returns
}

FAKE_EXPORT int fake_cupti_wait_done(int timeout_ms) {
  const uint64_t deadline =
      ClockNs(CLOCK_REALTIME) + static_cast<uint64_t>(timeout_ms) * 1000000ull;
  timespec ts{static_cast<time_t>(deadline / 1000000000ull),
              static_cast<long>(deadline % 1000000000ull)};
  pthread_mutex_lock(&g_mu);
  while (!g_done) {
    if (pthread_cond_timedwait(&g_cv, &g_mu, &ts) != 0) break;
  }
  const bool done = g_done;
  pthread_mutex_unlock(&g_mu);
  return done ? 1 : 0;
}

FAKE_EXPORT uint64_t fake_cupti_stat(const char* name) {
  struct Named {
    const char* name;
    const uint64_t* value;
  };
  const Named named[] = {
      {"requests", &g_n.requests},
      {"refused", &g_n.refused},
      {"first_delivered", &g_n.first_delivered},
      {"other_delivered", &g_n.other_delivered},
      {"stolen", &g_n.stolen},
      {"records_written", &g_n.records_written},
      {"kernels_written", &g_n.kernels_written},
      {"queued_records", &g_n.queued_records},
      {"kernels_delivered", &g_n.kernels_delivered},
      {"records_delivered", &g_n.records_delivered},
      {"records_dropped", &g_n.records_dropped},
      {"dropped_reported", &g_n.dropped_reported},
      {"flushes", &g_n.flushes},
      {"forced_flushes", &g_n.forced_flushes},
      {"nonzero_buffers", &g_n.nonzero_buffers},
      {"misaligned_buffers", &g_n.misaligned_buffers},
      {"distinct_buffers", &g_n.distinct_buffers},
      {"buffer_lo", &g_n.buffer_lo},
      {"buffer_hi", &g_n.buffer_hi},
      {"log_overflow", &g_n.log_overflow},
      {"get_next_calls", &g_n.get_next_calls},
      {"held_buffers", &g_n.held_buffers},
      {"t0", &g_n.t0},
  };
  uint64_t v = UINT64_MAX;
  pthread_mutex_lock(&g_mu);
  for (const Named& n : named) {
    if (strcmp(n.name, name) == 0) v = *n.value;
  }
  if (strcmp(name, "subscribers") == 0) v = static_cast<uint64_t>(g_subscribers);
  if (strcmp(name, "finalizes") == 0) v = g_finalizes;
  if (strcmp(name, "calls_while_detached") == 0) {
    v = __atomic_load_n(&g_calls_while_detached, __ATOMIC_RELAXED);
  }
  if (strcmp(name, "app_calls") == 0) v = __atomic_load_n(&g_app_calls, __ATOMIC_RELAXED);
  if (strcmp(name, "api_callbacks") == 0) v = __atomic_load_n(&g_api_callbacks, __ATOMIC_RELAXED);
  if (strcmp(name, "done") == 0) v = g_done ? 1 : 0;
  if (strcmp(name, "pending_dropped") == 0) v = g_pending_dropped;
  pthread_mutex_unlock(&g_mu);
  return v;
}

// One "key value..." line each: the counters above, then
//   version N / subscriber_name S / thread_id_type N / zeroed_attr N
//   kinds K K ... (enabled now) / runtime_cbids C C ... / driver_cbids C C ...
//   event SEQ TIME_NS OP ARG VALUE   (the call log, in order)
FAKE_EXPORT void fake_cupti_write_stats(const char* path) {
  FILE* f = fopen(path, "w");
  if (f == nullptr) return;
  const char* names[] = {"requests", "refused", "first_delivered", "other_delivered", "stolen",
                         "records_written", "kernels_written", "queued_records",
                         "kernels_delivered",
                         "records_delivered", "records_dropped", "dropped_reported", "flushes",
                         "forced_flushes", "nonzero_buffers", "misaligned_buffers",
                         "distinct_buffers", "buffer_lo", "buffer_hi", "log_overflow",
                         "get_next_calls", "held_buffers", "t0", "subscribers", "done",
                         "pending_dropped", "api_callbacks", "finalizes", "calls_while_detached"};
  for (const char* n : names) fprintf(f, "%s %llu\n", n, (unsigned long long)fake_cupti_stat(n));
  pthread_mutex_lock(&g_mu);
  fprintf(f, "version %u\nthread_id_type %u\nzeroed_attr %u\nsubscriber_name %s\n", g_cfg.version,
          g_thread_id_type, g_zeroed_attr, g_subscriber_name);
  fprintf(f, "kinds");
  for (uint32_t k = 0; k < CUPTI_ACTIVITY_KIND_COUNT; ++k) {
    if (g_kind[k]) fprintf(f, " %u", k);
  }
  fprintf(f, "\nruntime_cbids");
  for (uint32_t c = 0; c < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++c) {
    if (g_runtime_cbid[c]) fprintf(f, " %u", c);
  }
  fprintf(f, "\ndriver_cbids");
  for (uint32_t c = 0; c < CUPTI_DRIVER_TRACE_CBID_SIZE; ++c) {
    if (g_driver_cbid[c]) fprintf(f, " %u", c);
  }
  fprintf(f, "\n");
  for (size_t i = 0; i < g_log_n; ++i) {
    fprintf(f, "event %llu %llu %s %u %u\n", (unsigned long long)g_log[i].seq,
            (unsigned long long)g_log[i].time_ns, g_log[i].op, g_log[i].arg, g_log[i].value);
  }
  pthread_mutex_unlock(&g_mu);
  fclose(f);
}

namespace {
// At exit (after the collector's atexit handler: this library was loaded
// before InitializeInjection registered it).
__attribute__((destructor)) void WriteStatsAtUnload() {
  if (g_cfg.stats_path[0] != '\0') fake_cupti_write_stats(g_cfg.stats_path);
}
}  // namespace
