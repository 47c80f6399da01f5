/* The flight recorder (SAMPLER_TRACE): threads observe a known sequence
 * through cbi_traceObserve, taking turns, then the main thread crashes
 * (argv[1] "crash") or asks for an interim report ("interim").
 *
 * The sequence: thread "exited" makes EXITED_RECORDS observations and
 * ends; then WORKERS threads make WORKER_RECORDS each, round robin (worker
 * w's k-th is the (k * WORKERS + w)-th of the round); then main makes
 * MAIN_RECORDS. Observation k of any thread is pattern[k % 5]. Each
 * thread prints its tid first.
 *
 * argv[1] "many-exited": instead, MANY threads one after the other each
 * observe (returns, site t, slot 0) twice and end; then main crashes. */
#define UNIT_BYTE 0x44
#include "unit.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WORKERS 3
#define EXITED_RECORDS 3
#define WORKER_RECORDS 12
#define MAIN_RECORDS 5
#define MANY 40

static const struct { int scheme; unsigned site, slot; } pattern[5] = {
    {0, 0, 0}, {0, 1, 1}, {1, 0, 2}, {2, 0, 0}, {0, 0, 1},
};

/* The address of pattern entry p's value: what sampler-cc's count
 * helper and bounds sites pass on. */
static const void *value_of(int scheme, unsigned site, unsigned slot)
{
    switch (scheme) {
    case 0: return &branches[site][slot];
    case 1: return &returns[site][slot];
    default: return &bounds[site][slot];
    }
}

/* One sampled event with one observation, as instrumented code makes it
 * (SAMPLER_SPARSITY=1: every event is sampled): odd observations name
 * their table, site and slot, even ones the value's address, which the
 * trace must resolve to the same. */
static void observe(int k)
{
    const __typeof__(pattern[0]) *p = &pattern[k % 5];
    if (cbi_sample()) {
        if (k % 2)
            cbi_traceObserve(&unit_schemes[p->scheme], p->site, p->slot);
        else
            cbi_traceObserveValue(value_of(p->scheme, p->site, p->slot));
    }
}

static void say_tid(const char *who, int index)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    printf("%s %d %ld\n", who, index, (long)syscall(SYS_gettid));
    fflush(stdout);
    pthread_mutex_unlock(&lock);
}

static int turn; /* the next observation of the round, atomically */

static void *exited_body(void *argument)
{
    (void)argument;
    cbi_sample(); /* the thread's first event: its ring is made here */
    say_tid("exited", 0);
    for (int k = 0; k < EXITED_RECORDS; k++)
        observe(k);
    return NULL;
}

static void *worker_body(void *argument)
{
    int w = (int)(long)argument;
    cbi_sample();
    say_tid("worker", w);
    for (int k = 0; k < WORKER_RECORDS; k++) {
        while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != k * WORKERS + w)
            sched_yield();
        observe(k);
        __atomic_store_n(&turn, k * WORKERS + w + 1, __ATOMIC_RELEASE);
    }
    for (;;)
        pause(); /* live until the process ends */
    return NULL;
}

static void *short_body(void *argument)
{
    unsigned t = (unsigned)(long)argument;
    cbi_sample();
    say_tid("short", (int)t);
    if (cbi_sample())
        cbi_traceObserve(&unit_schemes[1], t, 0);
    if (cbi_sample())
        cbi_traceObserve(&unit_schemes[1], t, 0);
    return NULL;
}

__attribute__((noinline)) void crash_now(volatile int *pointer) { *pointer = 1; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "crash";
    cbi_sample();
    say_tid("main", 0);
    if (strcmp(mode, "many-exited") == 0) {
        for (long t = 0; t < MANY; t++) {
            pthread_t thread;
            pthread_create(&thread, NULL, short_body, (void *)t);
            pthread_join(thread, NULL);
        }
        crash_now(NULL);
    }
    pthread_t exited, workers[WORKERS];
    pthread_create(&exited, NULL, exited_body, NULL);
    pthread_join(exited, NULL);
    for (long w = 0; w < WORKERS; w++)
        pthread_create(&workers[w], NULL, worker_body, (void *)w);
    while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != WORKERS * WORKER_RECORDS)
        sched_yield();
    for (int k = 0; k < MAIN_RECORDS; k++)
        observe(k);
    if (strcmp(mode, "interim") == 0) {
        cbi_reportNow();
        return 0;
    }
    crash_now(NULL);
    return 1;
}
