/* A line-by-line word and number counter with two planted bugs, for the
 * end-to-end test of the analysis. It reads lines of whitespace-separated
 * tokens on stdin.
 *
 * Bug 1 (a crash): the distinct words longer than 12 letters of a line are
 * kept in a list of 8; once it is full new ones are dropped but still
 * counted, and the line's summary then reads past the list's end and takes
 * the length of a NULL. Lines with up to 8 distinct long words are fine.
 * Bug 2 (a wrong exit status): a negative number is taken for an error,
 * so any input with one exits with status 1.
 *
 * Each condition holds once per offending token, many times per run, so
 * that sparse sampling still observes it in most runs where it holds. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LONG 8

static char *long_words[MAX_LONG];
static int n_stored;

static int known(const char *word) {
    for (int i = 0; i < n_stored; i++)
        if (strcmp(long_words[i], word) == 0)
            return 1;
    return 0;
}

static const char *long_word(int i) {
    return i < MAX_LONG ? long_words[i] : NULL;
}

int main(void) {
    char *line = NULL;
    size_t capacity = 0;
    int lines = 0, words = 0, numbers = 0, errors = 0;
    long sum = 0;
    size_t long_letters = 0;
    while (getline(&line, &capacity, stdin) != -1) {
        int n_long = 0;
        lines++;
        for (char *token = strtok(line, " \t\n"); token; token = strtok(NULL, " \t\n")) {
            if (isdigit((unsigned char) token[0]) || token[0] == '-') {
                long value = strtol(token, NULL, 10);
                numbers++;
                if (value < 0)
                    errors++;        /* bug 2: negative numbers are valid */
                else
                    sum += value;
                continue;
            }
            words++;
            if (strlen(token) > 12 && !known(token)) {
                if (n_long < MAX_LONG)
                    long_words[n_stored++] = strdup(token);
                n_long++;            /* bug 1: counted even when dropped */
            }
        }
        for (int i = 0; i < n_long; i++)
            long_letters += strlen(long_word(i));   /* crashes past MAX_LONG */
        while (n_stored > 0)
            free(long_words[--n_stored]);
    }
    free(line);
    printf("%d lines, %d words, %d numbers, sum %ld, %zu letters in long words\n",
           lines, words, numbers, sum, long_letters);
    return errors > 0 ? 1 : 0;
}
