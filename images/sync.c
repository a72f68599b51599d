/* sync.c - bringing the images table in line with a registry (see sync.h). */
#include "sync.h"

#include "../lib/imgref.h"

#include "../audit/audit.h"
#include "../db/db.h"
#include "../db/images.h"
#include "../db/worker.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "registry.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_ulong syncs_ok, syncs_failed;

/* a round looks for due registries this often (a request wakes it at once) */
#define INTERVAL_MS 15000
/* entries of each list in a report; the counts stay exact */
#define REPORT_CHANGES 200
#define REPORT_PROBLEMS 100

static const struct db_ctx system_ctx = {.roles = "system"};

/* ---- options --------------------------------------------------------------------------- */

static bool prefix_valid(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > 128 || p[n - 1] != '/')
        return false;
    char *copy = xstrndup(p, n - 1);
    bool ok = imgref_repository_valid(copy);
    free(copy);
    return ok;
}

bool regsync_options_valid(const json_t *options, char *msg, size_t msgsz)
{
    static const char *const known[] = {"public_prefixes", "tenant_prefix", "page_size",
                                        "timeout_seconds"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)options, k, v) {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0] && !ok; i++)
            ok = strcmp(k, known[i]) == 0;
        if (!ok) {
            snprintf(msg, msgsz, "unknown option \"%.64s\" (public_prefixes, tenant_prefix, "
                                 "page_size, timeout_seconds)", k);
            return false;
        }
    }
    json_t *pp = json_object_get(options, "public_prefixes");
    if (pp && (!json_is_array(pp) || json_array_size(pp) > 32)) {
        snprintf(msg, msgsz, "public_prefixes must be an array of at most 32 prefixes");
        return false;
    }
    size_t i;
    json_array_foreach(pp, i, v) {
        if (!json_is_string(v) || !prefix_valid(json_string_value(v))) {
            snprintf(msg, msgsz, "public_prefixes[%zu] must be repository path components "
                                 "ending in '/' (\"library/\")", i);
            return false;
        }
    }
    json_t *tp = json_object_get(options, "tenant_prefix");
    if (tp && !(json_is_string(tp) &&
                (!json_string_value(tp)[0] || prefix_valid(json_string_value(tp))))) {
        snprintf(msg, msgsz, "tenant_prefix must be \"\" or path components ending in '/' "
                             "(\"teams/\")");
        return false;
    }
    json_t *ps = json_object_get(options, "page_size");
    if (ps && (!json_is_integer(ps) || json_integer_value(ps) < 1 ||
               json_integer_value(ps) > 1000)) {
        snprintf(msg, msgsz, "page_size must be an integer from 1 to 1000");
        return false;
    }
    json_t *ts = json_object_get(options, "timeout_seconds");
    if (ts && (!json_is_integer(ts) || json_integer_value(ts) < 1 ||
               json_integer_value(ts) > 300)) {
        snprintf(msg, msgsz, "timeout_seconds must be an integer from 1 to 300");
        return false;
    }
    return true;
}

bool regsync_owner(const json_t *options, const char *repository, bool *public_repo, char *slug,
                   size_t slugsz)
{
    *public_repo = false;
    slug[0] = '\0';
    json_t *pp = json_object_get(options, "public_prefixes");
    static const char *const default_public = "library/";
    if (!pp) {
        if (strncmp(repository, default_public, strlen(default_public)) == 0)
            return *public_repo = true;
    }
    size_t i;
    json_t *v;
    json_array_foreach(pp, i, v) {
        const char *p = json_string_value(v);
        if (p && strncmp(repository, p, strlen(p)) == 0)
            return *public_repo = true;
    }
    const char *tp = json_string_value(json_object_get(options, "tenant_prefix"));
    size_t tl = tp ? strlen(tp) : 0;
    if (tl && strncmp(repository, tp, tl) != 0)
        return false;
    const char *rest = repository + tl;
    const char *slash = strchr(rest, '/');
    if (!slash || (size_t)(slash - rest) >= slugsz)
        return false;
    memcpy(slug, rest, (size_t)(slash - rest));
    slug[slash - rest] = '\0';
    return true;
}

/* ---- one sync ------------------------------------------------------------------------------- */

