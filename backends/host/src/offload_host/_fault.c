/* _fault.c - faults of host kernels: a SIGSEGV, SIGBUS, SIGFPE or SIGILL raised by kernel code
 * ends that kernel's share of the launch instead of the process, as an illegal address ends a
 * GPU kernel (the pool then marks the device faulted; _native.c), and its message.
 *
 * The guard: a thread about to run kernel code makes a fault_guard_t on its stack, FAULT_SETJMPs
 * it (GCC's __builtin_setjmp, or sigsetjmp without the signal mask where shadow stacks need
 * glibc's: no system call per launch either way) and publishes it in the thread-local
 * fault_tls_guard only while kernel code runs (run_range). The handler, on the
 * thread's alternate signal stack (a stack overflow must be survivable), checks that word: set,
 * and the signal is the kernel's own (raised by the CPU, or by the thread itself), it records the
 * signal, its code and address and jumps back; the jump leaves the signals blocked,
 * which fault_after_jump() undoes. Anything else goes to the handler that was installed before
 * (Python's faulthandler, another library's, or the default action: the process dies as it would
 * have). The handler only reads and writes its own thread's guard and the saved sigactions: it is
 * async-signal-safe.
 *
 * What cannot be recovered: a wild write that hit other memory before faulting (or instead of
 * faulting), and a kernel that faulted holding a lock (the lock stays held). See DESIGN.md.
 */
#define _GNU_SOURCE
#include "_native.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define NSIGNALS (sizeof fault_signals / sizeof fault_signals[0])

/* initial-exec: one %fs-relative load in the handler (never __tls_get_addr, which may allocate) */
__thread fault_guard_t *fault_tls_guard __attribute__((tls_model("initial-exec")));
__thread int fault_tls_ready __attribute__((tls_model("initial-exec")));

static struct sigaction previous[NSIGNALS];
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;

static int signal_index(int sig) {
  for (size_t i = 0; i < NSIGNALS; ++i)
    if (fault_signals[i] == sig) return (int)i;
  return -1;
}

/* Whether the signal is the running kernel's own: raised by the CPU for an instruction of this
 * thread (si_code > 0), or by the thread itself (raise(), or a handler installed after ours that
 * re-raises it: tgkill from this process). Not a kill() from elsewhere. */
static int own_signal(const siginfo_t *info) {
  if (info->si_code > 0) return 1;
  return info->si_code == SI_TKILL && info->si_pid == getpid();
}

/* Whether the faulting access was a write: the page-fault error code's bit 1 (x86-64 only). */
static int fault_write(const void *context) {
#if defined(__x86_64__) && defined(REG_ERR)
  const ucontext_t *uc = context;
  return (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
  (void)context;
  return -1;
#endif
}

static void chain(int sig, siginfo_t *info, void *context) {
  int i = signal_index(sig);
  const struct sigaction *prev = i >= 0 ? &previous[i] : NULL;
  if (prev != NULL && (prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction != NULL) {
    prev->sa_sigaction(sig, info, context);
    return;
  }
  if (prev != NULL && !(prev->sa_flags & SA_SIGINFO) && prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
    prev->sa_handler(sig);
    return;
  }
  if (prev != NULL && prev->sa_handler == SIG_IGN && info->si_code <= 0) return; /* ignored, as before */
  /* The default action: restore it. A fault's instruction runs again and ends the process as it
   * would have; a signal sent to us is sent again (it stays blocked until this handler returns). */
  signal(sig, SIG_DFL);
  if (info->si_code <= 0) raise(sig);
}

static void fault_handler(int sig, siginfo_t *info, void *context) {
  fault_guard_t *guard = fault_tls_guard;
  if (guard != NULL && own_signal(info)) {
    fault_tls_guard = NULL;
    guard->fault.sig = sig;
    guard->fault.code = info->si_code;
    guard->fault.addr = info->si_code > 0 ? info->si_addr : NULL;
    guard->fault.write = info->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS) ? fault_write(context) : -1;
    FAULT_LONGJMP(guard->env);
  }
  chain(sig, info, context);
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fault_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NSIGNALS; ++i)
    if (sigaction(fault_signals[i], &sa, &previous[i]) != 0) install_error = errno;
}

int fault_install(void) {
  pthread_once(&install_once, install);
  return install_error ? -1 : 0;
}

/* ---- per thread: an alternate signal stack, and the fault signals unblocked ------------------ */

#define ALTSTACK_SIZE (64 * 1024)
static pthread_key_t altstack_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* At the exit of a thread that got our stack: disable it (if still ours) and free it. */
static void altstack_release(void *stack) {
  stack_t cur;
  if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == stack) {
    stack_t off = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
    sigaltstack(&off, NULL);
  }
  free(stack);
}

