/*
 * log.c - JSON-lines logger. The level is configuration (set once at start);
 * the request binding is thread-local, so no lock is needed.
 */
#include "log.h"

#include "sbuf.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static atomic_int min_level = LOG_INFO;
static _Thread_local const char *cur_request_id;
static _Thread_local const char *cur_tenant;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    atomic_store(&min_level, (int)level);
}

bool log_level_parse(const char *s, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return true;
        }
    }
    return false;
}

bool log_enabled(enum log_level level)
{
    return (int)level >= atomic_load(&min_level);
}

void log_set_request(const char *request_id, const char *tenant)
{
    cur_request_id = request_id;
    cur_tenant = tenant;
}

void log_timestamp(char *buf, unsigned long size)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

static void emit(enum log_level level, struct sbuf *line)
{
    sbuf_puts(line, "}\n");
    const char *p = sbuf_str(line);
    size_t left = line->len;
    while (left > 0) {
        ssize_t w = write(STDERR_FILENO, p, left);
        if (w <= 0)
            break;
        p += w;
        left -= (size_t)w;
    }
    (void)level;
}

static void head(struct sbuf *line, enum log_level level)
{
    char ts[40];
    log_timestamp(ts, sizeof ts);
    sbuf_printf(line, "{\"ts\":\"%s\",\"level\":\"%s\"", ts, level_names[level]);
    if (cur_request_id) {
        sbuf_puts(line, ",\"request_id\":");
        sbuf_json_str(line, cur_request_id);
    }
    if (cur_tenant) {
        sbuf_puts(line, ",\"tenant\":");
        sbuf_json_str(line, cur_tenant);
    }
}

void log_write(enum log_level level, const char *fmt, ...)
{
    struct sbuf msg = SBUF_INIT, line = SBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    sbuf_vprintf(&msg, fmt, ap);
    va_end(ap);
    head(&line, level);
    sbuf_puts(&line, ",\"msg\":");
    sbuf_json_str(&line, sbuf_str(&msg));
    emit(level, &line);
    sbuf_free(&msg);
    sbuf_free(&line);
}

void log_write_fields(enum log_level level, const char *fields)
{
    if (!log_enabled(level))
        return;
    struct sbuf line = SBUF_INIT;
    head(&line, level);
    sbuf_putc(&line, ',');
    sbuf_puts(&line, fields);
    emit(level, &line);
    sbuf_free(&line);
}
