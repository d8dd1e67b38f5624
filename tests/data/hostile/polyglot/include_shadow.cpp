// contained: the compiler runs in the sandbox, where the host's secrets are not there to include
#include "/etc/shadow"
int main() {}
