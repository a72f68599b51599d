/*
 * logs_clean.c - the last test of a run (ctest secrets/logs_clean): no log
 * of the run holds a secret the run used. See docs/secrets.md.
 *
 *   logs_clean SECRETS_FILE DIR...
 *
 * SECRETS_FILE is the run's record (tests/support/secrets.c: "t TEXT" or
 * "x HEX" lines); every regular file below each DIR is a log. Each secret
 * is looked for as it is and in the encodings a logger might apply:
 * percent-encoded (both hex cases), JSON-escaped, base64 and base64url (at
 * each of the three alignments a secret can have inside a longer encoded
 * text, as in a Basic credential), and for bytes, hex in both cases. A hit
 * is reported as file:line with the secret masked; exit 1 then, else 0.
 * No record or no log: exit 0, saying so (the test was run alone).
 *
 * One pass over each log: every 8-byte window is looked up in a hash of the
 * last 8 bytes of every form, and only a hit compares the whole form.
 */
#define _XOPEN_SOURCE 700
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define W 8           /* window: no form shorter than this is looked for */
#define MAX_REPORTS 50
#define MAX_REPORTS_TEXT "50"

struct form {
    unsigned char *p;
    size_t n;
    size_t secret; /* index of the secret it encodes */
    const char *how;
    size_t seen_in; /* the number of the last file it was reported in (1-based) */
    struct form *next; /* same last W bytes */
};

static struct {
    char **secrets; /* masked, for reports */
    size_t nsecrets, capsecrets;
    struct form **table;
    size_t tsize;
    size_t nforms;
    size_t files, bytes, hits, reports;
} g;

static uint64_t key_of(const unsigned char *p)
{
    uint64_t k;
    memcpy(&k, p, sizeof k);
    return k;
}

static size_t slot(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)(k & (g.tsize - 1));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "logs_clean: out of memory\n");
        exit(2);
    }
    return p;
}

/* False when the form is too short or known already. */
static bool add_form(const unsigned char *p, size_t n, const char *how)
{
    if (n < W)
        return false;
    size_t s = slot(key_of(p + n - W));
    for (struct form *f = g.table[s]; f; f = f->next)
        if (f->n == n && memcmp(f->p, p, n) == 0)
            return false; /* the same text from another secret or encoding */
    struct form *f = xmalloc(sizeof *f);
    f->p = xmalloc(n);
    memcpy(f->p, p, n);
    f->n = n;
    f->secret = g.nsecrets - 1;
    f->how = how;
    f->seen_in = 0;
    f->next = g.table[s];
    g.table[s] = f;
    g.nforms++;
    return true;
}

/* base64 of s as it appears inside any longer encoded text: the characters s alone decides */
static void add_b64(const unsigned char *s, size_t n, const char *alpha, const char *how)
{
    for (size_t k = 0; k < 3; k++) {
        size_t len = k + n;
        unsigned char *in = xmalloc(len);
        memset(in, 0, k);
        memcpy(in + k, s, n);
        size_t chars = (len * 8 + 5) / 6;
        char *out = xmalloc(chars + 1);
        for (size_t i = 0; i < chars; i++) {
            size_t bit = i * 6, v = 0;
            for (size_t b = 0; b < 6; b++) {
                size_t at = bit + b;
                int on = at / 8 < len ? (in[at / 8] >> (7 - at % 8)) & 1 : 0;
                v = (v << 1) | (size_t)on;
            }
            out[i] = alpha[v];
        }
        /* character i is s's alone when its 6 bits lie within s's bits */
        size_t first = (8 * k + 5) / 6, last = (8 * len) / 6; /* [first, last) */
        if (last > first)
            (void)add_form((unsigned char *)out + first, last - first, how);
        free(out);
        free(in);
    }
}