static void make_key(void) { pthread_key_create(&altstack_key, altstack_release); }

void fault_thread_setup(void) {
  fault_tls_ready = 1;
  sigset_t faults;
  sigemptyset(&faults);
  for (size_t i = 0; i < NSIGNALS; ++i) sigaddset(&faults, fault_signals[i]);
  /* A fault signal that is blocked kills the process whatever the handler: unblock them (the
   * pool's threads start with every signal blocked). */
  pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
  stack_t cur;
  if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) return; /* one already (faulthandler's) */
  pthread_once(&key_once, make_key);
  void *stack = malloc(ALTSTACK_SIZE);
  if (stack == NULL) return; /* a fault is still caught; only a stack overflow is not */
  stack_t ss = {.ss_sp = stack, .ss_flags = 0, .ss_size = ALTSTACK_SIZE};
  if (sigaltstack(&ss, NULL) != 0 || pthread_setspecific(altstack_key, stack) != 0) {
    stack_t off = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
    sigaltstack(&off, NULL);
    free(stack);
  }
}

void fault_after_jump(void) {
  sigset_t faults;
  sigemptyset(&faults);
  for (size_t i = 0; i < NSIGNALS; ++i) sigaddset(&faults, fault_signals[i]);
  pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
}

/* ---- the message ------------------------------------------------------------------------------ */

static const char *signal_name(int sig) {
  switch (sig) {
  case SIGSEGV: return "SIGSEGV";
  case SIGBUS: return "SIGBUS";
  case SIGFPE: return "SIGFPE";
  case SIGILL: return "SIGILL";
  default: return "signal";
  }
}

static const char *code_text(int sig, int code) {
  if (code == SI_TKILL || code == SI_USER) return "raised by the kernel's thread";
  if (code == SI_KERNEL) return "general protection fault (a non-canonical address?)";
  switch (sig) {
  case SIGSEGV:
    return code == SEGV_MAPERR ? "address not mapped" : code == SEGV_ACCERR ? "invalid permissions for mapped object" : "";
  case SIGBUS: return code == BUS_ADRALN ? "invalid address alignment" : code == BUS_ADRERR ? "nonexistent physical address" : "";
  case SIGFPE:
    return code == FPE_INTDIV ? "integer divide by zero" : code == FPE_INTOVF ? "integer overflow"
                                                       : code == FPE_FLTDIV ? "floating-point divide by zero" : "";
  case SIGILL: return code == ILL_ILLOPN || code == ILL_ILLOPC ? "illegal instruction (a trap?)" : "";
  default: return "";
  }
}

void fault_describe(const kernel_fault_t *f, char *out, size_t n) {
  Dl_info info;
  char name[160] = "";
  if (dladdr((void *)(uintptr_t)f->kernel, &info) != 0 && info.dli_sname != NULL &&
      info.dli_saddr == (void *)(uintptr_t)f->kernel)
    snprintf(name, sizeof name, "'%s'", info.dli_sname);
  else
    snprintf(name, sizeof name, "at %#zx", (size_t)(uintptr_t)f->kernel);
  const char *access = f->write == 1 ? "writing " : f->write == 0 ? "reading " : "";
  char where[96] = "";
  if (f->code > 0 && f->sig != SIGFPE && f->sig != SIGILL)
    snprintf(where, sizeof where, " %saddress %#zx", access, (size_t)(uintptr_t)f->addr);
  else if (f->code > 0 && dladdr(f->addr, &info) != 0 && info.dli_sname != NULL)
    snprintf(where, sizeof where, " at instruction %#zx (%.40s+%#zx)", (size_t)(uintptr_t)f->addr, info.dli_sname,
             (size_t)((uintptr_t)f->addr - (uintptr_t)info.dli_saddr));
  else if (f->code > 0)
    snprintf(where, sizeof where, " at instruction %#zx", (size_t)(uintptr_t)f->addr);
  char allocation[160] = "";
  if (f->code > 0 && (f->sig == SIGSEGV || f->sig == SIGBUS)) checked_describe(f->addr, allocation, sizeof allocation);
  const char *text = code_text(f->sig, f->code);
  snprintf(out, n,
           "host kernel %s faulted: %s%s%s%s%s%s; the host device is faulted (every later call on it fails until "
           "olShutDown), as a GPU context is after an illegal address",
           name, signal_name(f->sig), *text ? " (" : "", text, *text ? ")" : "", where, allocation);
}
