/* storagemeter.c - the storage worker (see storagemeter.h). */
#include "storagemeter.h"

#include "../db/db.h"
#include "../db/storage.h"
#include "../db/worker.h"
#include "../lib/err.h"
#include "../lib/fsat.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../storage/space.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the worker looks whether a pass is due this often (sooner when the interval is shorter) */
#define CHECK_MS 10000

static const struct db_ctx system_ctx = {.roles = "system"};

/* storage_spaces.kind of each enum space_kind */
static const char *const kind_names[] = {"project", "home", "dataset"};
#define NKINDS (sizeof kind_names / sizeof kind_names[0])

/* figures for /metrics, of whichever pass of this process ran last */
static atomic_ulong passes_total, spaces_total, failed_total;
static atomic_long last_incomplete, last_duration_ms;

struct storagemeter {
    char *root;
    long long max_entries;
    int scan_seconds;
    atomic_bool cancel;
    bool tried;           /* a pass was tried by this replica ... */
    struct timespec last; /* ... when it began (CLOCK_MONOTONIC) */
};

static bool cancelled(const struct storagemeter_pass *pass)
{
    return pass->cancel && atomic_load(pass->cancel);
}

/* Record one measurement in a transaction of its own. */
static int record(struct db *db, const struct db_storage_figures *f, long *pieces)
{
    int e = db_begin(db, &system_ctx, false);
    if (!e)
        e = db_storage_record(db, f, pieces);
    if (e) {
        db_rollback(db);
        return e;
    }
    return db_commit(db);
}

/*
 * Measure and record the spaces of one kind folder (kfd) of a tenant; names
 * found go to present ("kind/name," each). *listed becomes false when the
 * folder could not be read to its end (its spaces are then not forgotten).
 */
static int kind_pass(struct db *db, const struct storagemeter_pass *pass, const char *tenant,
                     const char *tenant_id, int kfd, enum space_kind k, struct sbuf *present,
                     bool *listed, struct storagemeter_figures *fig)
{
    DIR *d = fsat_listdir(kfd);
    if (!d) {
        *listed = false;
        fig->failed++;
        log_warn("storage: cannot list %s/%s: %s", tenant, space_kind_dir(k), strerror(errno));
        return 0;
    }
    int e = 0;
    struct dirent *ent;
    while (!e && !cancelled(pass) && (errno = 0, ent = readdir(d)) != NULL) {
        char rel[2 * SPACE_NAME_MAX + 16];
        struct space sp;
        const char *rest;
        /* the name's form, as the files API allows it ("." and ".." fail it too) */
        int n = snprintf(rel, sizeof rel, "%s/%s", space_kind_dir(k), ent->d_name);
        if (n < 0 || (size_t)n >= sizeof rel || space_parse(tenant, rel, &sp, &rest) != 0 ||
            *rest != '\0')
            continue;
        /* a link (or a file) standing where a space would is none: O_NOFOLLOW */
        int fd = fsat_open(kfd, sp.name, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0 && (errno == ENOENT || errno == ELOOP || errno == ENOTDIR || errno == EXDEV))
            continue;
        sbuf_printf(present, "%s/%s,", kind_names[k], sp.name);
        long long bytes = 0, entries = 0;
        int rc = fd < 0 ? -1 : space_measure(fd, pass->max_entries, &bytes, &entries);
        int saved = errno;
        if (fd >= 0)
            close(fd);
        if (rc < 0) {
            fig->failed++;
            log_warn("storage: cannot measure %s/%s: %s", tenant, rel, strerror(saved));
            continue;
        }
        struct db_storage_figures f = {tenant_id, kind_names[k], sp.name, bytes,
                                       entries,   rc == 0,       pass->at};
        long pieces = 0;
        e = record(db, &f, &pieces);
        if (!e) {
            fig->spaces++;
            fig->pieces += pieces;
            fig->incomplete += rc == 1;
            if (rc == 1)
                log_warn("storage: %s/%s has more than %lld entries: measured in part", tenant, rel,
                         pass->max_entries);
        }
    }
    if (!e && !cancelled(pass) && errno != 0) {
        *listed = false;
        fig->failed++;
    }
    closedir(d);
    return e;
}

