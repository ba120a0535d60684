// tools/gpscope/child.h: runs the traced command as a child process.
//
// Spawn() fork()s and execvp()s the command with the given environment,
// with SIGINT/SIGTERM/SIGHUP/SIGQUIT blocked in the launcher until
// ForwardSignalsTo() (so none is lost, or kills the launcher, between the
// exec and the handlers; the child starts with them unblocked). An
// exec failure comes back to the parent through a close-on-exec pipe (so it
// is reported by the launcher, exit code 127 not found / 126 not
// executable, as a shell would). While the child runs, SIGINT, SIGTERM,
// SIGHUP and SIGQUIT sent to the launcher are forwarded to it; a signal the
// terminal sent to the whole foreground process group (si_code SI_KERNEL)
// is not forwarded again, the child already has it. The child's exit status
// becomes the launcher's: its exit code, or 128 + the signal that killed it.
//
//   ChildProcess child;
//   if (!child.Spawn({"python3", "train.py"}, env, &error)) ...
//   ForwardSignalsTo(child.pid());
//   while (!child.TryWait(&code)) { ...progress...; common::SleepMs(200); }
//   StopForwardingSignals();
//
// Thread model: main thread only; the forwarding handler only calls kill().
#ifndef GPSCOPE_TOOLS_GPSCOPE_CHILD_H_
#define GPSCOPE_TOOLS_GPSCOPE_CHILD_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpscope::launcher {

class ChildProcess {
 public:
  // argv[0] is looked up in PATH; env entries are "NAME=value".
  bool Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
             std::string* error, int* exec_exit_code);
  pid_t pid() const { return pid_; }
  // True once the child has exited; *exit_code as described above.
  bool TryWait(int* exit_code);
  int Wait();

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = 0;
};

// waitpid status -> shell-style exit code (128 + signal for a signal death).
int ExitCodeFromWaitStatus(int status);

void ForwardSignalsTo(pid_t pid);
void StopForwardingSignals();
// The last signal the launcher received while forwarding (0: none).
int LastForwardedSignal();

}  // namespace gpscope::launcher

#endif  // GPSCOPE_TOOLS_GPSCOPE_CHILD_H_
