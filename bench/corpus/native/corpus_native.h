// bench/corpus/native/corpus_native.h: shared by the corpus's CUDA C++
// workloads: error checks that print one line and exit 1, the steady-phase
// clock, a pacer that keeps a few iterations in flight without a
// synchronizing call, and the result line the runner reads:
//
//   CORPUS_RESULT {"workload": "...", "ok": true, "steps": N, "steady_s": S, "step_ms": M, ...}
//
// Usage: `prog [--seconds S]`. Nothing here knows about gpscope.
#ifndef GPSCOPE_BENCH_CORPUS_NATIVE_CORPUS_NATIVE_H_
#define GPSCOPE_BENCH_CORPUS_NATIVE_CORPUS_NATIVE_H_

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace corpus {

inline const char* g_name = "native";

// `s` as the inside of a JSON string (quotes, backslashes and control
// characters escaped).
inline std::string JsonText(const char* s) {
  std::string out;
  for (; *s != '\0'; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

[[noreturn]] inline void Fail(const char* what, const char* detail) {
  fprintf(stderr, "[%s] FAILED: %s: %s\n", g_name, what, detail);
  printf("CORPUS_RESULT {\"workload\": \"%s\", \"ok\": false, \"error\": \"%s: %s\"}\n", g_name,
         JsonText(what).c_str(), JsonText(detail).c_str());
  fflush(stdout);
  exit(1);
}

inline void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Fail(what, cudaGetErrorString(e));
}

// Steady seconds from `--seconds S` (default `fallback`).
inline double Seconds(int argc, char** argv, double fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "--seconds") == 0) {
      char* end = nullptr;
      double s = strtod(argv[i + 1], &end);
      if (end == argv[i + 1] || *end != '\0' || !(s > 0) || s > 3600) {
        Fail("bad --seconds", argv[i + 1]);
      }
      return s;
    }
  }
  return fallback;
}

inline double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Steady {
 public:
  explicit Steady(double seconds, long min_steps = 3)
      : t0_(Now()), end_(t0_ + seconds), min_steps_(min_steps) {}
  bool Running() const { return steps_ < min_steps_ || Now() < end_; }
  void Tick(long n = 1) { steps_ += n; }
  long steps() const { return steps_; }
  // Prints the result line; `extra` is more JSON members (", \"k\": v").
  void Print(const std::string& extra = "") const {
    const double s = Now() - t0_;
    printf("CORPUS_RESULT {\"workload\": \"%s\", \"ok\": true, \"steps\": %ld, \"steady_s\": %.3f, "
           "\"step_ms\": %.4f%s}\n",
           g_name, steps_, s, 1e3 * s / (steps_ > 0 ? steps_ : 1), extra.c_str());
    fflush(stdout);
  }

 private:
  double t0_, end_;
  long min_steps_;
  long steps_ = 0;
};

// Keeps at most `depth` iterations in flight: Tick() records an event after
// the iteration and polls (cudaEventQuery: not a synchronizing call) the
// one `depth` iterations back. This is how a program would bound its
// run-ahead without stalling the GPU.
class Pacer {
 public:
  static constexpr int kMaxDepth = 8;
  explicit Pacer(int depth) : depth_(depth < 1 ? 1 : depth > kMaxDepth ? kMaxDepth : depth) {
    for (int i = 0; i < depth_; ++i) {
      Check(cudaEventCreateWithFlags(&events_[i], cudaEventDisableTiming), "cudaEventCreate");
    }
  }
  ~Pacer() {
    for (int i = 0; i < depth_; ++i) cudaEventDestroy(events_[i]);
  }
  void Tick(cudaStream_t stream = nullptr) {
    cudaEvent_t e = events_[next_ % depth_];
    if (next_ >= depth_) {  // the slot's previous use, `depth` iterations back
      for (;;) {
        const cudaError_t q = cudaEventQuery(e);
        if (q == cudaSuccess) break;
        if (q != cudaErrorNotReady) Check(q, "cudaEventQuery");
        timespec ts{0, 100'000};  // 0.1 ms
        nanosleep(&ts, nullptr);
      }
    }
    Check(cudaEventRecord(e, stream), "cudaEventRecord");
    ++next_;
  }

 private:
  int depth_;
  long next_ = 0;
  cudaEvent_t events_[kMaxDepth] = {};
};

}  // namespace corpus

#define CORPUS_CHECK(expr) ::corpus::Check((expr), #expr)

#endif  // GPSCOPE_BENCH_CORPUS_NATIVE_CORPUS_NATIVE_H_
