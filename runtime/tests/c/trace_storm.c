/* The flight recorder under a storm of signals: a timer sends SIGUSR1
 * every few microseconds, and its handler observes too, while the main
 * thread observes in a loop; halfway, an interim report is written with
 * the storm still going; after the loop the timer is stopped and the
 * program crashes.
 *
 * Each observation is a sampled event of its own, as instrumented code
 * makes it (SAMPLER_SPARSITY=1): main's observation k is (branches, site
 * k, slot k & 1); the handler's h-th (counted from 1) is (returns, site
 * h, slot 2), made when cbi_sample says so (not when the handler
 * interrupted cbi_sample itself). Prints how many handler observations
 * were made. */
#define UNIT_BYTE 0x55
#include "unit.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAIN_RECORDS 300000

static volatile sig_atomic_t handled;

static void on_timer(int signal)
{
    (void)signal;
    if (cbi_sample()) {
        handled = handled + 1;
        cbi_traceObserve(&unit_schemes[1], (uint32_t)handled, 2);
    }
}

static void arm(timer_t timer, long nanoseconds)
{
    struct itimerspec every = {{0, nanoseconds}, {0, nanoseconds}};
    timer_settime(timer, 0, &every, NULL);
}

__attribute__((noinline)) void crash_now(volatile int *pointer) { *pointer = 1; }

int main(void)
{
    cbi_sample(); /* the thread's first event: its ring is made here */
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_timer;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &action, NULL);
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = SIGUSR1;
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0)
        return 2;
    arm(timer, 20000);
    for (uint32_t k = 0; k < MAIN_RECORDS; k++) {
        if (k == MAIN_RECORDS / 2)
            cbi_reportNow();
        if (cbi_sample())
            cbi_traceObserve(&unit_schemes[0], k, k & 1);
    }
    arm(timer, 0);
    printf("handled %d\n", (int)handled);
    fflush(stdout);
    crash_now(NULL);
    return 1;
}
