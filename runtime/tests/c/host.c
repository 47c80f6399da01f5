/* A program that is not instrumented and does not link the runtime:
 * `host PLUGIN N` loads PLUGIN (which links the shared runtime, so the
 * runtime is loaded by dlopen too), runs plugin_sample(N) and prints how
 * many of the N events were sampled. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: host PLUGIN N\n");
        return 2;
    }
    void *plugin = dlopen(argv[1], RTLD_NOW);
    if (!plugin) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    long (*sample)(long) = (long (*)(long))dlsym(plugin, "plugin_sample");
    if (!sample) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    printf("%ld\n", sample(atol(argv[2])));
    return 0;
}
