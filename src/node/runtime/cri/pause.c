/* The pause image's only program: the first process of every pod sandbox kvol's containerd makes.
 * It holds the sandbox's namespaces, reaps the orphans a shared PID namespace hands it, and exits
 * when told to stop. Built static, so that the image needs nothing else. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void Stop(int sig) {
  (void)sig;
  _exit(0);
}

static void Reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = Stop};
  struct sigaction reap = {.sa_handler = Reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  sigaction(SIGINT, &stop, NULL);
  sigaction(SIGTERM, &stop, NULL);
  sigaction(SIGCHLD, &reap, NULL);
  for (;;) pause();
  return 42;
}
