/* A plugin with its own unit; plugin_run(n) counts n true branches,
 * plugin_sample(n) runs n sampled sites and returns how many sampled. */
#define UNIT_BYTE 0x22
#include "unit.h"

void plugin_run(int n)
{
    branches[0][1] += (uint64_t)n;
}

long plugin_sample(long n)
{
    long sampled = 0;
    for (long i = 0; i < n; i++)
        SAMPLED(sampled++);
    return sampled;
}
