/*
 * pgerr.h - what PostgreSQL's answers mean to aidc: an SQLSTATE as an
 * aidc_err (unique violation: conflict, serialization failure: retry, lost
 * connection: unavailable, ...), and server notices written to the log.
 */
#ifndef AIDC_PGERR_H
#define AIDC_PGERR_H

#include <libpq-fe.h>

/* The aidc_err of an SQLSTATE ("" = no answer at all: unavailable). */
int pgerr_map(const char *sqlstate);
/* A libpq notice receiver: notices as JSON log lines (libpq would print them raw). */
void pgerr_notice(void *arg, const PGresult *r);

#endif