struct run {
    struct db *db;
    struct regclient *rc;
    const char *registry_id, *registry_name, *owner;
    const json_t *options;
    json_t *known;   /* repo -> tag -> {id, digest, immutable, gone, seen} */
    json_t *tenants; /* slug -> id */
    json_t *report;
    json_t *changes, *problems;
    long added, updated, unchanged, restored, conflicts, skipped, errors, tags;
    time_t last_progress;
    size_t repos_done, repos_total;
    bool lost; /* another replica took the sync over (a stale heartbeat): stop */
};

/*
 * A registry's text as a JSON string: as it is when it is UTF-8, else with
 * every non-ASCII byte a '?' (a cut message must not lose the whole entry);
 * at most 300 bytes.
 */
static json_t *text(const char *s)
{
    if (!s)
        return json_null();
    size_t n = strnlen(s, 300);
    json_t *v = json_stringn(s, n);
    if (v)
        return v;
    char *copy = xstrndup(s, n);
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80 || (unsigned char)*p < ' ')
            *p = '?';
    v = json_string(copy);
    free(copy);
    return v;
}

static void count_change(struct run *r, const char *change, const char *repo, const char *tag,
                         const char *digest, const char *previous)
{
    if (json_array_size(r->changes) < REPORT_CHANGES)
        json_array_append_new(r->changes,
                              json_pack("{s:s, s:o, s:o, s:s?, s:s?}", "change", change,
                                        "repository", text(repo), "tag", text(tag), "digest",
                                        digest, "previous_digest", previous));
}

static void problem(struct run *r, const char *repo, const char *tag, const char *msg)
{
    if (json_array_size(r->problems) < REPORT_PROBLEMS)
        json_array_append_new(r->problems, json_pack("{s:o, s:o, s:o}", "repository", text(repo),
                                                     "tag", text(tag), "message", text(msg)));
}

/* A write in a short transaction of its own (progress is kept if the sync dies). */
typedef int (*write_fn)(struct db *db, const void *arg);

static int in_tx(struct db *db, write_fn fn, const void *arg)
{
    int e = db_begin(db, &system_ctx, false);
    if (!e)
        e = fn(db, arg);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    return e;
}

struct found {
    const char *id; /* known image, or NULL */
    struct db_image_new im;
    bool public_image;
};

static int write_found(struct db *db, const void *arg)
{
    const struct found *f = arg;
    if (f->id)
        return db_sync_update(db, f->id, f->im.digest, f->im.size_bytes, f->im.labels_json,
                              f->im.media_type);
    return db_sync_insert(db, &f->im, f->public_image);
}

static int write_restore(struct db *db, const void *arg)
{
    return db_sync_restore(db, arg);
}

/* Size and labels of the image at digest (an index: all its platforms). */
static int inspect(struct run *r, const char *repo, const char *digest, long long *size,
                   json_t **labels, char *media_type, size_t mtsz, char *err, size_t errsz)
{
    struct manifest m;
    char got[IMAGE_DIGEST_LEN + 1];
    int e = registry_manifest(r->rc, repo, digest, &m, got, err, errsz);
    if (e)
        return e;
    snprintf(media_type, mtsz, "%s", m.media_type);
    *labels = NULL;
    if (!m.index) {
        *size = m.size;
        e = registry_config_labels(r->rc, repo, m.config_digest, labels, err, errsz);
        manifest_free(&m);
        return e;
    }
    *size = 0;
    char platforms[512] = "";
    for (size_t i = 0; i < m.nchildren && !e; i++) {
        if (!m.children[i].platform[0])
            continue; /* attestations and other artifacts: not runnable */
        struct manifest child;
        e = registry_manifest(r->rc, repo, m.children[i].digest, &child, got, err, errsz);
        if (!e && child.index) {
            snprintf(err, errsz, "%s@%s: an index inside an index", repo, m.children[i].digest);
            e = AIDC_EINVAL;
        }
        if (!e && *size + child.size > (1LL << 50)) {
            snprintf(err, errsz, "%s@%s: the index's platforms add up to an impossible size", repo,
                     digest);
            e = AIDC_EINVAL;
        }
        if (!e) {
            *size += child.size;
            size_t pl = strlen(platforms);
            snprintf(platforms + pl, sizeof platforms - pl, "%s%s", pl ? "," : "",
                     m.children[i].platform);
            /* the labels of the first platform stand for the image */
            if (!*labels)
                e = registry_config_labels(r->rc, repo, child.config_digest, labels, err, errsz);
        }
        manifest_free(&child);
    }
    if (!e && !*labels) {
        snprintf(err, errsz, "%s@%s: the index names no platform image", repo, digest);
        e = AIDC_EINVAL;
    }
    if (!e)
        json_object_set_new(*labels, "platforms", json_string(platforms));
    manifest_free(&m);
    if (e) {
        json_decref(*labels);
        *labels = NULL;
    }
    return e;
}

