/*
 * err.h - the one status convention of aidc.
 *
 * Functions that can fail return int: 0 on success, a negative enum aidc_err
 * on failure. Constructors return a pointer or NULL; predicates return bool.
 */
#ifndef AIDC_ERR_H
#define AIDC_ERR_H

enum aidc_err {
    AIDC_OK = 0,
    AIDC_EINVAL = -1,     /* bad input from a caller or a client */
    AIDC_ENOTFOUND = -2,  /* no such object (or not visible to the actor) */
    AIDC_ECONFLICT = -3,  /* unique key or state conflict */
    AIDC_EFORBIDDEN = -4, /* authenticated but not allowed */
    AIDC_EUNAVAIL = -5,   /* a dependency (the database) is down: retry later */
    AIDC_ERETRY = -6,     /* serialization failure or deadlock: run the transaction again */
    AIDC_EINTERNAL = -7,  /* a bug or an unexpected answer: logged, 500 */
    AIDC_EIO = -8,        /* a file or socket operation failed */
    AIDC_ETOOBIG = -9,    /* a size limit was exceeded */
    AIDC_ESTALE = -10,    /* the remembered actor changed: load it again and retry */
};

/* A short lowercase name for an error code, for logs. */
const char *aidc_err_name(int err);

#endif
