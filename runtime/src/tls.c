/* What stable Rust cannot define: the thread-local countdown that
 * instrumented C code reads and writes directly (see sampler.h), and the
 * common case of cbi_sample, which must cost a few instructions.
 *
 * Each thread keeps a batch of gaps drawn in advance from its own stream
 * (countdown.rs, `ThreadStream`): cbi_sample pops the next one into
 * cbi_countdown and returns 1. Only when the batch is empty (the thread's
 * first event, every CBI__BATCH + 1 samples after that, the first sample
 * after a fork, and with sampling off once per 2^31 - 1 events) does it
 * call the Rust side, which decides about the current event (countdown.rs,
 * `expire`: a thread's first event is not favoured) and refills the batch
 * with the next gaps of the same stream, in the order they would have
 * been drawn one at a time. The gaps a thread uses, and so the events it
 * samples, are exactly those of drawing each gap when it is needed.
 *
 * TLS model. These variables are initial-exec: an access is a load at a
 * constant offset from the thread pointer, where the general-dynamic model
 * of -fPIC code calls __tls_get_addr for each one (that call was most of
 * the cost of cbi_sample in the shared runtime). It makes the whole TLS
 * segment of libsampler_runtime.so static (DF_STATIC_TLS; about 530
 * bytes, Rust's thread-locals included), which costs nothing for a
 * library the loader loads at start-up, and the runtime is one:
 * sampler-cc links it into every instrumented executable (a DT_NEEDED
 * entry, or the archive linked into the executable itself, where the
 * linker turns these accesses into constant offsets). Only a runtime first
 * loaded by dlopen (an instrumented plugin in a host that is not
 * instrumented) must find room in the static TLS surplus glibc reserves
 * for such libraries, shared with the others: glibc 2.36 loads it unless
 * about 1 KB of that surplus is already taken, and
 * GLIBC_TUNABLES=glibc.rtld.optional_static_tls=4096 makes more room. */
#include "../include/sampler.h"
#include <unistd.h>

#define CBI__TLS __attribute__((tls_model("initial-exec")))

/* The events before the thread's next sampled one (runtime ABI 2: a gap
 * of g events is stored as g - 1, so that an event is the sampled one
 * when its decrement takes the countdown below zero, the sign flag of a
 * `sub` on the variable in memory). 0 until the thread meets its first
 * site, whose decrement then calls cbi_sample. */
CBI__TLS __thread int cbi_countdown;
/* An instrumented executable defines cbi_countdown too (sampler-cc's
 * prelude: weak, local-exec, so that its code decrements it at a constant
 * offset from the thread pointer) and exports it, since this library
 * defines the symbol: the dynamic linker then binds this file's and
 * instrumented shared objects' initial-exec accesses to the executable's,
 * and the program keeps one countdown per thread. In the archive this
 * strong definition takes the place of the executable's weak ones. */

/* Gaps drawn per call of the Rust side, so that struct cbi__batch
 * takes 256 bytes. Changing it changes nothing but the cost and the size
 * of the static TLS: the gaps are used in the order they are drawn. */
#define CBI__BATCH 62

/* The calling thread's batch: gaps[0..left) are unused, the next one is
 * gaps[left - 1]. Zero in a new thread (empty, not busy).
 *
 * Signal handlers. Instrumented code may run in a signal handler, which
 * interrupts the thread anywhere, cbi_sample included, and runs to its
 * end before the thread resumes. `busy` is 1 from before cbi_sample reads
 * `left` until after it has written everything: a handler that finds it
 * set touches neither the batch nor the Rust stream and leaves its event
 * out (countdown 0: the next event asks again), as the Rust side does
 * when it is re-entered. A handler that does not find it set runs
 * before cbi_sample has read anything or after it has written everything,
 * so each gap is used once. The signal fences keep the compiler from
 * moving the batch's reads and writes out of the busy window. */
struct cbi__batch {
    unsigned left;
    unsigned busy;
    int gaps[CBI__BATCH];
};
CBI__TLS static __thread struct cbi__batch cbi__batch;

/* The flight recorder's per-thread state (trace.rs; sampler.h says how
 * instrumented code uses them). `cbi_traceRing` is the thread's ring,
 * null while tracing is off and before the thread's first event;
 * `cbi_sampledEvents` counts the events cbi_sample said were sampled, so
 * that the observations of one sampled event (every site of one region
 * execution) share one sequence number and one clock reading, taken at
 * the first of them. Both initial-exec, as above: instrumented code reads
 * them without a call. */
CBI__TLS __thread void *cbi_traceRing;
CBI__TLS __thread unsigned long long cbi_sampledEvents;

void cbi_traceObserve(const struct cbi_scheme_sites *scheme, uint32_t site, uint32_t slot)
{
    void *ring = cbi_traceRing;
    if (ring)
        cbi_traceRecord(ring, cbi_sampledEvents, scheme, site, slot);
}

