// tools/gpscope/child.cc: see child.h.
#include "tools/gpscope/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace gpscope::launcher {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
volatile sig_atomic_t g_child_pid = 0;
volatile sig_atomic_t g_last_signal = 0;

void Forward(int sig, siginfo_t* info, void*) {
  g_last_signal = sig;
  // The terminal's Ctrl-C / Ctrl-\ reach the whole foreground group, the
  // child included: forwarding them would deliver them twice.
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  const pid_t pid = static_cast<pid_t>(g_child_pid);
  if (pid > 0) kill(pid, sig);
}

void BlockForwarded(bool block) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwarded) sigaddset(&set, sig);
  sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
}

}  // namespace

int ExitCodeFromWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

bool ChildProcess::Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         std::string* error, int* exec_exit_code) {
  *exec_exit_code = 0;
  if (argv.empty()) {
    *error = "no command given";
    *exec_exit_code = 127;
    return false;
  }
  // Everything the child needs is built before fork(): after it, only
  // async-signal-safe calls.
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    *error = std::string("cannot create a pipe: ") + strerror(errno);
    *exec_exit_code = 125;
    return false;
  }
  // The forwarded signals wait (blocked) from here until ForwardSignalsTo
  // installs the handlers: a SIGTERM that comes once the command runs but
  // before that would otherwise kill the launcher and orphan the command.
  BlockForwarded(true);
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("cannot fork: ") + strerror(errno);
    *exec_exit_code = 125;
    close(report[0]);
    close(report[1]);
    BlockForwarded(false);
    return false;
  }
  if (pid == 0) {
    close(report[0]);
    for (int sig : kForwarded) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(args[0], args.data(), envp.data());
    const int e = errno;
    (void)!write(report[1], &e, sizeof(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  close(report[1]);
  int child_errno = 0;
  ssize_t n;
  while ((n = read(report[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR) {
  }
  close(report[0]);
  pid_ = pid;
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    Wait();
    BlockForwarded(false);
    *error = "cannot run '" + argv[0] + "': " + strerror(child_errno);
    *exec_exit_code = child_errno == ENOENT ? 127 : 126;
    return false;
  }
  return true;
}

bool ChildProcess::TryWait(int* exit_code) {
  if (!exited_ && pid_ > 0) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      exit_code_ = ExitCodeFromWaitStatus(status);
    } else if (r < 0 && errno == ECHILD) {
      exited_ = true;
      exit_code_ = 1;
    }
  }
  if (exited_) *exit_code = exit_code_;
  return exited_;
}

int ChildProcess::Wait() {
  int code = 0;
  while (!TryWait(&code)) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, 0);
    if (r == pid_) {
      exited_ = true;
      exit_code_ = ExitCodeFromWaitStatus(status);
    } else if (r < 0 && errno != EINTR) {
      exited_ = true;
      exit_code_ = 1;
    }
  }
  return exit_code_;
}

void ForwardSignalsTo(pid_t pid) {
  g_child_pid = pid;
  g_last_signal = 0;
  struct sigaction sa{};
  sa.sa_sigaction = &Forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kForwarded) sigaction(sig, &sa, nullptr);
  BlockForwarded(false);  // one that came since Spawn() is forwarded now
}

void StopForwardingSignals() {
  for (int sig : kForwarded) signal(sig, SIG_DFL);
  g_child_pid = 0;
}

int LastForwardedSignal() { return g_last_signal; }

}  // namespace gpscope::launcher
