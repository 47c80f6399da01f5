/* The one thing stable Rust cannot define: a thread-local variable that
 * instrumented C code reads and writes directly (see sampler.h). */
#include "../include/sampler.h"

/* 0 until the thread meets its first site; see cbi_sample. */
__thread int cbi_countdown;

/* The Rust side of cbi_sample; hidden, so it never leaks into the
 * program's namespace from the shared library. */
int cbi__sample_slow(int *countdown) __attribute__((visibility("hidden")));

int cbi_sample(void)
{
    return cbi__sample_slow(&cbi_countdown);
}
