/* A plugin with its own unit; plugin_run(n) counts n true branches. */
#define UNIT_BYTE 0x22
#include "unit.h"

void plugin_run(int n)
{
    branches[0][1] += (uint64_t)n;
}
