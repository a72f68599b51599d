/*
 * permissions_fixture.h - where the rows of the permission matrix are: the
 * programs that hold part of it besides test_permissions_matrix.c
 * (test_permissions_billing.c, test_permissions_audit.c,
 * test_permissions_images.c, test_permissions_files.c,
 * test_permissions_sessions.c, test_permissions_allocations.c,
 * test_permissions_templates.c), and which
 * routes' rows each holds. The
 * actors, tenants and setup they share are tests/support/permfixture.h, the
 * runner of their tables tests/support/permrun.h.
 *
 * The programs of the matrix include this header and hand split_routes to
 * the runner with their rows.
 */
#ifndef AIDC_TEST_PERMISSIONS_FIXTURE_H
#define AIDC_TEST_PERMISSIONS_FIXTURE_H

#include "tests/support/permfixture.h"
#include "tests/support/permrun.h"

/* The programs that hold part of the matrix besides test_permissions_matrix.c. */
#define BILLING_ROWS  "test_permissions_billing.c"
#define AUDIT_ROWS    "test_permissions_audit.c"
#define IMAGES_ROWS   "test_permissions_images.c"
#define FILES_ROWS    "test_permissions_files.c"
#define SESSIONS_ROWS "test_permissions_sessions.c"
#define ALLOCATIONS_ROWS "test_permissions_allocations.c"
#define IDP_ROWS "test_permissions_idp.c"
#define TEMPLATES_ROWS "test_permissions_templates.c"
#define NOTIFY_ROWS "test_permissions_notify.c"

/*
 * The routes ("METHOD pattern") whose permission matrix rows are in another
 * program than test_permissions_matrix.c, and that program;
 * test_permissions_matrix.c has rows for every other authenticated route.
 * Each program fails when a route of its part has no row (its test
 * every_listed_route_is_in_this_matrix), so a new route needs rows in one of
 * them (and, outside test_permissions_matrix.c, an entry here).
 */
