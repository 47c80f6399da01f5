/* The scheme helpers and mixed bounds, as sampler-cc uses them: one unit
 * whose bounds sites have different C types, updated with the atomic
 * compare-exchange loops of sampler.h; cbi_atomsObserve from two threads;
 * cbi_gObjectUnrefClassify in a program without GLib. */
#include <sampler.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static const unsigned char unit_signature[16] = {
    0x33, 0x33, 0x33, 0x33, 0x33, 0x33, 0x33, 0x33,
    0x33, 0x33, 0x33, 0x33, 0x33, 0x33, 0x33, 0x33};

static uint64_t bounds[3][3] = {
    {(uint64_t)INT64_MAX, (uint64_t)INT64_MIN, CBI_BOUNDS_SIGNED},
    {UINT64_MAX, 0, CBI_BOUNDS_UNSIGNED},
    {UINT64_MAX, 0, CBI_BOUNDS_POINTER},
};
static struct cbi_scheme_sites unit_schemes[] = {
    {"bounds", CBI_BOUNDS_MIXED, 3, 3, 0, bounds, 0, 0},
};
static struct cbi_unit unit = {CBI_ABI_VERSION, 1, unit_signature, unit_schemes, 0};

__attribute__((constructor)) static void unit_register(void) { cbi_registerUnit(&unit); }
__attribute__((destructor)) static void unit_unregister(void) { cbi_unregisterUnit(&unit); }

static void observe_signed(int site, int64_t v)
{
    int64_t *min = (int64_t *)&bounds[site][0], *max = (int64_t *)&bounds[site][1];
    int64_t seen = __atomic_load_n(min, __ATOMIC_RELAXED);
    while (v < seen && !__atomic_compare_exchange_n(min, &seen, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    seen = __atomic_load_n(max, __ATOMIC_RELAXED);
    while (v > seen && !__atomic_compare_exchange_n(max, &seen, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void observe_unsigned(int site, uint64_t v)
{
    uint64_t *min = &bounds[site][0], *max = &bounds[site][1];
    uint64_t seen = __atomic_load_n(min, __ATOMIC_RELAXED);
    while (v < seen && !__atomic_compare_exchange_n(min, &seen, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    seen = __atomic_load_n(max, __ATOMIC_RELAXED);
    while (v > seen && !__atomic_compare_exchange_n(max, &seen, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static int shared_variable;

static void *other_thread(void *argument)
{
    (void)argument;
    printf("other %d\n", cbi_atomsObserve(&shared_variable));
    observe_signed(0, 100);
    return NULL;
}

int main(void)
{
    int not_shared = 0;
    printf("main %d\n", cbi_atomsObserve(&shared_variable));
    printf("main %d\n", cbi_atomsObserve(&shared_variable));
    pthread_t thread;
    pthread_create(&thread, NULL, other_thread, NULL);
    pthread_join(thread, NULL);
    printf("main %d\n", cbi_atomsObserve(&shared_variable));
    printf("not shared %d\n", cbi_atomsObserve(&not_shared));

    struct { const void *class; unsigned ref_count; } lookalike = {&lookalike, 1};
    printf("classify %d %d\n", cbi_gObjectUnrefClassify(NULL), cbi_gObjectUnrefClassify(&lookalike));

    observe_signed(0, -7);
    observe_unsigned(1, 3);
    observe_unsigned(1, 18446744073709551614u);
    observe_unsigned(2, 0);
    observe_unsigned(2, 0x7ffc3a10);
    cbi_reportNow();
    observe_unsigned(1, 9);
    return 0;
}