/* One tag of repo, owned by tenant_id (NULL: public). */
static void sync_tag(struct run *r, const char *repo, const char *tag, const char *tenant_id)
{
    json_t *k = json_object_get(json_object_get(r->known, repo), tag);
    if (k)
        json_object_set_new(k, "seen", json_true());
    char digest[IMAGE_DIGEST_LEN + 1], err[512];
    int e = registry_digest(r->rc, repo, tag, digest, err, sizeof err);
    if (e) {
        r->errors++;
        problem(r, repo, tag, err);
        return;
    }
    const char *kid = json_string_value(json_object_get(k, "id"));
    const char *kdigest = json_string_value(json_object_get(k, "digest"));
    if (k && strcmp(kdigest, digest) == 0) {
        if (!json_is_true(json_object_get(k, "gone"))) {
            r->unchanged++;
        } else if (in_tx(r->db, write_restore, kid) == 0) {
            r->restored++;
            count_change(r, "restored", repo, tag, digest, NULL);
        } else {
            r->errors++;
            problem(r, repo, tag, "the database refused the change");
        }
        return;
    }
    if (k && json_is_true(json_object_get(k, "immutable"))) {
        r->conflicts++;
        count_change(r, "conflict", repo, tag, digest, kdigest);
        return;
    }
    long long size = 0;
    json_t *labels = NULL;
    char mt[128];
    e = inspect(r, repo, digest, &size, &labels, mt, sizeof mt, err, sizeof err);
    if (e) {
        r->errors++;
        problem(r, repo, tag, err);
        return;
    }
    char sz[24];
    snprintf(sz, sizeof sz, "%lld", size);
    char *lj = json_dumps(labels, JSON_COMPACT);
    json_decref(labels);
    struct found f = {.id = kid,
                      .public_image = !tenant_id,
                      .im = {.tenant_id = tenant_id, .registry_id = r->registry_id,
                             .repository = repo, .tag = tag, .digest = digest, .size_bytes = sz,
                             .labels_json = lj, .media_type = mt}};
    e = lj ? in_tx(r->db, write_found, &f) : AIDC_EINTERNAL;
    free(lj);
    if (e) {
        r->errors++;
        problem(r, repo, tag, e == AIDC_ECONFLICT ? "an image of this reference exists already"
                                                  : "the database refused the image");
    } else if (k) {
        r->updated++;
        count_change(r, "updated", repo, tag, digest, kdigest);
    } else {
        r->added++;
        count_change(r, "added", repo, tag, digest, NULL);
    }
}

/*
 * Settle the known images of one repository's tags: those not seen now are gone
 * upstream (ids appended to gone; NULL: nothing is known about them, keep them).
 */
static void settle(json_t *tags, json_t *gone)
{
    const char *tag;
    json_t *k;
    json_object_foreach(tags, tag, k) {
        if (gone && !json_is_true(json_object_get(k, "seen")) &&
            !json_is_true(json_object_get(k, "gone")))
            json_array_append(gone, json_object_get(k, "id"));
        json_object_set_new(k, "seen", json_true());
    }
}

/* After the whole catalog: repositories not in it any more are gone. */
static void collect_gone(struct run *r, json_t *gone)
{
    const char *repo;
    json_t *tags;
    json_object_foreach(r->known, repo, tags) settle(tags, gone);
}

struct progress_arg {
    const char *id, *owner, *json;
};

static int write_progress(struct db *db, const void *arg)
{
    const struct progress_arg *a = arg;
    return db_registry_progress(db, a->id, a->owner, a->json);
}