void cbi_traceObserveValue(const void *value)
{
    void *ring = cbi_traceRing;
    if (ring)
        cbi_traceRecordValue(ring, cbi_sampledEvents, value);
}

/* Whether instrumented code may add one to a counter with a plain
 * increment: sampler-cc's count helper reads the byte this points at.
 * It is glibc's __libc_single_threaded (nonzero while the process has one
 * thread; glibc clears it before a second thread starts) once the runtime
 * has started without tracing, and a constant 0 before that, with
 * tracing (every observation then takes the helper's traced path, which
 * tests the thread's ring) and on a libc without the variable (always
 * atomic). One load through this pointer replaces the helper's tests of
 * the weak symbol and of the thread's ring: an observation at sparsity
 * 100 is a tenth of a sampled bc's instructions. Written once, when the
 * runtime starts (lib.rs, `initialise`), after tracing is decided. */
static const char cbi__never_plain = 0;
extern char __libc_single_threaded __attribute__((weak));
const char *cbi_plainCounts = &cbi__never_plain;

void cbi__plain_counts_start(int tracing) __attribute__((visibility("hidden")));

void cbi__plain_counts_start(int tracing)
{
    if (!tracing && &__libc_single_threaded != 0)
        __atomic_store_n(&cbi_plainCounts, &__libc_single_threaded, __ATOMIC_RELEASE);
}

/* Sets the calling thread's ring (trace.rs: at its first event, and null
 * at its exit). */
void cbi__trace_set_ring(void *ring) __attribute__((visibility("hidden")));

void cbi__trace_set_ring(void *ring)
{
    cbi_traceRing = ring;
}

/* From the constructor of each unit compiled for an executable (sampler-cc's
 * prelude), with the address of the countdown that unit decrements: its
 * own weak, local-exec definition, which must be the one this file's code
 * is bound to (the executable exports it). A version script or
 * --exclude-libs that hides it leaves the executable a countdown of its
 * own that cbi_sample never refills, so that nearly every event of the
 * executable would be counted: said once, so that nobody analyses such
 * counts unawares. */
void cbi_checkCountdown(const int *countdown)
{
    static int warned;
    if (countdown == &cbi_countdown || __atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        return;
    static const char message[] =
        "sampler: warning: instrumented code in this executable decrements a cbi_countdown "
        "of its own, not the runtime's: the link hid the executable's definition (a version "
        "script or --exclude-libs), so nearly all its events would be counted; export "
        "cbi_countdown (-Wl,--export-dynamic-symbol=cbi_countdown) or compile with "
        "-fsampler-tls-model=initial-exec\n";
    ssize_t written = write(2, message, sizeof message - 1);
    (void)written;
}

/* The Rust side (abi.rs): starts the thread's stream at its first event,
 * reseeds it after a fork, decides whether the current event is sampled
 * and stores the countdown that follows, and fills gaps[0..*left) with
 * the next gaps (at most `capacity`; the first to use last). Hidden, so
 * that nothing leaks into the program's namespace from the shared
 * library. */
int cbi__sample_slow(int *countdown, int *gaps, unsigned capacity, unsigned *left)
    __attribute__((visibility("hidden")));

/* The slow path of cbi_sample, called with busy set; out of line, so that
 * the fast path saves no register. */
__attribute__((noinline, cold)) static int cbi__refill(struct cbi__batch *batch)
{
    int sampled = cbi__sample_slow(&cbi_countdown, batch->gaps, CBI__BATCH, &batch->left);
    cbi_sampledEvents += (unsigned)sampled;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    batch->busy = 0;
    return sampled;
}

int cbi_sample(void)
{
    struct cbi__batch *batch = &cbi__batch;
    if (__builtin_expect(batch->busy, 0)) {
        /* A signal handler interrupted cbi_sample: see struct cbi__batch. */
        cbi_countdown = 0;
        return 0;
    }
    batch->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    unsigned left = batch->left;
    if (__builtin_expect(left == 0, 0))
        return cbi__refill(batch);
    batch->left = left - 1;
    cbi_countdown = batch->gaps[left - 1] - 1;
    cbi_sampledEvents++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    batch->busy = 0;
    return 1;
}

/* In a forked child, for the one thread there is (the one that called
 * fork; countdown.rs, after_fork_in_child): forgets the batch, drawn from
 * the parent's stream, so that the child's next sample refills it from
 * its reseeded stream. Returns how many gaps were forgotten, which a bank
 * of countdowns (SAMPLER_EVENT_COUNTDOWNS) takes back. (A fork from a
 * signal handler that interrupted cbi_sample's pop itself is not covered:
 * the pop then completes with the parent's batch.) */
unsigned cbi__forget_gaps(void) __attribute__((visibility("hidden")));

unsigned cbi__forget_gaps(void)
{
    unsigned left = cbi__batch.left;
    cbi__batch.left = 0;
    return left;
}
