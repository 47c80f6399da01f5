/* A tiny program instrumented by hand exactly as sampler-cc will
 * instrument it: two `branches` sites, one `returns` site, counters per
 * unit, and a feedback report written at exit to $SAMPLER_FILE.
 * Its site table is demo.sites, embedded into the binary by
 * scripts/quickstart.sh with `objcopy --add-section .debug_site_info=...`.
 * Until sampler-cc and the runtime exist, this shows the formats and the
 * offline tools on a real gcc-built ELF file. */
#include <stdio.h>
#include <stdlib.h>

/* Must match the unit="..." of demo.sites. */
static const char unit_signature[] = "5d41402abc4b2a76b9719d911017c592";

static unsigned long branches_counters[2][2]; /* [site][false, true] */
static unsigned long returns_counters[1][3];  /* [site][<0, ==0, >0] */

static void write_report(void)
{
    const char *path = getenv("SAMPLER_FILE");
    if (path == NULL)
        return;
    FILE *report = fopen(path, "w");
    if (report == NULL) {
        perror(path);
        return;
    }
    fprintf(report, "<report id=\"samples\">\n");
    fprintf(report, "<samples unit=\"%s\" scheme=\"branches\">\n", unit_signature);
    for (int site = 0; site < 2; site++)
        fprintf(report, "%lu\t%lu\n", branches_counters[site][0], branches_counters[site][1]);
    fprintf(report, "</samples>\n");
    fprintf(report, "<samples unit=\"%s\" scheme=\"returns\">\n", unit_signature);
    fprintf(report, "%lu\t%lu\t%lu\n", returns_counters[0][0], returns_counters[0][1],
            returns_counters[0][2]);
    fprintf(report, "</samples>\n</report>\n");
    fclose(report);
}

int main(int argc, char **argv)
{
    atexit(write_report);
    int has_argument = argc > 1;
    branches_counters[0][has_argument != 0]++;          /* site: argc > 1 */
    if (!has_argument)
        return 0;
    int value = atoi(argv[1]);
    returns_counters[0][(value > 0) + (value >= 0)]++;  /* site: atoi */
    int negative = value < 0;
    branches_counters[1][negative != 0]++;              /* site: value < 0 */
    if (negative) {
        fprintf(stderr, "demo: negative input %d\n", value);
        return 1;
    }
    printf("%d\n", value * 2);
    return 0;
}
