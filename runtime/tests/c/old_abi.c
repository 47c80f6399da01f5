/* A unit of the current ABI (unit.h, signature 0x44 x16) and one that says
 * it was built for runtime ABI 1, whose countdown ran out at zero: the
 * runtime must ignore the old one, with one line on stderr. */
#define UNIT_BYTE 0x44
#include "unit.h"

static const unsigned char old_signature[16] = {SIG16(0x55)};
static uint64_t old_branches[1][2];
static struct cbi_scheme_sites old_schemes[] = {
    {"branches", CBI_COUNTERS, 2, 1, 0, old_branches, 0, 0},
};
static struct cbi_unit old_unit = {1, 1, old_signature, old_schemes, 0};

__attribute__((constructor)) static void old_register(void) { cbi_registerUnit(&old_unit); }

int main(void)
{
    for (int i = 0; i < 10; i++) {
        SAMPLED(branches[0][i & 1]++);
        old_branches[0][0]++;
    }
    return 0;
}
