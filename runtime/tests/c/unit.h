/* One compilation unit as sampler-cc instruments it: counter arrays, a
 * unit descriptor, constructor and destructor. Define UNIT_BYTE (the
 * signature is that byte 16 times) before including. */
#include <sampler.h>
#include <stdint.h>

#define SIG16(b) b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b
static const unsigned char unit_signature[16] = {SIG16(UNIT_BYTE)};

static uint64_t branches[2][2];
static uint64_t returns[1][3];
static int64_t bounds[1][2] = {{INT64_MAX, INT64_MIN}};
static uint64_t branches_first[2], branches_last[2];

static struct cbi_scheme_sites unit_schemes[] = {
    {"branches", CBI_COUNTERS, 2, 2, 0, branches, branches_first, branches_last},
    {"returns", CBI_COUNTERS, 3, 1, 0, returns, 0, 0},
    {"bounds", CBI_BOUNDS_SIGNED, 2, 1, 0, bounds, 0, 0},
    {"function-entries", CBI_COUNTERS, 1, 0, 0, 0, 0, 0},
};
static struct cbi_unit unit = {CBI_ABI_VERSION, 4, unit_signature, unit_schemes, 0};

__attribute__((constructor)) static void unit_register(void) { cbi_registerUnit(&unit); }
__attribute__((destructor)) static void unit_unregister(void) { cbi_unregisterUnit(&unit); }

/* A sampled site, as sampler-cc emits it. */
#define SAMPLED(statement) \
    do { if (CBI_EVENT_SAMPLED()) { statement; } } while (0)
/* A counter bump in a threaded program. */
#define ATOMIC_BUMP(counter) __atomic_fetch_add(&(counter), 1, __ATOMIC_RELAXED)
