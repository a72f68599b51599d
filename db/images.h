/*
 * images.h - registries and image metadata: what the images and registries
 * routes, the registry sync worker and job submission read and write.
 */
#ifndef AIDC_DB_IMAGES_H
#define AIDC_DB_IMAGES_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

extern const struct db_stmt *const db_images_stmts[];

/* ---- registries ---- */
int db_registry_create(struct db *db, const char *name, const char *url, const char *host,
                       const char *credref, const char *options_json, json_t **out);
/* Up to limit+1 registries with name > after, by name; keyed by name. */
int db_registry_list(struct db *db, const char *after, int limit, struct db_rows *out);
int db_registry_get(struct db *db, const char *name, json_t **out);
/* Ask for a sync of name (AIDC_ENOTFOUND when there is no such registry). */
int db_registry_request_sync(struct db *db, const char *name, json_t **out);
/* A registry claimed for a sync. */
struct db_registry_claim {
    char id[37];
    char *name, *url, *credentials_ref;
    char *options_json; /* its options, as JSON text */
    char owner[37];     /* the claim's token: progress and finish name it */
};
/*
 * Claim one registry whose sync is asked for, or due (every_s > 0: last
 * sync older than that), and not running elsewhere (or running with a heartbeat
 * older than stale_s). *claimed false when there is none. Free out with
 * db_registry_claim_free (also when nothing was claimed, or after a failure).
 */
int db_registry_claim(struct db *db, int every_s, int stale_s, struct db_registry_claim *out,
                      bool *claimed);
void db_registry_claim_free(struct db_registry_claim *c);
/* Forget the syncs in progress (their replica is gone): they start over. */
int db_registry_release(struct db *db);
/* The running sync of owner (AIDC_ENOTFOUND: it is not owner's any more). */
int db_registry_progress(struct db *db, const char *id, const char *owner,
                         const char *progress_json);
int db_registry_finish(struct db *db, const char *id, const char *owner, bool ok,
                       const char *report_json);

/* ---- images ---- */
struct db_image_filter {
    const char *tenant_id;  /* only public images and this tenant's (NULL: all visible) */
    bool tenant_only;       /* ... only this tenant's */
    const char *visibility; /* "public" | "tenant" | NULL */
    const char *q;          /* substring of repository:tag or a label value */
    const char *labels;     /* JSON object the labels must contain */
    const char *registry;   /* registry name */
    const char *after;      /* cursor: "repository:tag" */
    const char *after_id;
    int limit;
};
/* Up to f->limit+1 images, keyed by "repository:tag|id". */
int db_image_list(struct db *db, const struct db_image_filter *f, struct db_rows *out);
int db_image_get(struct db *db, const char *tenant_id, const char *id, json_t **out);
/*
 * The tenant's image storage (bytes of its live images) and its storage_gib
 * limit (*has_limit false: none), under a lock that serialises registrations.
 */
int db_image_storage(struct db *db, const char *tenant_id, long long *used_bytes, double *limit_gib,
                     bool *has_limit);
struct db_image_new {
    const char *tenant_id, *registry_id, *repository, *tag, *digest, *size_bytes;
    const char *labels_json, *media_type, *created_by;
    bool immutable;
};
int db_image_create(struct db *db, const struct db_image_new *im, json_t **out);
/*
 * An image to change: whether immutable, synced, and who registered it. Read
 * first without lock (row-level security hides another member's image from
 * FOR UPDATE), then with lock once the change is allowed.
 */
struct db_image_lock {
    bool immutable, synced;
    char created_by[37]; /* "" when the sync found it */
};
int db_image_lock(struct db *db, const char *tenant_id, const char *id, bool lock,
                  struct db_image_lock *l);
/* Change what is given (NULL: keep). */
int db_image_update(struct db *db, const char *id, const char *labels_json, bool immutable,
                    const char *tag, const char *digest, json_t **out);