/* Progress and heartbeat, every few seconds (force: now). */
static void progress(struct run *r, bool force)
{
    time_t now = time(NULL);
    if (!force && now - r->last_progress < 2)
        return;
    r->last_progress = now;
    json_t *p = json_pack("{s:I, s:I, s:I, s:I}", "repositories_done", (json_int_t)r->repos_done,
                          "repositories_total", (json_int_t)r->repos_total, "tags_seen",
                          (json_int_t)r->tags, "errors", (json_int_t)r->errors);
    char *js = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    struct progress_arg a = {r->registry_id, r->owner, js};
    int e = js ? in_tx(r->db, write_progress, &a) : AIDC_EINTERNAL;
    if (e == AIDC_ENOTFOUND) {
        log_warn("registry %s: another aidcd took this sync over (no heartbeat for %d s): "
                 "stopping", r->registry_name, SYNC_STALE_SECONDS);
        r->lost = true;
    } else if (e) {
        log_warn("registry %s: cannot record sync progress", r->registry_name);
    }
    free(js);
}

/* One repository: its tags, each synced; its vanished tags into gone. */
static void sync_repo(struct run *r, const char *repo, json_t *gone)
{
    bool pub = false;
    char slug[64];
    const char *tenant_id = NULL;
    json_t *known = json_object_get(r->known, repo);
    if (!imgref_repository_valid(repo)) {
        r->skipped++;
        problem(r, repo, NULL, "not a valid repository name: skipped");
        return;
    }
    if (!regsync_owner(r->options, repo, &pub, slug, sizeof slug) ||
        (!pub && !(tenant_id = json_string_value(json_object_get(r->tenants, slug))))) {
        r->skipped++;
        problem(r, repo, NULL, "under no public prefix and no tenant's prefix: skipped");
        settle(known, NULL); /* still there upstream: not gone */
        return;
    }
    json_t *tags = NULL;
    char err[512];
    int e = registry_tags(r->rc, repo, &tags, err, sizeof err);
    if (e == AIDC_ENOTFOUND) { /* listed in the catalog, but no tags any more */
        tags = json_array();
        e = 0;
    }
    if (e) {
        r->errors++;
        problem(r, repo, NULL, err);
        settle(known, NULL); /* its images stay as they are: nothing is known about them */
        return;
    }
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t) {
        const char *tag = json_string_value(t);
        if (r->lost)
            break;
        progress(r, false);
        r->tags++;
        if (!imgref_tag_valid(tag)) {
            r->skipped++;
            problem(r, repo, tag, "not a valid tag: skipped");
            continue;
        }
        sync_tag(r, repo, tag, tenant_id);
    }
    json_decref(tags);
    settle(known, r->lost ? NULL : gone);
}

/* A read of the sync: in a transaction of the system's context (row-level security). */
static int system_read(struct db *db, int (*fn)(struct db *, void *), void *arg)
{
    int e = db_begin(db, &system_ctx, false);
    if (!e)
        e = fn(db, arg);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    return e;
}

struct known_read {
    const char *registry_id;
    struct db_sync_images images;
};

static int read_known(struct db *db, void *arg)
{
    struct known_read *k = arg;
    return db_sync_known(db, k->registry_id, &k->images);
}

static json_t *load_known(struct db *db, const char *registry_id)
{
    struct known_read k = {.registry_id = registry_id};
    if (system_read(db, read_known, &k) != 0) {
        db_sync_images_free(&k.images);
        return NULL;
    }
    json_t *m = json_object();
    for (size_t i = 0; i < k.images.n; i++) {
        const struct db_sync_image *im = &k.images.v[i];
        json_t *tags = json_object_get(m, im->repository);
        if (!tags) {
            tags = json_object();
            json_object_set_new(m, im->repository, tags);
        }
        json_object_set_new(tags, im->tag,
                            json_pack("{s:s, s:s, s:b, s:b, s:b}", "id", im->id, "digest",
                                      im->digest, "immutable", im->immutable, "gone", im->gone,
                                      "seen", 0));
    }
    db_sync_images_free(&k.images);
    return m;
}

static int read_tenants(struct db *db, void *arg)
{
    return db_sync_tenants(db, arg);
}

static json_t *load_tenants(struct db *db)
{
    struct db_sync_tenants t = {0};
    if (system_read(db, read_tenants, &t) != 0) {
        db_sync_tenants_free(&t);
        return NULL;
    }
    json_t *m = json_object();
    for (size_t i = 0; i < t.n; i++)
        json_object_set_new(m, t.v[i].slug, json_string(t.v[i].id));
    db_sync_tenants_free(&t);
    return m;
}

