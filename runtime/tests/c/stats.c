/* Sampling statistics, printed for the Rust test to judge.
 *   stats gaps THREADS EVENTS : per thread, "thread N samples S" then the
 *                               histogram of gaps between samples (the
 *                               first gap counted from the thread's start),
 *                               "gap G count C" for every non-empty G < 4096,
 *                               and "gap 4096 count C" for longer ones.
 *   stats first THREADS       : THREADS threads, one event each; prints how
 *                               many of those first events were sampled.
 *   stats count EVENTS        : one thread; prints how many were sampled.
 *   stats fork                : runs events, forks, and parent and child
 *                               each print "parent|child SAMPLES DIGEST" for
 *                               the next 100000 events (DIGEST hashes which
 *                               events were sampled).
 *   stats forkgaps N          : runs events up to the first sample, forks,
 *                               and parent and child each print
 *                               "parent|child G1 ... GN", the gaps of
 *                               their next N samples (G1 counted from the
 *                               fork). */
#include <sampler.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_GAP 4096

struct thread_result {
    long events;
    long samples;
    long histogram[MAX_GAP + 1];
};

static void *count_gaps(void *argument)
{
    struct thread_result *result = argument;
    long last = 0;
    for (long event = 1; event <= result->events; event++) {
        if (CBI_EVENT_SAMPLED()) {
            long gap = event - last;
            result->histogram[gap < MAX_GAP ? gap : MAX_GAP]++;
            result->samples++;
            last = event;
        }
    }
    return NULL;
}

static void *one_event(void *argument)
{
    int *sampled = argument;
    *sampled = CBI_EVENT_SAMPLED();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "gaps") == 0) {
        int n_threads = atoi(argv[2]);
        long events = atol(argv[3]);
        pthread_t threads[64];
        static struct thread_result results[64];
        for (int i = 0; i < n_threads && i < 64; i++) {
            results[i].events = events;
            pthread_create(&threads[i], NULL, count_gaps, &results[i]);
        }
        for (int i = 0; i < n_threads && i < 64; i++) {
            pthread_join(threads[i], NULL);
            printf("thread %d samples %ld\n", i, results[i].samples);
            for (int gap = 1; gap <= MAX_GAP; gap++)
                if (results[i].histogram[gap])
                    printf("gap %d count %ld\n", gap, results[i].histogram[gap]);
        }
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "first") == 0) {
        int n_threads = atoi(argv[2]), n_sampled = 0;
        for (int i = 0; i < n_threads; i++) {
            pthread_t thread;
            int sampled = 0;
            pthread_create(&thread, NULL, one_event, &sampled);
            pthread_join(thread, NULL);
            n_sampled += sampled;
        }
        printf("%d\n", n_sampled);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "fork") == 0) {
        for (int i = 0; i < 1000; i++)
            if (CBI_EVENT_SAMPLED())
                continue;
        pid_t child = fork();
        unsigned long digest = 1469598103934665603UL, n_sampled = 0;
        for (unsigned long event = 0; event < 100000; event++)
            if (CBI_EVENT_SAMPLED()) {
                digest = (digest ^ event) * 1099511628211UL;
                n_sampled++;
            }
        printf("%s %lu %lx\n", child == 0 ? "child" : "parent", n_sampled, digest);
        fflush(stdout);
        if (child != 0)
            waitpid(child, NULL, 0);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "forkgaps") == 0) {
        int n = atoi(argv[2]);
        while (!CBI_EVENT_SAMPLED())
            ;
        pid_t child = fork();
        printf("%s", child == 0 ? "child" : "parent");
        long last = 0;
        for (long event = 1, samples = 0; samples < n; event++)
            if (CBI_EVENT_SAMPLED()) {
                printf(" %ld", event - last);
                last = event;
                samples++;
            }
        printf("\n");
        fflush(stdout);
        if (child != 0)
            waitpid(child, NULL, 0);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "count") == 0) {
        long events = atol(argv[2]), n_sampled = 0;
        for (long i = 0; i < events; i++)
            if (CBI_EVENT_SAMPLED())
                n_sampled++;
        printf("%ld\n", n_sampled);
        return 0;
    }
    fprintf(stderr, "usage: stats gaps THREADS EVENTS | first THREADS | count EVENTS | fork | forkgaps N\n");
    return 2;
}
