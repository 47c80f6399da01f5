/* A word and number counter with two planted bugs, for the end-to-end
 * test of the analysis. It reads whitespace-separated tokens on stdin.
 *
 * Bug 1 (a crash): words longer than 12 letters are kept in a list of 8;
 * once it is full they are dropped but still counted, and the summary
 * then reads past the list's end and takes the length of a NULL.
 * Bug 2 (a wrong exit status): a negative number is taken for an error,
 * so any input with one exits with status 1.
 *
 * Each condition holds once per offending token, many times per run, so
 * that sparse sampling still observes it in most runs where it holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#define MAX_LONG 8

static const char *long_words[MAX_LONG];

static const char *long_word(int i) {
    return i < MAX_LONG ? long_words[i] : NULL;
}

int main(void) {
    char token[64];
    int n_long = 0, words = 0, numbers = 0, errors = 0;
    long sum = 0;
    while (scanf("%63s", token) == 1) {
        if (isdigit((unsigned char) token[0]) || token[0] == '-') {
            long value = strtol(token, NULL, 10);
            numbers++;
            if (value < 0)
                errors++;            /* bug 2: negative numbers are valid */
            else
                sum += value;
            continue;
        }
        words++;
        size_t len = strlen(token);
        if (len > 12) {
            if (n_long < MAX_LONG)
                long_words[n_long] = strdup(token);
            n_long++;                /* bug 1: counted even when dropped */
        }
    }
    size_t long_letters = 0;
    for (int i = 0; i < n_long; i++)
        long_letters += strlen(long_word(i));   /* crashes past MAX_LONG */
    printf("%d words, %d numbers, sum %ld, %d long words of %zu letters\n",
           words, numbers, sum, n_long, long_letters);
    return errors > 0 ? 1 : 0;
}
