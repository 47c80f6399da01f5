/* The quickstart's program: plain C, instrumented by sampler-cc. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 0;
    int value = atoi(argv[1]);
    if (value < 0) {
        fprintf(stderr, "demo: negative input %d\n", value);
        return 1;
    }
    printf("%d\n", value * 2);
    return 0;
}