static void add_secret(const unsigned char *s, size_t n, bool text)
{
    static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    if (g.nsecrets == g.capsecrets) {
        g.capsecrets = g.capsecrets ? g.capsecrets * 2 : 256;
        g.secrets = realloc(g.secrets, g.capsecrets * sizeof *g.secrets);
        if (!g.secrets)
            exit(2);
    }
    char *mask = xmalloc(64);
    if (text)
        snprintf(mask, 64, "%.3s...%s (%zu bytes)", (const char *)s,
                 n > 12 ? (const char *)s + n - 3 : "", n);
    else
        snprintf(mask, 64, "%zu-byte key %02x%02x...", n, s[0], s[1]);
    g.secrets[g.nsecrets++] = mask;
    if (!add_form(s, n, "as is") && n >= W) {
        free(g.secrets[--g.nsecrets]); /* recorded twice (programs record independently) */
        return;
    }
    add_b64(s, n, std, "base64");
    add_b64(s, n, url, "base64url");
    unsigned char *buf = xmalloc(n * 3 + 1);
    for (int upper = 0; upper < 2; upper++) {
        const char *hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
            if (text && (isalnum(s[i]) || strchr("-._~", s[i]))) {
                buf[o++] = s[i];
            } else if (text) {
                buf[o++] = '%';
                buf[o++] = (unsigned char)hex[s[i] >> 4];
                buf[o++] = (unsigned char)hex[s[i] & 15];
            } else {
                buf[o++] = (unsigned char)hex[s[i] >> 4];
                buf[o++] = (unsigned char)hex[s[i] & 15];
            }
        }
        (void)add_form(buf, o, text ? "percent-encoded" : "hex");
    }
    free(buf);
    for (int slash = 0; text && slash < 2; slash++) {
        /* jansson leaves '/' alone, other encoders write "\/" */
        buf = xmalloc(n * 2 + 1);
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '"' || s[i] == '\\' || (slash && s[i] == '/'))
                buf[o++] = '\\';
            buf[o++] = s[i];
        }
        (void)add_form(buf, o, "JSON-escaped");
        free(buf);
    }
}

static int unhex(int c)
{
    return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

static void load_secrets(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len < 3 || line[1] != ' ')
            continue;
        size_t n = (size_t)len - 2;
        if (line[0] == 't') {
            add_secret((unsigned char *)line + 2, n, true);
        } else if (line[0] == 'x' && n % 2 == 0) {
            unsigned char *b = xmalloc(n / 2);
            for (size_t i = 0; i < n / 2; i++)
                b[i] = (unsigned char)(unhex(line[2 + 2 * i]) * 16 + unhex(line[3 + 2 * i]));
            add_secret(b, n / 2, false);
            free(b);
        }
    }
    free(line);
    fclose(f);
}

static void scan(const char *path, const unsigned char *p, size_t n)
{
    size_t line = 1;
    const unsigned char *nl = p;
    for (size_t i = W; i <= n; i++) {
        struct form *f = g.table[slot(key_of(p + i - W))];
        for (; f; f = f->next) {
            if (f->n > i || memcmp(p + i - f->n, f->p, f->n) != 0)
                continue;
            /* count lines only up to a hit: most logs have none */
            for (; nl < p + i - f->n; nl++)
                line += *nl == '\n';
            g.hits++;
            /* the first line of each secret in each file: enough to find the culprit */
            if (f->seen_in != g.files + 1 && g.reports++ < MAX_REPORTS)
                printf("LEAK %s:%zu: secret %s, %s\n", path, line, g.secrets[f->secret], f->how);
            f->seen_in = g.files + 1;
        }
    }
}

static int scan_file(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F || !S_ISREG(sb->st_mode) || sb->st_size == 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "logs_clean: cannot read %s: %s\n", path, strerror(errno));
        return 0;
    }
    size_t n = (size_t)sb->st_size;
    void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    scan(path, m, n);
    munmap(m, n);
    g.files++;
    g.bytes += n;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: logs_clean SECRETS_FILE DIR...\n");
        return 2;
    }
    g.tsize = 1u << 16;
    g.table = calloc(g.tsize, sizeof *g.table);
    if (!g.table)
        return 2;
    load_secrets(argv[1]);
    for (int i = 2; i < argc; i++)
        if (access(argv[i], F_OK) == 0)
            nftw(argv[i], scan_file, 16, FTW_PHYS);
    if (g.nsecrets == 0 || g.files == 0) {
        printf("logs_clean: nothing to check (%zu secrets recorded in %s, %zu log files): "
               "run the whole suite, or the tests with this one, to check their logs\n",
               g.nsecrets, argv[1], g.files);
        return 0;
    }
    printf("logs_clean: %zu secrets (%zu forms) looked for in %zu log files (%.1f MB): ",
           g.nsecrets, g.nforms, g.files, (double)g.bytes / 1e6);
    if (g.hits == 0) {
        printf("none found\n");
        return 0;
    }
    printf("found %zu times (above: the first line of each secret in each file%s)\n", g.hits,
           g.reports > MAX_REPORTS ? ", the first " MAX_REPORTS_TEXT : "");
    return 1;
}
