/* files.c - storage spaces as the database knows them (see files.h). */
#include "files.h"

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct db_stmt st_space = {
    "files_space",
    "SELECT t.number::text AS number,"
    " CASE $2 WHEN 'projects' THEN p.id IS NOT NULL"
    "         WHEN 'home' THEN EXISTS (SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id"
    "                                  WHERE m.tenant_id = t.id AND u.username = $3)"
    "         ELSE true END AS exists,"
    " p.id::text AS project_id,"
    " CASE $2 WHEN 'projects' THEN (SELECT q.\"limit\"::text FROM project_quotas q"
    "                               WHERE q.project_id = p.id AND q.resource = 'storage_gib')"
    "         WHEN 'home' THEN (SELECT q.\"limit\"::text FROM tenant_quotas q"
    "                           WHERE q.tenant_id = t.id AND q.resource = 'home_storage_gib')"
    " END AS limit_gib,"
    " (SELECT s.bytes::text FROM storage_spaces s WHERE s.tenant_id = t.id"
    "   AND s.kind = CASE $2 WHEN 'projects' THEN 'project' WHEN 'home' THEN 'home'"
    "                ELSE 'dataset' END AND s.name = $3) AS measured_bytes"
    " FROM tenants t LEFT JOIN projects p ON $2 = 'projects' AND p.tenant_id = t.id"
    "      AND p.slug = $3 AND p.deleted_at IS NULL"
    " WHERE t.id = $1::uuid AND t.deleted_at IS NULL",
    3};

const struct db_stmt *const db_files_stmts[] = {&st_space, NULL};

int db_files_space(struct db *db, const char *tenant_id, const char *kind, const char *name,
                   struct db_files_space *out)
{
    memset(out, 0, sizeof *out);
    out->limit_gib = -1;
    const char *p[3] = {tenant_id, kind, name};
    json_t *row = NULL;
    int e = rowjson_query_one(db, &st_space, p, &row);
    if (e)
        return e;
    const char *num = json_string_value(json_object_get(row, "number"));
    const char *pid = json_string_value(json_object_get(row, "project_id"));
    const char *lim = json_string_value(json_object_get(row, "limit_gib"));
    out->tenant_number = num ? strtoll(num, NULL, 10) : -1;
    out->exists = json_is_true(json_object_get(row, "exists"));
    if (pid)
        snprintf(out->project_id, sizeof out->project_id, "%s", pid);
    if (lim)
        out->limit_gib = strtod(lim, NULL);
    const char *mb = json_string_value(json_object_get(row, "measured_bytes"));
    out->measured_bytes = mb ? strtoll(mb, NULL, 10) : -1;
    json_decref(row);
    return 0;
}
