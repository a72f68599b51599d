/*
 * threaddb.h - the database connections of an HTTP worker thread: one to the
 * primary (AIDC_DATABASE_URL) and, when configured, one to the read replica
 * (AIDC_READ_DATABASE_URL), each opened on first use and closed with the
 * thread. A thread serves one request at a time, so its connections need no
 * pool and no lock.
 */
#ifndef AIDC_THREADDB_H
#define AIDC_THREADDB_H

struct config;
struct db;

/* Remember the settings (read-only afterwards). Call once before the first request. */
void threaddb_init(const struct config *cfg);
/* This thread's connection to the primary. */
struct db *threaddb_primary(void);
/* This thread's connection to the read replica (NULL when none is configured). */
struct db *threaddb_read(void);

#endif
