/* pgerr.c - what PostgreSQL's errors and notices mean to aidc (see pgerr.h). */
#include "pgerr.h"

#include "../lib/err.h"
#include "../lib/log.h"

#include <stdbool.h>
#include <string.h>

int pgerr_map(const char *st)
{
    if (!st[0])
        return AIDC_EUNAVAIL;
    if (strcmp(st, "23505") == 0 || strcmp(st, "23503") == 0 || strcmp(st, "23P01") == 0)
        return AIDC_ECONFLICT;
    if (strcmp(st, "40001") == 0 || strcmp(st, "40P01") == 0)
        return AIDC_ERETRY;
    if (strcmp(st, "42501") == 0)
        return AIDC_EFORBIDDEN;
    if (strncmp(st, "22", 2) == 0 || strcmp(st, "23514") == 0 || strcmp(st, "23502") == 0)
        return AIDC_EINVAL;
    if (strncmp(st, "08", 2) == 0 || strncmp(st, "57P", 3) == 0 || strcmp(st, "53300") == 0)
        return AIDC_EUNAVAIL;
    return AIDC_EINTERNAL;
}

/* Server notices go to the log as JSON lines (libpq would print them raw on stderr). */
void pgerr_notice(void *arg, const PGresult *r)
{
    (void)arg;
    const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    bool warning = sev && strcmp(sev, "WARNING") == 0;
    if (warning)
        log_warn("database: %s", msg ? msg : "(no message)");
    else
        log_debug("database %s: %s", sev ? sev : "notice", msg ? msg : "(no message)");
}
