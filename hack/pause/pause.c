/* The pod sandbox ("pause") process: holds the pod's namespaces, reaps zombies, exits on
 * SIGINT/SIGTERM. Built statically by hack/images.sh into registry.k8s.io/pause:3.10, the name
 * containerd's sandbox_image expects, because no registry is reachable. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { (void)sig; _exit(0); }
static void on_child(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
  struct sigaction sa = {0};
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  for (;;) pause();
}
