// contained: signals every process it may (kill -1), its parent and pid 1 included; only its own die
#include <signal.h>
#include <unistd.h>
#include <cstdio>
int main() {
    kill(getppid(), SIGKILL);
    kill(1, SIGKILL);
    kill(-1, SIGKILL);
    printf("still here\n");
}
