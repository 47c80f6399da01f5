/* logstat: a summary of a web server's access log.
 *
 * Reads lines in the Common or Combined Log Format on stdin, as Apache and
 * nginx write them:
 *
 *   203.0.113.7 - - [12/Mar/2024:10:01:22 +0000] "GET /index.html HTTP/1.1" 200 5120 "-" "curl/8.5.0"
 *
 * and prints the number of requests and bytes, the requests per status
 * class, the busiest paths and clients, and optionally the requests per
 * hour of the day.
 *
 * Usage: logstat [-n N] [-H]
 *   -n N   list the N busiest paths and clients (default 5)
 *   -H     also print the requests per hour of the day
 *
 * Exit status: 0 when every line was understood, 1 when some lines were
 * malformed (they are left out of the summary), 2 on a usage error.
 *
 * This program is the example of the sampler toolchain's demo and has two
 * planted bugs, marked BUG 1 and BUG 2 below (see README.md).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How many distinct paths (or clients) a table holds. */
#define TABLE_MAX 128

/* Requests and bytes of one path or client. */
struct entry {
    char *key;
    long hits;
    long bytes;
};

/* Counters by key, in order of first appearance. The vector has one slot
 * more than it can fill, so that it always ends with a NULL. Requests for
 * keys that arrive when it is full are counted in `other`. */
struct table {
    struct entry *items[TABLE_MAX + 1];
    int n;                  /* entries in items */
    long other;             /* requests whose key did not fit */
};

/* One request: the fields of a log line that the summary uses. The
 * strings point into the line. */
struct request {
    const char *client;
    int hour;
    const char *path;
    int status;
    long bytes;
};

static struct table paths, clients;

static void *xmalloc(size_t size)
{
    void *p = malloc(size);
    if (p == NULL) {
        perror("logstat");
        exit(2);
    }
    return p;
}

/* Counts one request of BYTES bytes for KEY in T. */
static void count(struct table *t, const char *key, long bytes)
{
    struct entry **e;

    for (e = t->items; *e != NULL; e++)
        if (strcmp((*e)->key, key) == 0) {
            (*e)->hits++;
            (*e)->bytes += bytes;
            return;
        }
    /* BUG 1: a request whose key arrives when the table is full is
     * counted in `other`, but n is incremented for it too, although
     * nothing was stored. print_top() then sorts n entries: the NULL that
     * ends the vector and what lies beyond it, and by_hits() crashes on
     * the NULL. Shows on logs with more than TABLE_MAX distinct paths or
     * clients, such as a vulnerability scan's. */
    if (t->n < TABLE_MAX) {
        struct entry *new = xmalloc(sizeof *new);
        new->key = xmalloc(strlen(key) + 1);
        strcpy(new->key, key);
        new->hits = 1;
        new->bytes = bytes;
        t->items[t->n] = new;
    } else {
        t->other++;
    }
    t->n++;
}

/* Orders entries by requests, the most first. */
static int by_hits(const void *a, const void *b)
{
    const struct entry *x = *(struct entry *const *) a;
    const struct entry *y = *(struct entry *const *) b;

    return (y->hits > x->hits) - (y->hits < x->hits);
}

/* Prints the TOP keys of T with the most requests, busiest first, with
 * their share of TOTAL requests. */
static void print_top(const char *title, struct table *t, int top, long total)
{
    qsort(t->items, t->n, sizeof *t->items, by_hits);
    printf("%s (%d distinct):\n", title, t->n);
    for (int i = 0; i < top && i < t->n; i++)
        printf("  %7ld %5.1f%% %9ld B  %s\n", t->items[i]->hits,
               100.0 * t->items[i]->hits / total, t->items[i]->bytes,
               t->items[i]->key);
    if (t->other > 0)
        printf("  %7ld requests for keys that did not fit the table\n",
               t->other);
}

/* The next field of *P, up to a space or the end of the line; advances
 * *P past it and the spaces after it. NULL if there is none. */
static char *word(char **p)
{
    char *start = *p, *end = start + strcspn(start, " \n");

    if (end == start)
        return NULL;
    *p = end + strspn(end, " \n");
    *end = '\0';
    return start;
}

/* The next field of *P between OPEN and CLOSE ("[...]" or "\"...\""),
 * without them; advances *P past it and the spaces after it. NULL if *P
 * does not start with OPEN or CLOSE never comes. */
