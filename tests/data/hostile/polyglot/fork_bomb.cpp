// contained: forks until the process limit says no; the run ends, nothing is left behind
#include <unistd.h>
#include <cstdio>
int main() {
    for (int i = 0; i < 100000; i++) fork();
    printf("done\n");
}
