/* The program of the crash tests: `prog lib` crashes in the shared
 * library, `prog inlined` in a function inlined there, `prog` in the
 * program itself. One compilation unit is registered the way sampler-cc's
 * code does it, so that the runtime starts, installs its signal handlers
 * and writes the crash report. */
#include <sampler.h>
#include <stdint.h>
#include <string.h>

static const unsigned char signature[16] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
static uint64_t entries[1][1];
static struct cbi_scheme_sites schemes[] = {
    {"function-entries", CBI_COUNTERS, 1, 1, 0, entries, 0, 0},
};
static struct cbi_unit unit = {CBI_ABI_VERSION, 1, signature, schemes, 0};
__attribute__((constructor)) static void unit_register(void) { cbi_registerUnit(&unit); }
__attribute__((destructor)) static void unit_unregister(void) { cbi_unregisterUnit(&unit); }

int lib_helper(int *p, int inlined);

__attribute__((noinline)) static int crash_here(int *p)
{
    *p = 7; /* at: crash_here */
    return 0;
}

__attribute__((noinline)) static int helper(int *p, int inlined)
{
    int result = lib_helper(p, inlined); /* at: helper calls lib_helper */
    return result + 1;
}

int main(int argc, char **argv)
{
    int *volatile p = NULL;
    int result;
    if (argc > 1)
        result = helper(p, strcmp(argv[1], "inlined") == 0); /* at: main calls helper */
    else
        result = crash_here(p); /* at: main calls crash_here */
    return result;
}