int db_image_delete(struct db *db, const char *id);
/* A registry by name: its id and host. */
int db_image_registry(struct db *db, const char *name, char id[37], char *host, size_t hostsz,
                      char **options_json);

/* A registry's name and options: how it maps repositories to owners. */
struct db_registry_mapping {
    char *name;
    char *options_json; /* JSON text */
};
struct db_registry_mappings {
    struct db_registry_mapping *v;
    size_t n;
};
/* Every registry's mapping, by name. Free with db_registry_mappings_free (also after a failure). */
int db_registry_mappings(struct db *db, struct db_registry_mappings *out);
void db_registry_mappings_free(struct db_registry_mappings *m);

/* ---- sync ---- */
/* A live image of a registry, as a sync compares it with the registry's answer. */
struct db_sync_image {
    char id[37];
    char *repository, *tag, *digest;
    bool immutable;
    bool gone; /* flagged as deleted upstream */
};
struct db_sync_images {
    struct db_sync_image *v;
    size_t n;
};
/* Live images of a registry. Free with db_sync_images_free (also after a failure). */
int db_sync_known(struct db *db, const char *registry_id, struct db_sync_images *out);
void db_sync_images_free(struct db_sync_images *im);
/* A tenant that may own repositories. */
struct db_sync_tenant {
    char id[37];
    char *slug;
};
struct db_sync_tenants {
    struct db_sync_tenant *v;
    size_t n;
};
/* Every tenant not deleted. Free with db_sync_tenants_free (also after a failure). */
int db_sync_tenants(struct db *db, struct db_sync_tenants *out);
void db_sync_tenants_free(struct db_sync_tenants *t);
int db_sync_insert(struct db *db, const struct db_image_new *im, bool public_image);
int db_sync_update(struct db *db, const char *id, const char *digest, const char *size_bytes,
                   const char *labels_json, const char *media_type);
int db_sync_restore(struct db *db, const char *id);
/* Flag images not found upstream ("{uuid,...}"); *n how many were newly flagged. */
int db_sync_gone(struct db *db, const char *ids_array, long *n);
/* A tenant whose images exceed its storage_gib quota. */
struct db_storage_over {
    char *slug;
    long long used_bytes;
    double limit_gib;
    bool newly; /* it was not over at the last sync */
};
struct db_storage_overs {
    struct db_storage_over *v;
    size_t n;
};
/*
 * Set or clear tenants' storage flags; *out the tenants over their quota, by
 * slug. Free with db_storage_overs_free (also after a failure).
 */
int db_sync_storage(struct db *db, struct db_storage_overs *out);
void db_storage_overs_free(struct db_storage_overs *o);

/* ---- jobs ---- */
/*
 * Images of tenant_id's visibility matching a reference (tag and/or digest;
 * host NULL: any registry): id, digest, host, repository, tag, gone, registry,
 * public (bool); the tenant's own first, live before gone. Up to 10 rows.
 */
int db_image_resolve(struct db *db, const char *tenant_id, const char *repository, const char *tag,
                     const char *digest, const char *host, PGresult **out);
/* An image a reference matches (rows of db_image_resolve, typed). */
struct db_image_match {
    char id[37];
    char *digest, *repository, *tag;
    char *host, *registry; /* NULL: of no registry */
    bool gone;             /* deleted upstream */
    bool public_image;
};
struct db_image_matches {
    struct db_image_match *v;
    size_t n;
};
/*
 * As db_image_resolve, typed; for api/jobs.c, which then no longer needs
 * db_image_resolve. Free with db_image_matches_free (also after a failure).
 */
int db_image_matches(struct db *db, const char *tenant_id, const char *repository, const char *tag,
                     const char *digest, const char *host, struct db_image_matches *out);
void db_image_matches_free(struct db_image_matches *m);
/* Send db_image_matches' statement ahead (db_prefetch). */
void db_image_matches_prefetch(struct db *db, const char *tenant_id, const char *repository,
                               const char *tag, const char *digest, const char *host);

#endif