struct ending {
    const char *registry_id, *registry_name, *owner;
    json_t *gone; /* ids */
    json_t *report;
    bool ok;
    long gone_n;
};

/*
 * The end of a sync, in one transaction: images gone upstream flagged,
 * tenants' storage flags set or cleared (newly over-quota tenants audited),
 * the report stored and the sync audited.
 */
static int write_ending(struct db *db, const void *arg)
{
    struct ending *en = (struct ending *)arg;
    int e = 0;
    if (json_array_size(en->gone)) {
        struct sbuf ids = SBUF_INIT;
        sbuf_putc(&ids, '{');
        for (size_t i = 0; i < json_array_size(en->gone); i++)
            sbuf_printf(&ids, "%s%s", i ? "," : "", json_string_value(json_array_get(en->gone, i)));
        sbuf_putc(&ids, '}');
        e = db_sync_gone(db, sbuf_str(&ids), &en->gone_n);
        sbuf_free(&ids);
    }
    struct db_storage_overs so = {0};
    if (!e)
        e = db_sync_storage(db, &so);
    json_t *over = json_array();
    for (size_t i = 0; !e && i < so.n; i++) {
        const char *slug = so.v[i].slug;
        json_array_append_new(over, json_pack("{s:s, s:I, s:f}", "tenant", slug, "used_bytes",
                                              (json_int_t)so.v[i].used_bytes, "limit_gib",
                                              so.v[i].limit_gib));
        if (!so.v[i].newly)
            continue;
        log_warn("tenant %s: its images exceed its storage_gib quota", slug);
        json_t *d = json_pack("{s:s, s:s}", "registry", en->registry_name, "reason",
                              "images over the storage_gib quota");
        struct audit_event ev = {.action = "tenant.storage_over_quota", .resource_type = "tenant",
                                 .resource_id = slug, .details = d, .tenant_slug = slug};
        e = audit_record_system(db, &ev, true);
        json_decref(d);
    }
    db_storage_overs_free(&so);
    json_object_set_new(en->report, "deleted_upstream", json_integer(en->gone_n));
    json_object_set_new(en->report, "over_quota", over);
    char *report = json_dumps(en->report, JSON_COMPACT);
    if (!e)
        e = report ? db_registry_finish(db, en->registry_id, en->owner, en->ok, report)
                   : AIDC_EINTERNAL;
    free(report);
    if (!e) {
        json_t *d = json_deep_copy(en->report);
        json_object_del(d, "changes"); /* the counts; the changes are in the registry's report */
        json_object_del(d, "problems");
        struct audit_event ev = {.action = "registry.sync", .resource_type = "registry",
                                 .resource_id = en->registry_name,
                                 .outcome = en->ok ? "success" : "error", .details = d};
        e = audit_record_system(db, &ev, true);
        json_decref(d);
    }
    return e;
}

