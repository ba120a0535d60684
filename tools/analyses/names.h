// tools/analyses/names.h: kernel names for people and for follow-up tools.
//
// Kernel names are recorded mangled. Demangle() gives the C++ name
// (abi::__cxa_demangle); CompactKernelName() a short form for 100-column
// reports (no return type, no parameter list, no namespace qualifiers);
// KernelBaseName() the bare function name that Nsight Compute's
// `--kernel-name` matches; NcuCommand() the exact command line to profile a
// few launches of a kernel.
//
//   Demangle("_Z6squarePfi")            -> "square(float*, int)"
//   CompactKernelName("_ZN2at6native...") -> "vectorized_elementwise_kernel<4, ...>"
//   KernelBaseName("_Z6squarePfi")       -> "square"
//
// Thread model: pure functions.
#ifndef GPSCOPE_TOOLS_ANALYSES_NAMES_H_
#define GPSCOPE_TOOLS_ANALYSES_NAMES_H_

#include <string>
#include <string_view>
#include <vector>

namespace gpscope::analyses {

// The demangled name, or `name` itself when it is not a mangled C++ name.
std::string Demangle(std::string_view name);
// Demangled, without return type, parameter list or namespace qualifiers.
std::string CompactKernelName(std::string_view name);
// The function's own name: no namespaces, template arguments or parameters.
std::string KernelBaseName(std::string_view name);
// `name` cut to `width` characters, ending in "..." when cut.
std::string Truncate(std::string_view name, size_t width);
// Quotes `arg` for a POSIX shell when it needs it.
std::string ShellQuote(std::string_view arg);
// "ncu --kernel-name regex:'<base name>' --launch-count 3 --set full -o gpscope_<base> CMD..."
std::string NcuCommand(std::string_view kernel_name, const std::vector<std::string>& cmdline);

// Which library a kernel belongs to, from its (mangled or plain) name:
// "cuBLAS" (nvjet_*, sm*_xmma_gemm*, gemv*, cublas*, splitKreduce,
// ampere_/volta_/turing_ GEMMs), "cuDNN" (cudnn*, xmma fprop/dgrad/wgrad
// convolutions, implicit/precomputed convolve), "CUTLASS", "cuFFT"
// (regular_fft, vector_fft...), "cuRAND", "NCCL", "flash attention"
// (flash*, fmha*), "CUB", "Thrust", "Triton" (TorchInductor's triton_*);
// else, when `driver_launched` (mostly launched through cuLaunchKernel:
// code built at run time by Triton, XLA, CuPy, Numba or NVRTC), "generated";
// else "" (the program's own CUDA code). Library and generated kernels
// choose their own registers, tiles and launch bounds: advice about them is
// about the call (shapes, dtype, batching) or the generator's options, never
// __launch_bounds__.
std::string LibraryOf(std::string_view kernel_name, bool driver_launched);

}  // namespace gpscope::analyses

#endif  // GPSCOPE_TOOLS_ANALYSES_NAMES_H_
