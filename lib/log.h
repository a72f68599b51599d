/*
 * log.h - JSON-lines logging on stderr.
 *
 * One line per event, written with a single write(2) so lines from different
 * threads never interleave. Every line carries the request id and tenant of the
 * request the calling thread is serving (log_set_request), if any. Never log
 * tokens, passwords or request bodies.
 */
#ifndef AIDC_LOG_H
#define AIDC_LOG_H

#include <stdbool.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* Set the minimum level written (called once at start). */
void log_set_level(enum log_level level);
/* Parse "debug|info|warn|error"; returns false for anything else. */
bool log_level_parse(const char *s, enum log_level *out);
bool log_enabled(enum log_level level);

/* Bind the calling thread's log lines to a request (NULLs clear it). */
void log_set_request(const char *request_id, const char *tenant);

void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...)                                                                             \
    do {                                                                                           \
        if (log_enabled(LOG_DEBUG))                                                                \
            log_write(LOG_DEBUG, __VA_ARGS__);                                                     \
    } while (0)
#define log_info(...)                                                                              \
    do {                                                                                           \
        if (log_enabled(LOG_INFO))                                                                 \
            log_write(LOG_INFO, __VA_ARGS__);                                                      \
    } while (0)
#define log_warn(...)                                                                              \
    do {                                                                                           \
        if (log_enabled(LOG_WARN))                                                                 \
            log_write(LOG_WARN, __VA_ARGS__);                                                      \
    } while (0)
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)

/*
 * Write a line that already is a JSON object body (without braces), e.g. the
 * access log: `"msg":"request","method":"GET",...`. The level, ts and request
 * fields are added in front.
 */
void log_write_fields(enum log_level level, const char *fields);

/* Current UTC time as RFC 3339 with milliseconds into buf (>= 32 bytes). */
void log_timestamp(char *buf, unsigned long size);

#endif