/* The spaces of one tenant's folder (tfd): measured, recorded, and those gone forgotten. */
static int tenant_pass(struct db *db, const struct storagemeter_pass *pass, const char *tenant,
                       const char *tenant_id, int tfd, struct storagemeter_figures *fig)
{
    struct sbuf present = SBUF_INIT;
    sbuf_putc(&present, '{');
    bool listed = true;
    int e = 0;
    for (size_t k = 0; !e && k < NKINDS && !cancelled(pass); k++) {
        int kfd = fsat_open(tfd, space_kind_dir((enum space_kind)k), O_RDONLY | O_DIRECTORY, 0);
        if (kfd < 0) {
            if (errno != ENOENT) {
                listed = false;
                fig->failed++;
                log_warn("storage: cannot open %s/%s: %s", tenant,
                         space_kind_dir((enum space_kind)k), strerror(errno));
            }
            continue;
        }
        e = kind_pass(db, pass, tenant, tenant_id, kfd, (enum space_kind)k, &present, &listed, fig);
        close(kfd);
    }
    if (!e && listed && !cancelled(pass)) {
        if (present.len > 1)
            present.len--; /* the last comma */
        sbuf_putc(&present, '}');
        e = db_begin(db, &system_ctx, false);
        if (!e)
            e = db_storage_forget(db, tenant_id, sbuf_str(&present));
        if (e)
            db_rollback(db);
        else
            e = db_commit(db);
    }
    sbuf_free(&present);
    return e;
}

/* In a read-only system transaction: the pass's time, or a tenant's id by its slug. */
static int clock_of(struct db *db, const char *at, char out[40], double *since)
{
    int e = db_begin(db, &system_ctx, true);
    if (!e)
        e = db_storage_clock(db, at, out, since);
    if (e) {
        db_rollback(db);
        return e;
    }
    return db_commit(db);
}

static int tenant_of(struct db *db, const char *slug, char id[37])
{
    int e = db_begin(db, &system_ctx, true);
    if (!e)
        e = db_storage_tenant(db, slug, id);
    db_rollback(db); /* read only: nothing to keep */
    return e;
}

/* Walk the root's tenant folders; *whole is false when the root could not be read to its end. */
static int root_pass(struct db *db, const struct storagemeter_pass *pass, int rootfd, bool *whole,
                     struct storagemeter_figures *fig)
{
    DIR *d = fsat_listdir(rootfd);
    if (!d) {
        log_warn("storage: cannot list %s: %s", pass->root, strerror(errno));
        *whole = false;
        return 0;
    }
    int e = 0;
    struct dirent *ent;
    while (!e && !cancelled(pass) && (errno = 0, ent = readdir(d)) != NULL) {
        struct space probe;
        const char *rest;
        char id[37];
        /* a tenant slug's form (space_parse checks it with a placeholder space) */
        if (space_parse(ent->d_name, "projects/x", &probe, &rest) != 0)
            continue;
        e = tenant_of(db, ent->d_name, id);
        if (e == AIDC_ENOTFOUND) {
            e = 0;
            log_debug("storage: %s/%s is no tenant's folder: skipped", pass->root, ent->d_name);
            continue;
        }
        if (e)
            break;
        int tfd = fsat_open(rootfd, ent->d_name, O_RDONLY | O_DIRECTORY, 0);
        if (tfd < 0) {
            if (errno != ENOENT && errno != ELOOP && errno != ENOTDIR && errno != EXDEV) {
                fig->failed++;
                log_warn("storage: cannot open %s/%s: %s", pass->root, ent->d_name,
                         strerror(errno));
            }
            continue;
        }
        e = tenant_pass(db, pass, ent->d_name, id, tfd, fig);
        close(tfd);
    }
    if (!e && !cancelled(pass) && errno != 0)
        *whole = false;
    closedir(d);
    return e;
}

