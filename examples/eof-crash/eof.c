/* A crash at end of input, reached once per run: the last line has no
 * newline (one input in five), and the prompt the program then prints
 * was never set. The per-line work is the hot code. */
#include <stdio.h>
#include <string.h>

static int classify(const char *line)
{
    int score = 0;
    for (const char *p = line; *p; p++) {
        if (*p >= '0' && *p <= '9')
            score += 2;
        else if (*p == ' ')
            score--;
    }
    return score;
}

int main(void)
{
    char line[256];
    const char *prompt = NULL;
    long total = 0;
    int lines = 0, last_len = 0;
    while (fgets(line, sizeof line, stdin)) {
        total += classify(line);
        lines++;
        last_len = (int)strlen(line);
        if (total > 100000000)
            prompt = "> ";
    }
    if (last_len > 0 && line[last_len - 1] != '\n')
        printf("%s\n", prompt + 1);
    printf("%d %ld\n", lines, total);
    return 0;
}