static void sync_registry(struct db *db, const struct db_registry_claim *c, const json_t *options)
{
    const char *id = c->id, *name = c->name;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct run r = {.db = db, .registry_id = id, .registry_name = name, .owner = c->owner,
                    .options = options};
    r.report = json_object();
    r.changes = json_array();
    r.problems = json_array();
    char err[512] = "";
    struct registry_target t = {
        .url = c->url,
        .credref = c->credentials_ref,
        .timeout_seconds = (int)json_integer_value(json_object_get(options, "timeout_seconds")),
        .page_size = (int)json_integer_value(json_object_get(options, "page_size")),
    };
    json_t *repos = NULL;
    json_t *gone = json_array();
    int e = regclient_open(&t, &r.rc, err, sizeof err);
    if (!e)
        e = registry_ping(r.rc, err, sizeof err);
    if (!e) {
        r.known = load_known(db, id);
        r.tenants = load_tenants(db);
        if (!r.known || !r.tenants) {
            snprintf(err, sizeof err, "cannot read the images known from the database");
            e = AIDC_EUNAVAIL;
        }
    }
    if (!e)
        e = registry_catalog(r.rc, &repos, err, sizeof err);
    size_t i, nrepos = json_array_size(repos);
    r.repos_total = nrepos;
    json_t *v;
    json_array_foreach(e ? NULL : repos, i, v) {
        r.repos_done = i;
        progress(&r, i == 0);
        if (r.lost)
            break;
        sync_repo(&r, json_string_value(v), gone);
    }
    /* the catalog was read whole: what is not in it any more is gone */
    if (!e && !r.lost)
        collect_gone(&r, gone);
    regclient_close(r.rc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    json_int_t ms = (json_int_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    json_object_set_new(r.report, "ok", json_boolean(!e && r.errors == 0));
    if (e)
        json_object_set_new(r.report, "error", text(err));
    json_t *counts = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "duration_ms", ms, "repositories",
        (json_int_t)nrepos, "tags", (json_int_t)r.tags, "added", (json_int_t)r.added, "updated",
        (json_int_t)r.updated, "unchanged", (json_int_t)r.unchanged, "restored",
        (json_int_t)r.restored, "conflicts", (json_int_t)r.conflicts, "skipped",
        (json_int_t)r.skipped, "errors", (json_int_t)r.errors + (e ? 1 : 0));
    json_object_update(r.report, counts);
    json_decref(counts);
    json_object_set(r.report, "changes", r.changes);
    json_object_set(r.report, "problems", r.problems);
    struct ending en = {.registry_id = id, .registry_name = name, .owner = c->owner,
                        .gone = gone, .report = r.report, .ok = !e && r.errors == 0};
    /* a sync taken over by another replica leaves the ending to it */
    int we = r.lost ? 0 : in_tx(db, write_ending, &en);
    if (we == AIDC_ENOTFOUND)
        log_warn("registry %s: another aidcd took this sync over: its outcome is not stored",
                 name);
    else if (we)
        log_error("registry %s: cannot store the sync's outcome: %s", name, aidc_err_name(we));
    atomic_fetch_add(en.ok ? &syncs_ok : &syncs_failed, 1);
    if (e)
        log_warn("registry %s: sync failed: %s", name, err);
    else
        log_info("registry %s: synced %zu repositories, %ld tags (%ld added, %ld updated, %ld "
                 "gone upstream, %ld errors) in %lld ms",
                 name, nrepos, r.tags, r.added, r.updated, en.gone_n, r.errors, (long long)ms);
    json_decref(repos);
    json_decref(gone);
    json_decref(r.known);
    json_decref(r.tenants);
    json_decref(r.changes);
    json_decref(r.problems);
    json_decref(r.report);
}

int regsync_run(struct db *db, int every_s)
{
    int e = db_begin(db, &system_ctx, false);
    struct db_registry_claim c = {0};
    bool claimed = false;
    if (!e)
        e = db_registry_claim(db, every_s, SYNC_STALE_SECONDS, &c, &claimed);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (e || !claimed) {
        db_registry_claim_free(&c);
        return e;
    }
    json_t *options = json_loads(c.options_json, 0, NULL);
    if (!options)
        options = json_object();
    sync_registry(db, &c, options);
    json_decref(options);
    db_registry_claim_free(&c);
    return 1;
}

void regsync_metrics(struct sbuf *sb)
{
    sbuf_printf(sb,
                "# HELP aidc_registry_syncs_total Registry syncs run by this process, by result.\n"
                "# TYPE aidc_registry_syncs_total counter\n"
                "aidc_registry_syncs_total{result=\"ok\"} %lu\n"
                "aidc_registry_syncs_total{result=\"failed\"} %lu\n",
                atomic_load(&syncs_ok), atomic_load(&syncs_failed));
}

struct regsync {
    int every_s;
};

/* The previous leader is gone: the sync it had running starts over here, now. */
static int regsync_take_over(struct db *db, void *arg)
{
    (void)arg;
    int e = db_begin(db, &system_ctx, false);
    if (!e)
        e = db_registry_release(db);
    if (!e)
        return db_commit(db);
    db_rollback(db);
    return e;
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    struct regsync *s = arg;
    return regsync_run(db, s->every_s);
}

struct worker *regsync_start(const struct config *cfg)
{
    struct regsync *s = xcalloc(1, sizeof *s);
    s->every_s = cfg->registry_sync_seconds;
    struct worker_spec spec = {
        .name = "regsync",
        .lead = WORKER_LEAD_REGSYNC,
        .on_lead = regsync_take_over,
        .channels = {"aidc_registries", NULL},
        .interval_ms = INTERVAL_MS,
        .round = round_fn,
        .owns_arg = true,
        .arg = s,
    };
    return worker_start(cfg->worker_database_url, &spec);
}

