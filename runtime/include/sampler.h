/* sampler.h: the C ABI between code instrumented by sampler-cc and the
 * sampler runtime (libsampler_runtime.a / libsampler_runtime.so).
 *
 * Conventions
 * - Every public symbol starts with `cbi_`; nothing else is exported.
 * - No function returns an error: the runtime is a guest in the program.
 *   Anything it cannot do (an unusable SAMPLER_* value, a report file that
 *   cannot be created) is said once on stderr, and the program runs on.
 * - The runtime never frees or writes what the program owns, except the
 *   counter, bound and timestamp arrays described by `struct cbi_unit`,
 *   which it resets after writing them in an interim report or when their
 *   unit is unloaded.
 * - Every function is thread-safe. None may be called from a signal
 *   handler except cbi_sample, cbi_atomsObserve and cbi_traceObserve
 *   (which is what instrumented code calls).
 */
#ifndef SAMPLER_H
#define SAMPLER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CBI_ABI_VERSION 2

/* ---- Sampling ------------------------------------------------------- */

/* The events before the calling thread's next sampled one: each event
 * decrements it, and the event that takes it below zero asks cbi_sample()
 * (ABI 2; in ABI 1 it held one more, and ran out at zero). A site is
 * compiled as
 *
 *     if (__builtin_expect(--cbi_countdown < 0, 0) && cbi_sample())
 *         <count the site>;
 *
 * which gcc compiles as one `sub` on the variable in memory and a branch
 * on its sign. It is 0 in a thread that has not met a site yet: the first
 * decrement then calls cbi_sample(), which starts the thread's own random
 * stream.
 * Initial-exec, as the runtime defines it (its TLS segment is static):
 * code built with -fPIC reads it at a fixed offset from the thread
 * pointer instead of calling __tls_get_addr. sampler-cc compiles files
 * for executables with their own weak, local-exec definition, which the
 * executable exports and the runtime then uses; a file that includes
 * this header reaches it initial-exec, as declared here. */
extern __thread int cbi_countdown __attribute__((__tls_model__("initial-exec")));

/* From the constructor of a unit that defines cbi_countdown itself (sampler-cc
 * compiles files for executables so: weak, local-exec), with the address it
 * decrements. Says once on stderr when it is not the runtime's countdown (the
 * link hid the executable's definition), which would have nearly every event
 * of that code counted. */
void cbi_checkCountdown(const int *countdown);

/* The test of one event, as sampler-cc compiles it: true when the event
 * is sampled. Hand-instrumented code writes
 * `if (CBI_EVENT_SAMPLED()) <count the site>;`. */
#define CBI_EVENT_SAMPLED() (__builtin_expect(--cbi_countdown < 0, 0) && cbi_sample())

/* Called when cbi_countdown has run out. Returns 1 when the current event
 * is sampled (the site must count it), 0 when it is not, and sets
 * cbi_countdown for the events that follow. Every event has the same
 * probability 1/SAMPLER_SPARSITY of being sampled, the first one of a
 * thread included; with no sparsity set, none is. */
int cbi_sample(void);

/* ---- Compilation units ---------------------------------------------- */

/* What the `values` of a scheme hold. */
enum cbi_values_kind {
    CBI_COUNTERS = 0,        /* uint64_t [n_sites][arity] counters */
    CBI_BOUNDS_SIGNED = 1,   /* int64_t  [n_sites][2]: min, max    */
    CBI_BOUNDS_UNSIGNED = 2, /* uint64_t [n_sites][2]: min, max    */
    CBI_BOUNDS_POINTER = 3,  /* uint64_t [n_sites][2]: min, max addresses */
    CBI_BOUNDS_MIXED = 4     /* uint64_t [n_sites][3]: min, max, site_kind */
};

