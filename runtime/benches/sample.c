/* The cost of cbi_sample() through the exported C entry point, as an
 * instrumented program pays it, built by benches/draws.rs against the
 * packaged runtime (static archive or shared library).
 *
 *   sample CALLS EVENTS
 *
 * prints two lines, each the median of 7 timed runs after a warm-up:
 *   "call NS"   ns per direct call of cbi_sample() (every call is a sample:
 *               the cost of one sampled event beyond its site's decrement)
 *   "event NS"  ns per event of a loop of sites, as sampler-cc compiles
 *               them, each sampled event counted
 * The sparsity and seed come from SAMPLER_SPARSITY and SAMPLER_SEED. */
#include <sampler.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static volatile unsigned long sink;

static unsigned long calls(long n)
{
    unsigned long sampled = 0;
    for (long i = 0; i < n; i++)
        sampled += (unsigned long)cbi_sample();
    return sampled;
}

static unsigned long events(long n)
{
    unsigned long sampled = 0;
    for (long i = 0; i < n; i++)
        if (CBI_EVENT_SAMPLED())
            __atomic_fetch_add(&sampled, 1, __ATOMIC_RELAXED);
    return sampled;
}

static double median_ns(unsigned long (*run)(long), long n)
{
    double runs[7];
    sink = run(n / 10); /* warm-up, and the thread's first event */
    for (int i = 0; i < 7; i++) {
        double start = now_ns();
        sink = run(n);
        runs[i] = (now_ns() - start) / (double)n;
    }
    qsort(runs, 7, sizeof runs[0], compare);
    return runs[3];
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sample CALLS EVENTS\n");
        return 2;
    }
    printf("call %.3f\n", median_ns(calls, atol(argv[1])));
    printf("event %.3f\n", median_ns(events, atol(argv[2])));
    return 0;
}
