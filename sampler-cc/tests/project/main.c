#include <stdio.h>
#include <stdlib.h>
#include "shapes.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        int value = clamp(atoi(argv[i]), -10, 10);
        printf("%s %d\n", sign_name(value), area(value, 2));
    }
    return 0;
}
