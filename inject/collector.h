// inject/collector.h: the collector inside the application process.
//
// Start() runs once, from InitializeInjection (the CUDA driver calls it on
// the thread that runs cuInit): it validates the configuration, loads CUPTI,
// checks the output folder, encodes this process's header chunk, registers
// CUPTI's activity buffer callbacks and the context-created callback, enables
// the activity kinds and API records that the analyses use, and starts the
// writer thread. The per-node trace file opens at the process's first CUDA
// context (GPSCOPE_OPEN_AT=context; the writer holds the frames until then):
// a process that only calls cuInit (torchrun's agent) leaves no file.
//
// The parts, each in its own module (collector.cc keeps the lifecycle, the
// threads, CUPTI's trampolines and the signal handlers):
//   cupti_session.h     subscriber, buffer callbacks, activity kinds, flushes
//   capture_gate.h      capture windows: which records are kept, when the
//                       kinds switch
//   record_converter.h  CUpti_Activity -> events (pure, unit-tested)
//   call_site_stacks.h  call-site stacks: start-up and the writer's drain
//   output_file.h       the trace file: folder, name, opening at the first
//                       context
//   writer_loop.h       the writer thread: drain, loss accounting, the end
//
// Threads:
//   * application threads / CUPTI's worker: BufferRequested/BufferCompleted
//     only pop/push indices in the BufferPool (lock-free, no syscalls);
//   * the writer thread (writer_loop.h): every ~20 ms drains completed
//     buffers, converts CUPTI records to events (ChunkWriter), and every
//     flush interval calls cuptiActivityFlushAll(0) and ships a chunk, so a
//     killed job loses at most one interval;
//   * the sampler thread (metrics/, GPSCOPE_METRICS): NVML/GPM and
//     /proc readings every GPSCOPE_METRICS_INTERVAL_MS into an SPSC ring
//     that the writer drains; stopped (bounded) before the final flush;
//     it reads only the GPUs this process has a context on;
//   * the thread creating a CUDA context: CUPTI's resource callback sets the
//     device's bit in one atomic word (no lock, allocation or syscall);
//   * the exiting thread (atexit): asks the writer for a forced flush and
//     the end chunk and waits at most GPSCOPE_EXIT_TIMEOUT_MS, so exit never
//     hangs; a fatal SIGTERM/SIGINT only wakes the finisher thread, which
//     sees the end written (by the writer, or itself if the writer is stuck
//     in CUPTI) and re-delivers the signal (inject/exit_finisher.h).
//
// Coexistence with another CUPTI client (torch.profiler, Nsight) on a
// single-subscriber driver, GPSCOPE_CUPTI_MODE:
//   hold  (default) we hold the CUPTI subscriber. The other tool's
//         cuptiSubscribe fails (it reports CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_
//         NOT_SUPPORTED and gets no GPU activity); the application runs on and
//         our trace stays complete, and records the refusal (when, who:
//         inject/cupti_hooks.h, which also refuses its activity callbacks).
//   yield gpscope leaves CUPTI to the application entirely: no GPU events are
//         collected, the trace says so (a LostInterval over the whole run).
//         Metrics sampling is off too unless GPSCOPE_METRICS is set: on the
//         H200, torch.profiler's mid-run CUPTI tracing hung the application
//         whenever our sampler thread was running (cause not yet found; it
//         blocks only SIGTERM/SIGINT, and host-only sampling hung as well).
// Buffers that never come back to us (delivered to another client that
// re-registered the activity callbacks) are counted and recorded at exit.
//
// Fork: a child inherits a copy of this state but no writer thread; it never
// writes to the parent's stream (checked by pid on every exit path). A child
// that initializes CUDA after exec loads its own instance.
#ifndef GPSCOPE_INJECT_COLLECTOR_H_
#define GPSCOPE_INJECT_COLLECTOR_H_

namespace gpscope::inject {

// Returns 1 (CUDA's "injection succeeded"): gpscope never fails the
// application, whatever went wrong.
int StartCollector();

}  // namespace gpscope::inject

#endif  // GPSCOPE_INJECT_COLLECTOR_H_
