/* tests/install/old_glibc_host.c: the "CUDA program" of the old-glibc load
 * test (tests/install/check_old_glibc.sh). It does what the CUDA driver does
 * with CUDA_INJECTION64_PATH: dlopen the collector and call its
 * InitializeInjection, then, when CUPTI is the stand-in
 * (tests/inject/fake_cupti.cc, which the collector loaded from
 * GPSCOPE_CUPTI_PATH), runs the stand-in's "device" workload and waits for
 * it, and exits 0 (the collector finishes its trace at exit).
 *
 *   old_glibc_host COLLECTOR [FAKE_CUPTI]
 *
 * Prints "init=N" (InitializeInjection's result) and, with FAKE_CUPTI,
 * "workload=done". Exit status: 0 ok; 10 the collector did not load (dlerror
 * on stderr), 11 it has no InitializeInjection, 12 the stand-in's workload
 * did not run or finish.
 *
 * C, built with the old root's gcc (no C++ runtime): what it needs of glibc
 * is what any program on that system has. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s COLLECTOR [FAKE_CUPTI]\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "old_glibc_host: dlopen %s: %s\n", argv[1], dlerror());
    return 10;
  }
  int (*init)(void) = (int (*)(void))dlsym(lib, "InitializeInjection");
  if (init == NULL) {
    fprintf(stderr, "old_glibc_host: %s has no InitializeInjection\n", argv[1]);
    return 11;
  }
  printf("init=%d\n", init());
  fflush(stdout);
  if (argc == 3) {
    /* The stand-in only if the collector loaded it (RTLD_NOLOAD). */
    void* fake = dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD);
    int (*start)(void) = fake ? (int (*)(void))dlsym(fake, "fake_cupti_start") : NULL;
    int (*wait_done)(int) = fake ? (int (*)(int))dlsym(fake, "fake_cupti_wait_done") : NULL;
    if (start == NULL || wait_done == NULL) {
      fprintf(stderr, "old_glibc_host: the collector did not load the stand-in CUPTI %s\n", argv[2]);
      return 12;
    }
    if (start() != 0 || wait_done(10000) != 1) {
      fprintf(stderr, "old_glibc_host: the stand-in's workload did not finish in 10 s\n");
      return 12;
    }
    printf("workload=done\n");
  }
  return 0;
}
