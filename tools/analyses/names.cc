// tools/analyses/names.cc: see names.h.
#include "tools/analyses/names.h"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <memory>

namespace gpscope::analyses {
namespace {

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Index of the '(' that opens the top-level parameter list, or npos.
size_t ParameterListStart(std::string_view s) {
  if (s.empty() || s.back() != ')') return std::string_view::npos;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == ')') ++depth;
    if (c == '(' && --depth == 0) {
      // "(anonymous namespace)" or a lambda's "(float)" is not a parameter
      // list when it is followed by "::" or "#"; here we are at the end.
      return i;
    }
  }
  return std::string_view::npos;
}

// Drops a leading return type ("void ") outside template brackets.
std::string_view DropReturnType(std::string_view s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ' ') return s.substr(i + 1);
    if (depth == 0 && c == ':') break;  // a qualified name starts: no return type
  }
  return s;
}

}  // namespace

std::string Demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  int status = 0;
  const std::string mangled(name);
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || out == nullptr) return mangled;
  return std::string(out.get());
}

std::string CompactKernelName(std::string_view name) {
  const std::string demangled = Demangle(name);
  std::string_view s = demangled;
  const size_t params = ParameterListStart(s);
  if (params != std::string_view::npos && params > 0) s = s.substr(0, params);
  s = DropReturnType(s);
  // Remove "ident::" and "(anonymous namespace)::" qualifiers everywhere.
  std::string out;
  out.reserve(s.size());
  constexpr std::string_view kAnon = "(anonymous namespace)::";
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, kAnon.size(), kAnon) == 0) {
      i += kAnon.size();
      continue;
    }
    if (IsIdentChar(s[i]) && (i == 0 || !IsIdentChar(s[i - 1]))) {
      size_t j = i;
      while (j < s.size() && IsIdentChar(s[j])) ++j;
      if (s.compare(j, 2, "::") == 0) {
        i = j + 2;
        continue;
      }
      out.append(s.substr(i, j - i));
      i = j;
      continue;
    }
    out.push_back(s[i]);
    ++i;
  }
  return out.empty() ? std::string(name) : out;
}

std::string KernelBaseName(std::string_view name) {
  const std::string compact = CompactKernelName(name);
  size_t end = 0;
  while (end < compact.size() && IsIdentChar(compact[end])) ++end;
  return end == 0 ? compact : compact.substr(0, end);
}

std::string Truncate(std::string_view name, size_t width) {
  if (name.size() <= width) return std::string(name);
  // Cut on a UTF-8 character boundary: never half a character.
  auto cut = [&](size_t n) {
    while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
    return std::string(name.substr(0, n));
  };
  if (width <= 3) return cut(width);
  return cut(width - 3) + "...";
}

std::string ShellQuote(std::string_view arg) {
  const bool plain = !arg.empty() && arg.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-./=:,+@%") == std::string_view::npos;
  if (plain) return std::string(arg);
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out += "'";
  return out;
}

std::string NcuCommand(std::string_view kernel_name, const std::vector<std::string>& cmdline) {
  const std::string base = KernelBaseName(kernel_name);
  std::string regex;
  for (char c : base) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) regex.push_back('\\');
    regex.push_back(c);
  }
  std::string out = "ncu --kernel-name regex:" + ShellQuote(regex) +
                    " --launch-count 3 --set full -o gpscope_" + Truncate(base, 40);
  if (cmdline.empty()) return out + " YOUR_PROGRAM";
  for (const std::string& arg : cmdline) out += " " + ShellQuote(arg);
  return out;
}

std::string LibraryOf(std::string_view kernel_name, bool driver_launched) {
  const std::string demangled = Demangle(kernel_name);
  std::string lower;
  lower.reserve(demangled.size());
  for (char c : demangled) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  auto has = [&lower](std::string_view part) { return lower.find(part) != std::string::npos; };
  auto starts = [&lower](std::string_view part) { return lower.rfind(part, 0) == 0; };
  if (has("nccl")) return "NCCL";
  if (has("cudnn") || has("xmma_fprop") || has("xmma_dgrad") || has("xmma_wgrad") ||
      has("implicit_convolve") || has("precomputed_convolve") || has("cask_")) {
    return "cuDNN";
  }
  if (has("flash") || has("fmha")) return "flash attention";
  if (starts("nvjet_") || has("xmma_gemm") || has("cublas") || has("gemv") ||
      has("splitkreduce") || has("gemmsn") || has("gemmk1") ||
      ((starts("ampere_") || starts("volta_") || starts("turing_") || starts("maxwell_") ||
        starts("hopper_")) && has("gemm"))) {
    return "cuBLAS";
  }
  if (has("cutlass")) return "CUTLASS";
  if (has("regular_fft") || has("vector_fft") || has("_fft_") || (has("radix") && has("fft"))) {
    return "cuFFT";
  }
  if (has("curand") || has("gen_sequenced") || has("generate_seed_pseudo")) return "cuRAND";
  if (has("cub::")) return "CUB";
  if (has("thrust::")) return "Thrust";
  if (starts("triton_")) return "Triton";
  return driver_launched ? "generated" : "";
}

}  // namespace gpscope::analyses
