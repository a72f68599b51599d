/*
 * queuemarks.c - the marks of queue positions an admission pass leaves (see
 * queuemarks.h).
 */
#include "queuemarks.h"

#include "../db/pgarray.h"
#include "../db/sched.h"
#include "../lib/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* every MARK_EVERY-th job of a queue is a mark of positions (0003_queue.sql); the
 * lookup halves over positions 100 k + 1 (0036): change both together, or lookups
 * still count right but scan the marks */
#define MARK_EVERY 100

/* The marks that go (type, position) and those that come. */
struct marks {
    struct pgarray gone_types, gone_pos;
    struct pgarray types, pos, ranks, ts, ids;
};

/* A queued job's place in queue order (that of the jobs_queue index). */
struct qkey {
    const char *type, *id;
    int rank;
    size_t row;
    double ts; /* distinct microseconds stay distinct doubles until the year 2255 */
};

static int qkey_cmp(const void *pa, const void *pb)
{
    const struct qkey *a = pa, *b = pb;
    int c = strcmp(a->type, b->type);
    if (c)
        return c;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return strcmp(a->id, b->id); /* lower-case hex: the order of uuid */
}

/* Where a written mark stands against (type, pos): <0 before it, 0 at it, >0 after. */
static int mark_cmp(const struct db_snap_mark *m, const char *type, long pos)
{
    int c = strcmp(m->gpu_type, type);
    if (c)
        return c;
    return m->pos < pos ? -1 : m->pos > pos;
}

static void mark_gone(struct marks *m, const struct db_snap_mark *old)
{
    pgarray_add(&m->gone_types, old->gpu_type);
    pgarray_addf(&m->gone_pos, "%ld", old->pos);
}

/*
 * The marks of the queue left after this pass, against the written ones
 * (d->marks, in the same order: type, then position): a position whose mark
 * now holds another job, or whose job moved in rank, is written again (in
 * place: 0036_queue_marks_in_place.sql); one past the queue's end goes; a new
 * one comes. A queue's marks stand at 1, 101, 201, ... up to its end, so the
 * marks that go are always the tail of their type's: the statement deletes
 * from each type's first gone position on (db/sched.c, sched_marks). False
 * when none changed.
 */
static bool build_marks(const struct db_snapshot *d, const bool *admitted, struct marks *m)
{
    size_t nq = d->queued.n, nm = d->marks.n, k = 0;
    struct qkey *q = xcalloc(nq + 1, sizeof *q);
    size_t n = 0;
    for (size_t r = 0; r < nq; r++) {
        if (admitted[r])
            continue;
        const struct db_snap_job *j = &d->queued.v[r];
        q[n++] = (struct qkey){.type = j->gpu_type ? j->gpu_type : "",
                               .id = j->id,
                               .rank = j->queue_rank,
                               .row = r,
                               .ts = j->submitted};
    }
    qsort(q, n, sizeof *q, qkey_cmp);
    long pos = 0;
    for (size_t i = 0; i < n; i++) {
        pos = i && strcmp(q[i].type, q[i - 1].type) == 0 ? pos + 1 : 1;
        if ((pos - 1) % MARK_EVERY)
            continue;
        for (; k < nm && mark_cmp(&d->marks.v[k], q[i].type, pos) < 0; k++)
            mark_gone(m, &d->marks.v[k]);
        if (k < nm && mark_cmp(&d->marks.v[k], q[i].type, pos) == 0) {
            /* written again in place where another job holds its position */
            const struct db_snap_mark *old = &d->marks.v[k++];
            if (strcmp(old->job_id, q[i].id) == 0 && old->rank == q[i].rank)
                continue;
        }
        const struct db_snap_job *j = &d->queued.v[q[i].row];
        pgarray_add(&m->types, q[i].type);
        pgarray_addf(&m->pos, "%ld", pos);
        pgarray_addf(&m->ranks, "%d", j->queue_rank);
        pgarray_add(&m->ts, j->submitted_text);
        pgarray_add(&m->ids, q[i].id);
    }
    for (; k < nm; k++)
        mark_gone(m, &d->marks.v[k]);
    free(q);
    return m->gone_types.n > 0 || m->types.n > 0;
}

int queuemarks_write(struct db *db, const struct db_snapshot *d, const bool *admitted)
{
    struct marks m = {PGARRAY_INIT, PGARRAY_INIT, PGARRAY_INIT, PGARRAY_INIT,
                      PGARRAY_INIT, PGARRAY_INIT, PGARRAY_INIT};
    int e = 0;
    if (build_marks(d, admitted, &m))
        e = db_sched_marks(db, pgarray_str(&m.gone_types), pgarray_str(&m.gone_pos),
                           pgarray_str(&m.types), pgarray_str(&m.pos), pgarray_str(&m.ranks),
                           pgarray_str(&m.ts), pgarray_str(&m.ids));
    struct pgarray *all[] = {&m.gone_types, &m.gone_pos, &m.types, &m.pos, &m.ranks, &m.ts, &m.ids};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pgarray_free(all[i]);
    return e;
}
