#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct record { int key; int value; };

static struct record *find(struct record *table, int n, int key) {
    for (int i = 0; i < n; i++)
        if (table[i].key == key)
            return &table[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    int key = atoi(argv[1]);
    int mode = atoi(argv[2]);
    struct record table[8];
    for (int i = 0; i < 8; i++) {
        table[i].key = i * 10;
        table[i].value = i;
    }
    struct record *r = find(table, 8, key);
    int total = 0;
    if (mode > 90)
        total = -1;
    if (key % 10 == 0 || key > 75)
        total += r->value;   /* crashes when key > 75: not in the table */
    printf("%d\n", total);
    if (total < 0)
        return 1;            /* wrong exit status when mode > 90 */
    return 0;
}
