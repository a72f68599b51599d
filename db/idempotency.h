/*
 * idempotency.h - remembered answers to creating requests that carried an
 * Idempotency-Key, per user. The answer is stored in the same transaction as
 * the creation, so a key is remembered exactly when its effect happened.
 */
#ifndef AIDC_DB_IDEMPOTENCY_H
#define AIDC_DB_IDEMPOTENCY_H

#include "db.h"

struct idem_hit {
    int found;
    char request_hash[65];
    int status;
    char *response;
    char *location;
    char *resource_type; /* what the request changed (for the replay's audit), or NULL */
    char *resource_id;
};

/*
 * Look up key of user_id inside the request transaction, first taking a
 * transaction-scoped lock on it: concurrent requests with one key run one
 * after the other.
 */
int db_idem_get(struct db *db, const char *user_id, const char *key, struct idem_hit *out);
void db_idem_hit_free(struct idem_hit *h);
/* An answer to remember: its status, sealed body and Location, and what the
 * request changed (NULL when nothing in particular). */
struct db_idem_answer {
    int status;
    const char *response;
    const char *location;
    const char *resource_type;
    const char *resource_id;
};

/* Queue the remembering of an answer (commits with the request). */
int db_idem_put(struct db *db, const char *user_id, const char *key, const char *request_hash,
                const struct db_idem_answer *a, int ttl_seconds);

extern const struct db_stmt *const db_idempotency_stmts[];

#endif