/* The sites of one scheme in one unit. Row i of `values` (and entry i of
 * the timestamp arrays) belongs to line i of the unit's site table for
 * this scheme. Counters are incremented by the instrumented code itself,
 * with __atomic_fetch_add(..., __ATOMIC_RELAXED) in threaded programs.
 * Bounds start as (max, min) of their type so that a site never observed
 * reports min > max:
 *
 *     signed    INT64_MAX, INT64_MIN
 *     unsigned  UINT64_MAX, 0
 *     pointer   UINT64_MAX, 0          (addresses as uint64_t)
 *
 * and after an interim report (or the unloading of their unit) they are
 * set back to these values.
 *
 * CBI_BOUNDS_MIXED is for a unit whose bounds sites have different C types
 * (int, unsigned long, pointers) in one scheme: row i is
 * {min, max, site_kind}, where site_kind is CBI_BOUNDS_SIGNED,
 * CBI_BOUNDS_UNSIGNED or CBI_BOUNDS_POINTER, written once by the compiler
 * as the row's initialiser, e.g.
 *
 *     static uint64_t bounds[2][3] = {
 *         {(uint64_t)INT64_MAX, (uint64_t)INT64_MIN, CBI_BOUNDS_SIGNED},
 *         {UINT64_MAX, 0, CBI_BOUNDS_POINTER},
 *     };
 *
 * and never changed by the program or the runtime. Each row is printed
 * and reset (min and max only) as a row of a table of that kind; a row
 * with any other site_kind as an unsigned one. A signed row holds int64_t
 * bit patterns: the program reads and compares them as int64_t through
 * (int64_t *)&bounds[i][0] (signed and unsigned variants of one type may
 * alias).
 *
 * In threaded programs the instrumented code updates min and max itself
 * with atomic compare-exchange loops (the runtime resets them with atomic
 * exchanges, so a reset is never lost), e.g. for a new minimum v:
 *
 *     int64_t *min = (int64_t *)&bounds[i][0];
 *     int64_t seen = __atomic_load_n(min, __ATOMIC_RELAXED);
 *     while (v < seen && !__atomic_compare_exchange_n(min, &seen, v, 1,
 *                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
 *         ;
 */
struct cbi_scheme_sites {
    const char *scheme;            /* "branches", "returns", ...            */
    uint32_t kind;                 /* enum cbi_values_kind                  */
    uint32_t arity;                /* values per site: counters, 2 for the
                                      bounds kinds, 3 for CBI_BOUNDS_MIXED  */
    uint32_t n_sites;
    uint32_t reserved;             /* 0                                     */
    void *values;                  /* 8-byte aligned, see kind              */
    uint64_t *first_timestamps;    /* n_sites entries, or NULL              */
    uint64_t *last_timestamps;     /* n_sites entries, or NULL              */
};

/* One compilation unit, a static object of the instrumented file. */
struct cbi_unit {
    uint32_t abi_version;          /* CBI_ABI_VERSION                       */
    uint32_t n_schemes;
    const unsigned char *signature;        /* 16 bytes: the unit signature */
    struct cbi_scheme_sites *schemes;      /* n_schemes entries            */
    struct cbi_unit *registry_next;        /* owned by the runtime: NULL   */
};

/* From the unit's constructor. Registering twice is harmless. */
void cbi_registerUnit(struct cbi_unit *unit);

/* From the unit's destructor. When the unit goes away before the program
 * ends (dlclose of a plugin), its samples are written now, as their own
 * <report id="samples">, and a later reload starts from zero. */
void cbi_unregisterUnit(struct cbi_unit *unit);

/* ---- Reports ---------------------------------------------------------- */

/* Writes an interim report now, for long-running programs: the samples of
 * every unit since the previous report, which are then reset. Summing all
 * the reports of a run (as resolve-samples does) gives its totals. */
void cbi_reportNow(void);

/* The next value of the process-wide logical clock used by timestamps
 * (1, 2, 3, ...). */
uint64_t cbi_nextTimestamp(void);

/* ---- Scheme helpers ---------------------------------------------------- */

/* For the g-object-unref scheme: the counter slot of one g_object_unref
 * call, given its argument before the call.
 *   0  a GObject whose ref_count is 0
 *   1  a GObject whose ref_count is 1 (this call finalises it)
 *   2  a GObject whose ref_count is > 1
 *   3  not a GObject instance: NULL, an instance without a class, an
 *      instance of another fundamental type, or GLib is not loaded
 * The test is GLib's G_IS_OBJECT (through
 * g_type_check_instance_is_fundamentally_a, looked up once with dlsym);
 * `object` must be NULL or something G_IS_OBJECT may be given, i.e. a
 * live GTypeInstance. The ref_count is read atomically; nothing is
 * written. */
int cbi_gObjectUnrefClassify(const void *object);

