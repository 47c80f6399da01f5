/* The test program: argv[1] chooses what it does. */
#define UNIT_BYTE 0x11
#include "unit.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void observe(int64_t value)
{
    if (value < bounds[0][0]) bounds[0][0] = value;
    if (value > bounds[0][1]) bounds[0][1] = value;
}

/* Known counts: branches site 0 false 1 true 2, site 1 true 4; returns
 * site 0 zero 3 positive 1; bounds -7..40; timestamps of site 0 1 and 3. */
static void count_known_events(void)
{
    branches[0][0] += 1;
    branches[0][1] += 2;
    branches[1][1] += 4;
    returns[0][1] += 3;
    returns[0][2] += 1;
    observe(-7);
    observe(40);
    branches_first[0] = cbi_nextTimestamp();
    cbi_nextTimestamp();
    branches_last[0] = cbi_nextTimestamp();
}

__attribute__((noinline)) void crash_segv(volatile int *pointer) { *pointer = 1; }
__attribute__((noinline)) void wait_for_watchdog(void) { kill(getpid(), SIGTERM); pause(); }
static volatile int stop_recursing; /* never set: the stack overflows */

/* Called through a pointer the compiler cannot see through, so that the
 * call is not the function's last instruction and its return address lies
 * inside it. (Offline symbolizers subtract 1 from return addresses for the
 * usual noreturn case; this test reads names, not addresses.) */
static void (*volatile abort_function)(void) = abort;
__attribute__((noinline)) void crash_abort(void)
{
    abort_function();
    puts("not reached");
}
__attribute__((noinline)) int recurse(volatile char *previous)
{
    volatile char frame[512];
    frame[0] = previous ? previous[0] + 1 : 0;
    if (stop_recursing)
        return frame[0];
    return recurse(frame) + frame[1];
}

static void *thread_body(void *argument)
{
    (void)argument;
    for (int i = 0; i < 1000000; i++) {
        ATOMIC_BUMP(returns[0][0]);
        SAMPLED(ATOMIC_BUMP(branches[1][0]));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "exit";
    count_known_events();
    if (strcmp(mode, "exit") == 0) {
        for (int i = 0; i < 10; i++)
            SAMPLED(branches[1][0]++);
        const char *names[] = {"SAMPLER_FILE", "SAMPLER_REPORT_FD", "SAMPLER_SPARSITY", "SAMPLER_SEED"};
        for (int i = 0; i < 4; i++)
            printf("%s=%s\n", names[i], getenv(names[i]) ? getenv(names[i]) : "(unset)");
        return 0;
    }
    if (strcmp(mode, "segv") == 0) crash_segv(NULL);
    if (strcmp(mode, "abort") == 0) crash_abort();
    if (strcmp(mode, "overflow") == 0) return recurse(NULL);
    if (strcmp(mode, "term") == 0) wait_for_watchdog();
    if (strcmp(mode, "fork") == 0) {
        pid_t child = fork();
        if (child == 0) {
            returns[0][2] += 100;
            exit(0);
        }
        int status;
        waitpid(child, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
    }
    if (strcmp(mode, "threads") == 0) {
        pthread_t threads[8];
        for (int i = 0; i < 8; i++)
            pthread_create(&threads[i], NULL, thread_body, NULL);
        for (int i = 0; i < 8; i++)
            pthread_join(threads[i], NULL);
        return 0;
    }
    if (strcmp(mode, "interim") == 0) {
        cbi_reportNow();
        returns[0][0] += 5;
        return 0;
    }
    if (strcmp(mode, "plugin") == 0 && argc > 2) {
        for (int load = 0; load < 2; load++) {
            void *plugin = dlopen(argv[2], RTLD_NOW);
            if (!plugin) { fprintf(stderr, "%s\n", dlerror()); return 2; }
            void (*run)(int) = (void (*)(int))dlsym(plugin, "plugin_run");
            run(load + 1);
            dlclose(plugin);
        }
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