static const struct permrun_split split_routes[] = {
    {"POST /api/v1/tenants/{tenant}/jobs/{id}/checkpoint", BILLING_ROWS},
    {"GET /api/v1/tenants/{tenant}/usage", BILLING_ROWS},
    {"GET /api/v1/tenants/{tenant}/usage/jobs", BILLING_ROWS},
    {"GET /api/v1/usage", BILLING_ROWS},
    {"GET /api/v1/usage/jobs", BILLING_ROWS},
    {"GET /api/v1/usage/utilization", BILLING_ROWS},
    {"GET /api/v1/prices", BILLING_ROWS},
    {"POST /api/v1/prices", BILLING_ROWS},
    {"POST /api/v1/invoices", BILLING_ROWS},
    {"GET /api/v1/invoices", BILLING_ROWS},
    {"GET /api/v1/invoices/{id}", BILLING_ROWS},
    {"POST /api/v1/invoices/{id}/finalize", BILLING_ROWS},
    {"GET /api/v1/audit/events", AUDIT_ROWS},
    {"GET /api/v1/audit/events/export", AUDIT_ROWS},
    {"GET /api/v1/audit/verify", AUDIT_ROWS},
    {"GET /api/v1/audit/checkpoints", AUDIT_ROWS},
    {"GET /api/v1/audit/public-key", AUDIT_ROWS},
    {"POST /api/v1/audit/commands", AUDIT_ROWS},
    {"GET /api/v1/audit/commands", AUDIT_ROWS},
    {"GET /api/v1/approvals", AUDIT_ROWS},
    {"GET /api/v1/approvals/{id}", AUDIT_ROWS},
    {"POST /api/v1/approvals/{id}/approve", AUDIT_ROWS},
    {"POST /api/v1/approvals/{id}/reject", AUDIT_ROWS},
    {"GET /api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", FILES_ROWS},
    {"PUT /api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", FILES_ROWS},
    {"POST /api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", FILES_ROWS},
    {"DELETE /api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", FILES_ROWS},
    {"GET /api/v1/tenants/{tenant}/jobs/{id}/files/{path*}", FILES_ROWS},
    {"POST /api/v1/tenants/{tenant}/sessions", SESSIONS_ROWS},
    {"GET /api/v1/tenants/{tenant}/sessions", SESSIONS_ROWS},
    {"GET /api/v1/tenants/{tenant}/sessions/{id}", SESSIONS_ROWS},
    {"POST /api/v1/tenants/{tenant}/sessions/{id}/stop", SESSIONS_ROWS},
    {"POST /api/v1/tenants/{tenant}/sessions/{id}/extend", SESSIONS_ROWS},
    {"POST /api/v1/tenants/{tenant}/sessions/{id}/open", SESSIONS_ROWS},
    {"GET /api/v1/images", IMAGES_ROWS},
    {"GET /api/v1/tenants/{tenant}/images", IMAGES_ROWS},
    {"POST /api/v1/tenants/{tenant}/images", IMAGES_ROWS},
    {"GET /api/v1/tenants/{tenant}/images/{id}", IMAGES_ROWS},
    {"PATCH /api/v1/tenants/{tenant}/images/{id}", IMAGES_ROWS},
    {"DELETE /api/v1/tenants/{tenant}/images/{id}", IMAGES_ROWS},
    {"POST /api/v1/registries", IMAGES_ROWS},
    {"GET /api/v1/registries", IMAGES_ROWS},
    {"GET /api/v1/registries/{name}", IMAGES_ROWS},
    {"POST /api/v1/registries/{name}/sync", IMAGES_ROWS},
    {"POST /api/v1/identity-providers", IDP_ROWS},
    {"GET /api/v1/identity-providers", IDP_ROWS},
    {"GET /api/v1/identity-providers/{name}", IDP_ROWS},
    {"PATCH /api/v1/identity-providers/{name}", IDP_ROWS},
    {"DELETE /api/v1/identity-providers/{name}", IDP_ROWS},
    {"POST /api/v1/tenants/{tenant}/allocation-requests", ALLOCATIONS_ROWS},
    {"GET /api/v1/tenants/{tenant}/allocation-requests", ALLOCATIONS_ROWS},
    {"GET /api/v1/tenants/{tenant}/allocation-requests/{id}", ALLOCATIONS_ROWS},
    {"GET /api/v1/allocation-requests", ALLOCATIONS_ROWS},
    {"GET /api/v1/allocation-requests/report", ALLOCATIONS_ROWS},
    {"POST /api/v1/allocation-requests/{id}/approve", ALLOCATIONS_ROWS},
    {"POST /api/v1/allocation-requests/{id}/reject", ALLOCATIONS_ROWS},
    {"POST /api/v1/allocation-requests/{id}/comments", ALLOCATIONS_ROWS},
    {"POST /api/v1/templates", TEMPLATES_ROWS},
    {"GET /api/v1/templates", TEMPLATES_ROWS},
    {"GET /api/v1/templates/{name}", TEMPLATES_ROWS},
    {"PUT /api/v1/templates/{name}", TEMPLATES_ROWS},
    {"DELETE /api/v1/templates/{name}", TEMPLATES_ROWS},
    {"POST /api/v1/tenants/{tenant}/templates", TEMPLATES_ROWS},
    {"GET /api/v1/tenants/{tenant}/templates", TEMPLATES_ROWS},
    {"GET /api/v1/tenants/{tenant}/templates/{name}", TEMPLATES_ROWS},
    {"PUT /api/v1/tenants/{tenant}/templates/{name}", TEMPLATES_ROWS},
    {"DELETE /api/v1/tenants/{tenant}/templates/{name}", TEMPLATES_ROWS},
    {"GET /api/v1/me/notifications", NOTIFY_ROWS},
    {"PUT /api/v1/me/notifications", NOTIFY_ROWS},
    {"GET /api/v1/me/notifications/deliveries", NOTIFY_ROWS},
};
#define NSPLIT_ROUTES (sizeof split_routes / sizeof split_routes[0])

#endif