/* For the atoms scheme: one observed access to `address` by the calling
 * thread. The observations are the sampled accesses (the instrumented
 * code calls this only when the site is sampled), so "previous" below
 * means the last *observed* access, not the last access.
 *
 * Returns 1 when the last observed access to `address` came from another
 * thread, 0 when it came from this thread or none is remembered, and
 * records this access as the last observed one. The runtime remembers
 * one access per slot of a fixed process-wide table (4096 slots, chosen
 * by a hash of the address): an address whose slot was taken over by
 * another address since its last observation counts as never observed.
 * Thread ids repeat after about a million threads.
 *
 * Thread-safe and async-signal-safe: lock-free, no allocation; of two
 * threads racing on one slot, each sees the other's access or none,
 * consistently with one order of the two. */
int cbi_atomsObserve(const void *address);

/* ---- Flight recorder (SAMPLER_TRACE) ----------------------------------- */

/* One sampled observation, for the `trace` subreport (schema/report-format.md,
 * "The `trace` subreport"): the counter `slot` (0 for bounds schemes) of
 * row `site` of the scheme table `scheme`, which is an element of the
 * `schemes` array of a registered unit, e.g. &unit_schemes[0]. Called where
 * the site counts, after cbi_sample() returned 1:
 *
 *     if (CBI_EVENT_SAMPLED()) {
 *         __atomic_fetch_add(&branches[3][taken], 1, __ATOMIC_RELAXED);
 *         cbi_traceObserve(&unit_schemes[0], 3, taken);
 *     }
 *
 * With SAMPLER_TRACE=N (1 to 65536) each thread keeps its last N
 * observations in a ring, written on a fatal signal and in interim
 * reports; unset or 0, the call returns at once. The observations made
 * after one cbi_sample() that returned 1 (the sites of one sampled region
 * execution) are one event: they share a sequence number and a time. `scheme` is only
 * compared with the registered units' tables, never read: an observation
 * of a unit unloaded since is left out of the trace. A thread's ring is
 * made at its first cbi_sample() call; what it observes before is left
 * out. Lock-free, no allocation, async-signal-safe: a signal arriving
 * while a record is written loses at most that record. */
void cbi_traceObserve(const struct cbi_scheme_sites *scheme, uint32_t site, uint32_t slot);

/* cbi_traceObserve for code that has the observed value's address in
 * hand: `value` is a counter of a registered unit's table, or the first
 * value of a bounds row, e.g. &branches[3][taken] or &bounds[2][0]. Its
 * table, site and slot are found from the address when the trace is
 * written (only compared with the tables' values, never read). */
void cbi_traceObserveValue(const void *value);

/* cbi_traceObserve's and cbi_traceObserveValue's two halves, for
 * instrumented code (sampler-cc's count helper), so that a build with
 * tracing off pays one thread-local load per observation and no call:
 *
 *     void *ring = cbi_traceRing;
 *     if (__builtin_expect(ring != 0, 0))
 *         cbi_traceRecordValue(ring, cbi_sampledEvents, &branches[3][taken]);
 *
 * cbi_traceRing is the calling thread's ring (null when tracing is off or
 * the thread has not met its first event); cbi_sampledEvents counts the
 * events cbi_sample said were sampled on this thread. Read them only on
 * the calling thread; never write them. */
extern __thread void *cbi_traceRing __attribute__((__tls_model__("initial-exec")));
extern __thread unsigned long long cbi_sampledEvents __attribute__((__tls_model__("initial-exec")));
void cbi_traceRecord(void *ring, unsigned long long event, const struct cbi_scheme_sites *scheme,
                     uint32_t site, uint32_t slot);
void cbi_traceRecordValue(void *ring, unsigned long long event, const void *value);

/* Points at a byte that is nonzero while instrumented code may add one to
 * a counter with a plain increment: the process has one thread and
 * tracing is off (glibc's __libc_single_threaded, once the runtime has
 * started; a constant 0 before, with SAMPLER_TRACE, and on a libc without
 * that variable). Otherwise counts must be atomic and observations handed
 * to cbi_traceRecordValue. sampler-cc's count helper:
 *
 *     if (*__atomic_load_n(&cbi_plainCounts, __ATOMIC_RELAXED)) ++*counter;
 *     else slow_path(counter);
 *
 * Never write it. */
extern const char *cbi_plainCounts;

#ifdef __cplusplus
}
#endif

#endif /* SAMPLER_H */