int storagemeter_run(struct db *db, const struct storagemeter_pass *pass,
                     struct storagemeter_figures *fig)
{
    memset(fig, 0, sizeof *fig);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char start[40];
    double since = 0;
    int e = clock_of(db, pass->at, start, &since);
    if (e)
        return e;
    bool whole = true;
    int rootfd = fsat_opendir(pass->root);
    if (rootfd < 0 && errno != ENOENT) {
        log_warn("storage: cannot open the storage root %s: %s", pass->root, strerror(errno));
        whole = false;
    }
    if (rootfd >= 0) {
        e = root_pass(db, pass, rootfd, &whole, fig);
        close(rootfd);
    }
    if (!e && whole && !cancelled(pass)) {
        e = db_begin(db, &system_ctx, false);
        if (!e)
            e = db_storage_scan_done(db, start);
        if (e)
            db_rollback(db);
        else
            e = db_commit(db);
        if (!e)
            atomic_fetch_add(&passes_total, 1);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    atomic_fetch_add(&spaces_total, (unsigned long)fig->spaces);
    atomic_fetch_add(&failed_total, (unsigned long)fig->failed);
    atomic_store(&last_incomplete, fig->incomplete);
    atomic_store(&last_duration_ms,
                 (t1.tv_sec - t0.tv_sec) * 1000L + (t1.tv_nsec - t0.tv_nsec) / 1000000L);
    if (fig->spaces)
        log_debug("storage: measured %ld space(s) into %ld usage piece(s)", fig->spaces,
                  fig->pieces);
    return e;
}

void storagemeter_metrics(struct sbuf *sb)
{
    sbuf_printf(sb,
                "# HELP aidc_storage_scans_total Whole passes over the storage spaces made by "
                "this process.\n"
                "# TYPE aidc_storage_scans_total counter\n"
                "aidc_storage_scans_total %lu\n"
                "# HELP aidc_storage_spaces_measured_total Storage spaces measured by this "
                "process.\n"
                "# TYPE aidc_storage_spaces_measured_total counter\n"
                "aidc_storage_spaces_measured_total %lu\n"
                "# HELP aidc_storage_scan_failures_total Spaces or folders a pass could not "
                "read.\n"
                "# TYPE aidc_storage_scan_failures_total counter\n"
                "aidc_storage_scan_failures_total %lu\n"
                "# HELP aidc_storage_spaces_incomplete Spaces the last pass measured in part "
                "(more entries than AIDC_STORAGE_SCAN_MAX_ENTRIES).\n"
                "# TYPE aidc_storage_spaces_incomplete gauge\n"
                "aidc_storage_spaces_incomplete %ld\n"
                "# HELP aidc_storage_scan_duration_seconds How long the last pass took.\n"
                "# TYPE aidc_storage_scan_duration_seconds gauge\n"
                "aidc_storage_scan_duration_seconds %.3f\n",
                atomic_load(&passes_total), atomic_load(&spaces_total), atomic_load(&failed_total),
                atomic_load(&last_incomplete), (double)atomic_load(&last_duration_ms) / 1000.0);
}

/* A pass when the last whole one began AIDC_STORAGE_SCAN_SECONDS ago (on any replica). */
static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    struct storagemeter *m = arg;
    char now[40];
    double since = 0;
    int e = clock_of(db, NULL, now, &since);
    if (e || since < m->scan_seconds)
        return e;
    /* a pass that could not read the whole root records no time in the database:
     * this replica's own clock keeps it from trying again every CHECK_MS */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (m->tried && t.tv_sec - m->last.tv_sec < m->scan_seconds)
        return 0;
    m->tried = true;
    m->last = t;
    struct storagemeter_pass pass = {m->root, m->max_entries, NULL, &m->cancel};
    struct storagemeter_figures fig;
    e = storagemeter_run(db, &pass, &fig);
    if (e < 0)
        m->tried = false; /* the database failed, not the disk: again once it answers */
    return e < 0 ? e : 0;
}

struct worker *storagemeter_start(const struct config *cfg)
{
    /* the root is copied: the worker outlives no configuration, but owns what it reads */
    struct storagemeter *m = xcalloc(1, sizeof *m + strlen(cfg->storage_root) + 1);
    m->root = (char *)(m + 1);
    memcpy(m->root, cfg->storage_root, strlen(cfg->storage_root) + 1);
    m->max_entries = cfg->storage_scan_max_entries;
    m->scan_seconds = cfg->storage_scan_seconds;
    atomic_init(&m->cancel, false);
    struct worker_spec spec = {
        .name = "storage",
        .lead = WORKER_LEAD_STORAGE,
        .channels = {NULL},
        .interval_ms = cfg->storage_scan_seconds < CHECK_MS / 1000
                           ? cfg->storage_scan_seconds * 1000
                           : CHECK_MS,
        .round = round_fn,
        .owns_arg = true,
        .arg = m,
        .cancel = &m->cancel,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