static char *enclosed(char **p, char open, char close)
{
    char *start = *p, *end;

    if (*start != open)
        return NULL;
    end = strchr(start + 1, close);
    if (end == NULL)
        return NULL;
    *end = '\0';
    *p = end + 1 + strspn(end + 1, " \n");
    return start + 1;
}

/* Reads the digits at the start of S into *VALUE (0 if there are none,
 * as in the "-" of a response without a body); returns the character
 * after them. */
static const char *digits(const char *s, long *value)
{
    for (*value = 0; *s >= '0' && *s <= '9'; s++)
        *value = *value * 10 + (*s - '0');
    return s;
}

/* Splits LINE into R. Returns 0 if the line is malformed. */
static int parse(char *line, struct request *r)
{
    char *p = line, *time, *request, *path, *status, *bytes;
    long value;

    r->client = word(&p);
    if (r->client == NULL || word(&p) == NULL || word(&p) == NULL)
        return 0;                       /* host, ident, user */
    time = enclosed(&p, '[', ']');      /* 12/Mar/2024:10:01:22 +0000 */
    if (time == NULL || sscanf(time, "%*d/%*3[A-Za-z]/%*d:%d", &r->hour) != 1)
        return 0;
    if (r->hour < 0 || r->hour > 23)
        return 0;
    request = enclosed(&p, '"', '"');   /* GET /index.html HTTP/1.1 */
    if (request == NULL || word(&request) == NULL)
        return 0;
    path = word(&request);
    if (path == NULL)
        return 0;
    path[strcspn(path, "?")] = '\0';    /* without the query string */
    r->path = path;
    status = word(&p);
    bytes = word(&p);
    if (status == NULL || bytes == NULL || *digits(status, &value) != '\0')
        return 0;
    r->status = (int) value;
    digits(bytes, &r->bytes);           /* a number, or "-" for none */
    /* The Combined format's referrer and user agent, if present, are
     * checked but not used. */
    if (*p == '"' && (enclosed(&p, '"', '"') == NULL
                      || enclosed(&p, '"', '"') == NULL))
        return 0;
    return *p == '\0';
}

static void usage(void)
{
    fprintf(stderr, "usage: logstat [-n N] [-H] < access.log\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int top = 5, hourly = 0, opt;
    char *line = NULL, *end;
    size_t capacity = 0;
    long lines = 0, malformed = 0, requests = 0, bytes = 0;
    long classes[6] = {0}, hours[24] = {0};
    struct request r;

    while ((opt = getopt(argc, argv, "n:H")) != -1) {
        switch (opt) {
        case 'n':
            top = (int) strtol(optarg, &end, 10);
            if (*end != '\0' || top < 1)
                usage();
            break;
        case 'H':
            hourly = 1;
            break;
        default:
            usage();
        }
    }
    if (optind != argc)
        usage();

    while (getline(&line, &capacity, stdin) != -1) {
        lines++;
        if (line[0] == '\n' || line[0] == '#')
            continue;                   /* blank lines and comments */
        if (!parse(line, &r)) {
            malformed++;
            continue;
        }
        /* BUG 2: 5xx (server errors) are valid statuses; the bound should
         * be 599. Every line of a request that failed on the server is
         * taken for a malformed line, and logstat exits with status 1. */
        if (r.status < 100 || r.status > 499) {
            malformed++;
            continue;
        }
        requests++;
        bytes += r.bytes;
        classes[r.status / 100]++;
        hours[r.hour]++;
        count(&paths, r.path, r.bytes);
        count(&clients, r.client, r.bytes);
    }
    free(line);

    printf("%ld requests, %ld bytes, %ld lines\n", requests, bytes, lines);
    printf("status: 1xx %ld, 2xx %ld, 3xx %ld, 4xx %ld, 5xx %ld\n",
           classes[1], classes[2], classes[3], classes[4], classes[5]);
    if (requests > 0) {
        print_top("busiest paths", &paths, top, requests);
        print_top("busiest clients", &clients, top, requests);
    }
    if (hourly)
        for (int h = 0; h < 24; h++)
            printf("%02d:00 %7ld\n", h, hours[h]);
    if (malformed > 0)
        fprintf(stderr, "logstat: %ld malformed lines left out\n", malformed);
    return malformed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
