// tests/inject/fake_python314.cc: a library that looks like CPython 3.14 to
// the collector's interpreter detection (dlsym(RTLD_DEFAULT, "Py_Version")),
// loaded RTLD_GLOBAL by collector_stacks_test's child: an unsupported
// version must give one info line, a capability notice, and native stacks.
extern "C" __attribute__((visibility("default"))) const unsigned long Py_Version = 0x030e00f0;
