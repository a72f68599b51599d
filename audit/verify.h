/*
 * verify.h - checking the audit chain in the database: every hash is
 * recomputed from the event as stored, every link and every signed
 * checkpoint checked, holes accepted only where retention recorded them.
 * The first broken link is named by event id.
 */
#ifndef AIDC_AUDIT_VERIFY_H
#define AIDC_AUDIT_VERIFY_H

#include "sign.h"

#include <jansson.h>
#include <stdbool.h>

struct db;

struct audit_verdict {
    bool ok;
    long long verified;      /* chain entries checked */
    long long checkpoints;   /* signed checkpoints checked */
    long long unsigned_checkpoints;
    long long unsealed;      /* events waiting for the sealer */
    long long first_seq, last_seq;
    long long broken_at;     /* event id (0: none known) */
    long long broken_seq;
    long long checkpoint_id; /* the checkpoint that failed, if one did */
    char reason[300];
};

/* Where verification reads: db, and how to open a transaction there whose actor may
 * read the audit log (called before each batch; each is committed after it). */
struct audit_verify_io {
    struct db *db;
    int (*begin)(struct db *db, void *arg);
    void *arg;
};

/*
 * Verify the chain entries of events written in [from, to) (NULL: open).
 * key NULL: signatures are not checked (reported). Returns 0 (the verdict is
 * in v) or an aidc_err.
 */
int audit_verify(const struct audit_verify_io *io, const struct sign_key *key, const char *from,
                 const char *to, struct audit_verdict *v);

/* The verdict as GET /api/v1/audit/verify answers it. */
json_t *audit_verdict_json(const struct audit_verdict *v);

#endif
