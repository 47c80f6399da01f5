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
 *   handler except cbi_sample (which is what instrumented code calls).
 */
#ifndef SAMPLER_H
#define SAMPLER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CBI_ABI_VERSION 1

/* ---- Sampling ------------------------------------------------------- */

/* Events left until the calling thread's next sampled event. A site is
 * compiled as
 *
 *     if (__builtin_expect(--cbi_countdown <= 0, 0) && cbi_sample())
 *         <count the site>;
 *
 * It is 0 in a thread that has not met a site yet: the first decrement
 * then calls cbi_sample(), which starts the thread's own random stream. */
extern __thread int cbi_countdown;

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
    CBI_BOUNDS_POINTER = 3   /* uint64_t [n_sites][2]: min, max addresses */
};

/* The sites of one scheme in one unit. Row i of `values` (and entry i of
 * the timestamp arrays) belongs to line i of the unit's site table for
 * this scheme. Counters are incremented by the instrumented code itself,
 * with __atomic_fetch_add(..., __ATOMIC_RELAXED) in threaded programs.
 * Bounds start as (max, min) of their type so that a site never observed
 * reports min > max. */
struct cbi_scheme_sites {
    const char *scheme;            /* "branches", "returns", ...            */
    uint32_t kind;                 /* enum cbi_values_kind                  */
    uint32_t arity;                /* values per site: counters, or 2       */
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

#ifdef __cplusplus
}
#endif

#endif /* SAMPLER_H */
