/*
 * berth pause: the process that keeps a pod's namespaces alive while its
 * app containers come and go.
 *
 * It is PID 1 of the pod's (possibly shared) PID namespace, which gives it
 * two duties beyond sleeping:
 *  - The kernel drops signals sent to PID 1 that have no handler, so without
 *    explicit handlers `docker stop` (SIGTERM) would be ignored and the pod
 *    would wait out the full grace period before SIGKILL.
 *  - Orphans in the namespace are re-parented to PID 1; if nobody waits for
 *    them they stay zombies and fill the PID table.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { (void)sig; _exit(0); }

static void on_child(int sig) {
  int saved_errno = errno; /* a handler must not clobber errno of interrupted code */
  (void)sig;
  /* Signals do not queue: one SIGCHLD may stand for many exits, so drain all. */
  while (waitpid(-1, NULL, WNOHANG) > 0) {}
  errno = saved_errno;
}

int main(void) {
  struct sigaction sa = {0};
  sa.sa_handler = on_stop;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP | SA_RESTART; /* stopped children are not our business */
  sigaction(SIGCHLD, &sa, NULL);
  for (;;) pause();
}
