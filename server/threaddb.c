/* threaddb.c - per-thread database connections (see threaddb.h). */
#include "threaddb.h"

#include "../db/db.h"
#include "../lib/config.h"

#include <pthread.h>
#include <stdlib.h>

static const struct config *g_cfg; /* configuration: read-only after start */
static pthread_key_t primary_key, read_key;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void key_destroy(void *p)
{
    db_close(p);
}

static void keys_init(void)
{
    if (pthread_key_create(&primary_key, key_destroy) != 0 ||
        pthread_key_create(&read_key, key_destroy) != 0)
        abort();
}

void threaddb_init(const struct config *cfg)
{
    g_cfg = cfg;
    pthread_once(&keys_once, keys_init);
}

static struct db *get(pthread_key_t key, const char *url, const char *name, enum db_pool pool)
{
    struct db *db = pthread_getspecific(key);
    if (!db) {
        db = db_open(url, name);
        db_set_statement_timeout(db, g_cfg->db_statement_timeout_ms);
        db_set_txpool(db, g_cfg->db_txpool);
        db_set_pool(db, pool);
        if (pthread_setspecific(key, db) != 0)
            abort();
    }
    return db;
}

struct db *threaddb_primary(void)
{
    return get(primary_key, g_cfg->database_url, "aidcd", DB_POOL_PRIMARY);
}

struct db *threaddb_read(void)
{
    if (!g_cfg->read_database_url[0])
        return NULL;
    return get(read_key, g_cfg->read_database_url, "aidcd-read", DB_POOL_READ);
}
