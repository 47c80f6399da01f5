/* The shared library of the crash tests: a NULL write in a function of
 * its own, or in one inlined into the caller. The `at:` comments mark the
 * lines the tests expect in the symbolized backtraces. */

__attribute__((noinline)) void lib_store(int *p, int v)
{
    *p = v; /* at: lib_store */
}

static inline __attribute__((always_inline)) void poke(int *p, int v)
{
    *p = v + 1; /* at: poke */
}

__attribute__((noinline)) int lib_helper(int *p, int inlined)
{
    if (inlined)
        poke(p, 6); /* at: lib_helper calls poke */
    else
        lib_store(p, 42); /* at: lib_helper calls lib_store */
    return 1;
}
