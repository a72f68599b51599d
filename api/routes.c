/*
 * routes.c - every endpoint of the API, in one table. The dispatcher enforces
 * the columns; tests/unit/test_openapi.c keeps this table and
 * api/openapi.json identical.
 *
 * Columns: method, pattern, handler, audit action, global roles allowed,
 * minimum tenant role in {tenant}, token scope, flags, query arguments, and
 * for uploads (RF_UPLOAD) the handler that starts one.
 */
#include "../server/router.h"

#include "../lib/imgref.h"
#include "allocations.h"
#include "appsessions.h"
#include "approvals.h"
#include "audit.h"
#include "billing.h"
#include "capacity.h"
#include "clusters.h"
#include "drift.h"
#include "efficiency.h"
#include "files.h"
#include "gpufaults.h"
#include "identity.h"
#include "idproviders.h"
#include "images.h"
#include "jobs.h"
#include "meta.h"
#include "notify.h"
#include "oidc.h"
#include "projects.h"
#include "quotas.h"
#include "templates.h"
#include "tenants.h"
#include "tokens.h"
#include "usage.h"
#include "users.h"

#define PA            GR_PLATFORM_ADMIN
#define FIN           GR_FINANCE
#define AUD           GR_AUDITOR
#define PAGE          "limit,cursor"
#define USAGE_ARGS    "from,to,group_by,project,user,resource,format"
#define IMAGE_FILTERS "q,label,visibility,registry"
#define AUDIT_FILTERS "actor,tenant,action,outcome,source_ip,from,to,q"

/* a row names the columns it uses: `begin` is for the few upload routes */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

const struct route routes[] = {
    /* health and meta */
    {"GET", "/healthz", api_meta_healthz, "health.check", 0, TR_NONE, 0, RF_PUBLIC | RF_NO_DB,
     NULL},
    {"GET", "/readyz", api_meta_readyz, "health.ready", 0, TR_NONE, 0, RF_PUBLIC | RF_NO_DB, NULL},
    {"GET", "/metrics", api_meta_metrics, "health.metrics", 0, TR_NONE, 0, RF_PUBLIC | RF_NO_DB,
     NULL},
    {"GET", "/api/v1/openapi.json", api_meta_openapi, "api.spec", 0, TR_NONE, 0,
     RF_PUBLIC | RF_NO_DB, NULL},

    /* identity */
    {"POST", "/api/v1/auth/login", api_identity_login, "auth.login", 0, TR_NONE, 0,
     RF_PUBLIC | RF_BODY | RF_NO_TX | RF_PASSWORD, NULL},
    {"POST", "/api/v1/auth/logout", api_identity_logout, "auth.logout", 0, TR_NONE, 0,
     RF_ANY_USER | RF_OPTIONAL_AUTH, NULL},
    /* single sign-on (docs/identity.md) */
    {"GET", "/api/v1/auth/providers", api_idp_public, "auth.providers", 0, TR_NONE, 0, RF_PUBLIC,
     NULL},
    {"GET", "/api/v1/auth/oidc/{name}/login", api_oidc_login, "auth.sso_start", 0, TR_NONE, 0,
     RF_PUBLIC | RF_NO_TX, "return_to,login_hint"},
    {"GET", "/api/v1/auth/oidc/{name}/callback", api_oidc_callback, "auth.sso_login", 0, TR_NONE, 0,
     RF_PUBLIC | RF_NO_TX, "code,state,iss,error,error_description,error_uri,session_state"},
    {"POST", "/api/v1/identity-providers", api_idp_create, "identity_provider.create", PA, TR_NONE,
     SC_ADMIN, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/identity-providers", api_idp_list, "identity_provider.list", PA, TR_NONE,
     SC_ADMIN, 0, PAGE},
    {"GET", "/api/v1/identity-providers/{name}", api_idp_get, "identity_provider.read", PA, TR_NONE,
     SC_ADMIN, 0, NULL},
    {"PATCH", "/api/v1/identity-providers/{name}", api_idp_update, "identity_provider.update", PA,
     TR_NONE, SC_ADMIN, RF_BODY, NULL},
    {"DELETE", "/api/v1/identity-providers/{name}", api_idp_delete, "identity_provider.delete", PA,
     TR_NONE, SC_ADMIN, 0, NULL},
    {"GET", "/api/v1/me", api_identity_me, "auth.me", 0, TR_NONE, 0, RF_ANY_USER, NULL},
    {"PUT", "/api/v1/me/password", api_identity_password, "user.password_change", 0, TR_NONE,
     SC_ADMIN, RF_ANY_USER | RF_BODY | RF_NO_TX | RF_PASSWORD, NULL},
    {"GET", "/api/v1/me/sessions", api_identity_sessions, "session.list", 0, TR_NONE, SC_ADMIN,
     RF_ANY_USER, PAGE},
    {"DELETE", "/api/v1/me/sessions/{id}", api_identity_session_end, "session.delete", 0, TR_NONE,
     SC_ADMIN, RF_ANY_USER, NULL},
    {"GET", "/api/v1/me/notifications", api_notify_get, "notification_settings.read", 0, TR_NONE,
     SC_ADMIN, RF_ANY_USER, NULL},
    {"PUT", "/api/v1/me/notifications", api_notify_put, "notification_settings.update", 0, TR_NONE,
     SC_ADMIN, RF_ANY_USER | RF_BODY, NULL},
    {"GET", "/api/v1/me/notifications/deliveries", api_notify_deliveries,
     "notification_delivery.list", 0, TR_NONE, SC_ADMIN, RF_ANY_USER, PAGE},
    {"POST", "/api/v1/tokens", api_token_create, "token.create", 0, TR_NONE, SC_ADMIN,
     RF_ANY_USER | RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/tokens", api_token_list, "token.list", 0, TR_NONE, 0, RF_ANY_USER, PAGE},
    {"DELETE", "/api/v1/tokens/{id}", api_token_delete, "token.delete", 0, TR_NONE, SC_ADMIN,
     RF_ANY_USER, NULL},
    {"POST", "/api/v1/users", api_user_create, "user.create", PA, TR_NONE, SC_ADMIN,
     RF_BODY | RF_CREATES | RF_PASSWORD, NULL},
    {"GET", "/api/v1/users", api_user_list, "user.list", PA | AUD, TR_NONE, SC_ADMIN, 0, PAGE},
    {"GET", "/api/v1/users/{username}", api_user_get, "user.read", PA | AUD, TR_NONE, SC_ADMIN, 0,
     NULL},
    {"PATCH", "/api/v1/users/{username}", api_user_update, "user.update", PA, TR_NONE, SC_ADMIN,
     RF_BODY | RF_PASSWORD | RF_PASSWORD_IF_SET, NULL},

    /* tenants and members */
    {"POST", "/api/v1/tenants", api_tenant_create, "tenant.create", PA, TR_NONE, SC_ADMIN,
     RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/tenants", api_tenant_list, "tenant.list", 0, TR_NONE, 0, RF_ANY_USER, PAGE},
    {"GET", "/api/v1/tenants/{tenant}", api_tenant_get, "tenant.read", PA | FIN | AUD, TR_VIEWER, 0,
     0, NULL},
    {"PATCH", "/api/v1/tenants/{tenant}", api_tenant_update, "tenant.update", PA, TR_ADMIN,
     SC_ADMIN, RF_BODY, NULL},
    {"DELETE", "/api/v1/tenants/{tenant}", api_tenant_delete, "tenant.delete", PA, TR_NONE,
     SC_ADMIN, 0, NULL},
    {"GET", "/api/v1/tenants/{tenant}/members", api_member_list, "member.list", PA | AUD, TR_VIEWER,
     0, 0, PAGE},
    {"PUT", "/api/v1/tenants/{tenant}/members/{username}", api_member_put, "member.put", PA,
     TR_ADMIN, SC_ADMIN, RF_BODY, NULL},
    {"DELETE", "/api/v1/tenants/{tenant}/members/{username}", api_member_delete, "member.delete",
     PA, TR_ADMIN, SC_ADMIN, 0, NULL},

    /* projects */
    {"POST", "/api/v1/tenants/{tenant}/projects", api_project_create, "project.create", PA,
     TR_ADMIN, SC_ADMIN, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/tenants/{tenant}/projects", api_project_list, "project.list", PA | FIN | AUD,
     TR_VIEWER, 0, 0, PAGE},
    {"GET", "/api/v1/tenants/{tenant}/projects/{project}", api_project_get, "project.read",
     PA | FIN | AUD, TR_VIEWER, 0, 0, NULL},
    {"PATCH", "/api/v1/tenants/{tenant}/projects/{project}", api_project_update, "project.update",
     PA, TR_ADMIN, SC_ADMIN, RF_BODY, NULL},
    {"DELETE", "/api/v1/tenants/{tenant}/projects/{project}", api_project_delete, "project.delete",
     PA, TR_ADMIN, SC_ADMIN, 0, NULL},

    /* quotas */
    {"GET", "/api/v1/tenants/{tenant}/quota", api_quota_tenant_get, "quota.read", PA | FIN | AUD,
     TR_VIEWER, 0, 0, NULL},
    {"PUT", "/api/v1/tenants/{tenant}/quota", api_quota_tenant_put, "quota.update", PA, TR_NONE,
     SC_ADMIN, RF_BODY, NULL},
    {"GET", "/api/v1/tenants/{tenant}/projects/{project}/quota", api_quota_project_get,
     "project_quota.read", PA | FIN | AUD, TR_VIEWER, 0, 0, NULL},
    {"PUT", "/api/v1/tenants/{tenant}/projects/{project}/quota", api_quota_project_put,
     "project_quota.update", PA, TR_ADMIN, SC_ADMIN, RF_BODY, NULL},

    /* clusters */
    {"POST", "/api/v1/clusters", api_cluster_create, "cluster.create", PA, TR_NONE, SC_ADMIN,
     RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/clusters", api_cluster_list, "cluster.list", 0, TR_NONE, 0, RF_ANY_USER, PAGE},
    {"GET", "/api/v1/clusters/{name}", api_cluster_get, "cluster.read", 0, TR_NONE, 0, RF_ANY_USER,
     NULL},
    {"POST", "/api/v1/clusters/{name}/sync", api_cluster_sync, "cluster.sync", PA, TR_NONE,
     SC_ADMIN, 0, NULL},
    {"GET", "/api/v1/clusters/{name}/drift", api_cluster_drift, "cluster.drift", PA, TR_NONE,
     SC_ADMIN, RF_NO_TX, NULL},
    /* the cluster view and the idle-GPU report (docs/efficiency.md) */
    {"GET", "/api/v1/capacity", api_capacity_get, "capacity.read", 0, TR_NONE, 0, RF_ANY_USER,
     NULL},
    {"GET", "/api/v1/capacity/nodes", api_capacity_nodes, "capacity.nodes", PA, TR_NONE, 0, 0,
     NULL},
    {"GET", "/api/v1/efficiency/idle", api_eff_idle_all, "efficiency.idle", PA, TR_NONE,
     SC_JOBS_READ, 0, PAGE},
    {"GET", "/api/v1/tenants/{tenant}/efficiency/idle", api_eff_idle_tenant,
     "efficiency.idle_tenant", PA, TR_ADMIN, SC_JOBS_READ, 0, PAGE},
    /* GPU health: Alertmanager's webhook holds a token with only gpu-faults:write */
    {"POST", "/api/v1/clusters/{name}/gpu-faults", api_gpu_fault_report, "gpu_fault.report", PA,
     TR_NONE, SC_GPU_FAULTS, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/clusters/{name}/gpu-faults", api_gpu_fault_list, "gpu_fault.list", PA | AUD,
     TR_NONE, 0, 0, "state," PAGE},
    {"DELETE", "/api/v1/clusters/{name}/gpu-faults/{node}", api_gpu_fault_resolve,
     "gpu_fault.resolve", PA, TR_NONE, SC_GPU_FAULTS, 0, "gpu"},

    /* images and registries */
    {"GET", "/api/v1/images", api_image_list, "image.list", 0, TR_NONE, SC_IMAGES_READ, RF_ANY_USER,
     "tenant," IMAGE_FILTERS "," PAGE},
    {"GET", "/api/v1/tenants/{tenant}/images", api_image_tenant_list, "image.tenant_list",
     PA | FIN | AUD, TR_VIEWER, SC_IMAGES_READ, 0, IMAGE_FILTERS "," PAGE},
    {"POST", "/api/v1/tenants/{tenant}/images", api_image_create, "image.create", PA, TR_MEMBER,
     SC_IMAGES_WRITE, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/tenants/{tenant}/images/{id}", api_image_get, "image.read", PA | FIN | AUD,
     TR_VIEWER, SC_IMAGES_READ, 0, NULL},
    {"PATCH", "/api/v1/tenants/{tenant}/images/{id}", api_image_update, "image.update", PA,
     TR_MEMBER, SC_IMAGES_WRITE, RF_BODY, NULL},
    {"DELETE", "/api/v1/tenants/{tenant}/images/{id}", api_image_delete, "image.delete", PA,
     TR_MEMBER, SC_IMAGES_WRITE, 0, NULL},
    {"POST", "/api/v1/registries", api_registry_create, "registry.create", PA, TR_NONE, SC_ADMIN,
     RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/registries", api_registry_list, "registry.list", PA, TR_NONE, SC_ADMIN, 0,
     PAGE},
    {"GET", "/api/v1/registries/{name}", api_registry_get, "registry.read", PA, TR_NONE, SC_ADMIN,
     0, NULL},
    {"POST", "/api/v1/registries/{name}/sync", api_registry_sync, "registry.sync", PA, TR_NONE,
     SC_ADMIN, 0, NULL},

    /* jobs */
    {"POST", "/api/v1/tenants/{tenant}/jobs", api_job_submit, "job.submit", PA, TR_MEMBER,
     SC_JOBS_WRITE, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/tenants/{tenant}/jobs", api_job_list, "job.list", PA | FIN | AUD, TR_VIEWER,
     SC_JOBS_READ, 0,
     "state,project,user,cluster,gpu_type,name,exit_code,submitted_from,submitted_to,"
     "started_from,started_to,ended_from,ended_to,sort,order,format,array_parent," PAGE},
    {"GET", "/api/v1/tenants/{tenant}/jobs/{id}", api_job_get, "job.read", PA | FIN | AUD,
     TR_VIEWER, SC_JOBS_READ, 0, NULL},
    {"GET", "/api/v1/tenants/{tenant}/jobs/{id}/events", api_job_events, "job.events",
     PA | FIN | AUD, TR_VIEWER, SC_JOBS_READ, 0, PAGE},
    {"POST", "/api/v1/tenants/{tenant}/jobs/{id}/cancel", api_job_cancel, "job.cancel", PA,
     TR_MEMBER, SC_JOBS_WRITE, 0, NULL},
    {"GET", "/api/v1/tenants/{tenant}/jobs/{id}/logs", api_job_logs, "job.logs", PA, TR_MEMBER,
     SC_JOBS_READ, 0, "stream,tail"},
    {"GET", "/api/v1/tenants/{tenant}/jobs/{id}/files/{path*}", api_job_files, "job.files", PA,
     TR_MEMBER, SC_JOBS_READ, 0, PAGE},

    /* job templates (docs/templates.md): the platform's and a tenant's */
    {"GET", "/api/v1/templates", api_template_list, "template.list", 0, TR_NONE,
     SC_JOBS_READ, RF_ANY_USER, PAGE},
    {"POST", "/api/v1/templates", api_template_create, "template.create", PA, TR_NONE,
     SC_ADMIN, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/templates/{name}", api_template_get, "template.read", 0, TR_NONE,
     SC_JOBS_READ, RF_ANY_USER, NULL},
    {"PUT", "/api/v1/templates/{name}", api_template_update, "template.update", PA,
     TR_NONE, SC_ADMIN, RF_BODY, NULL},
    {"DELETE", "/api/v1/templates/{name}", api_template_delete, "template.delete", PA,
     TR_NONE, SC_ADMIN, 0, NULL},
    {"GET", "/api/v1/tenants/{tenant}/templates", api_template_list, "template.tenant_list",
     PA | FIN | AUD, TR_VIEWER, SC_JOBS_READ, 0, PAGE},
    {"POST", "/api/v1/tenants/{tenant}/templates", api_template_create,
     "template.tenant_create", PA, TR_ADMIN, SC_JOBS_WRITE, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/tenants/{tenant}/templates/{name}", api_template_get,
     "template.tenant_read", PA | FIN | AUD, TR_VIEWER, SC_JOBS_READ, 0, NULL},
    {"PUT", "/api/v1/tenants/{tenant}/templates/{name}", api_template_update,
     "template.tenant_update", PA, TR_ADMIN, SC_JOBS_WRITE, RF_BODY, NULL},
    {"DELETE", "/api/v1/tenants/{tenant}/templates/{name}", api_template_delete,
     "template.tenant_delete", PA, TR_ADMIN, SC_JOBS_WRITE, 0, NULL},

    /* interactive sessions (docs/sessions.md): jobs of kind "interactive" */
    {"POST", "/api/v1/tenants/{tenant}/sessions", api_appsession_create, "app_session.create", PA,
     TR_MEMBER, SC_JOBS_WRITE, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/tenants/{tenant}/sessions", api_appsession_list, "app_session.list",
     PA | FIN | AUD, TR_VIEWER, SC_JOBS_READ, 0, "state,user," PAGE},
    {"GET", "/api/v1/tenants/{tenant}/sessions/{id}", api_appsession_get, "app_session.read",
     PA | FIN | AUD, TR_VIEWER, SC_JOBS_READ, 0, NULL},
    {"POST", "/api/v1/tenants/{tenant}/sessions/{id}/stop", api_appsession_stop, "app_session.stop",
     PA, TR_MEMBER, SC_JOBS_WRITE, 0, NULL},
    {"POST", "/api/v1/tenants/{tenant}/sessions/{id}/extend", api_appsession_extend,
     "app_session.extend", PA, TR_MEMBER, SC_JOBS_WRITE, RF_BODY, NULL},
    {"POST", "/api/v1/tenants/{tenant}/sessions/{id}/open", api_appsession_open, "app_session.open",
     PA, TR_MEMBER, SC_JOBS_WRITE, 0, NULL},

    /* files: a tenant's storage spaces (docs/storage.md); their data goes with its jobs' */
    {"GET", "/api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", api_files_get, "file.read", PA,
     TR_MEMBER, SC_JOBS_READ, 0, PAGE},
    {"PUT", "/api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", api_files_put, "file.upload",
     PA, TR_MEMBER, SC_JOBS_WRITE, RF_UPLOAD, NULL, api_files_put_begin},
    {"POST", "/api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", api_files_post, "file.change",
     PA, TR_MEMBER, SC_JOBS_WRITE, 0, "op"},
    {"DELETE", "/api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", api_files_delete,
     "file.delete", PA, TR_MEMBER, SC_JOBS_WRITE, 0, "recursive"},
    {"POST", "/api/v1/tenants/{tenant}/jobs/{id}/checkpoint", api_job_checkpoint, "job.checkpoint",
     PA, TR_MEMBER, SC_JOBS_WRITE, 0, NULL},

    /* usage and billing */
    {"GET", "/api/v1/tenants/{tenant}/usage", api_usage_tenant, "usage.read", PA | FIN, TR_VIEWER,
     SC_USAGE_READ, RF_REPLICA, USAGE_ARGS},
    {"GET", "/api/v1/tenants/{tenant}/usage/jobs", api_usage_tenant_jobs, "usage.jobs", PA | FIN,
     TR_VIEWER, SC_USAGE_READ, RF_REPLICA, USAGE_ARGS "," PAGE},
    {"GET", "/api/v1/usage", api_usage_platform, "usage.platform", PA | FIN, TR_NONE, SC_USAGE_READ,
     RF_REPLICA, USAGE_ARGS ",tenant"},
    {"GET", "/api/v1/usage/jobs", api_usage_platform_jobs, "usage.platform_jobs", PA | FIN, TR_NONE,
     SC_USAGE_READ, RF_REPLICA, USAGE_ARGS ",tenant," PAGE},
    {"GET", "/api/v1/usage/utilization", api_usage_utilization, "usage.utilization", PA | FIN,
     TR_NONE, SC_USAGE_READ, RF_REPLICA, "cluster,gpu_type,from,to"},
    {"GET", "/api/v1/prices", api_price_list, "price.list", 0, TR_NONE, SC_USAGE_READ, RF_ANY_USER,
     "resource,tenant," PAGE},
    {"POST", "/api/v1/prices", api_price_create, "price.create", PA | FIN, TR_NONE,
     SC_BILLING_WRITE, RF_BODY | RF_CREATES, NULL},
    {"POST", "/api/v1/invoices", api_invoice_create, "invoice.generate", PA | FIN, TR_NONE,
     SC_BILLING_WRITE, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/invoices", api_invoice_list, "invoice.list", 0, TR_NONE, SC_USAGE_READ,
     RF_ANY_USER, "tenant,period," PAGE},
    {"GET", "/api/v1/invoices/{id}", api_invoice_get, "invoice.read", 0, TR_NONE, SC_USAGE_READ,
     RF_ANY_USER, "format"},
    {"POST", "/api/v1/invoices/{id}/finalize", api_invoice_finalize, "invoice.finalize", PA | FIN,
     TR_NONE, SC_BILLING_WRITE, 0, NULL},

    /* audit */
    {"GET", "/api/v1/audit/events", api_audit_events, "audit.search", PA | AUD, TR_NONE,
     SC_AUDIT_READ, RF_AUDIT_READ | RF_REPLICA, AUDIT_FILTERS ",resource_type,resource_id," PAGE},
    {"GET", "/api/v1/audit/events/export", api_audit_export, "audit.export", PA | AUD, TR_NONE,
     SC_AUDIT_READ, RF_AUDIT_READ, AUDIT_FILTERS ",resource_type,resource_id,format"},
    {"GET", "/api/v1/audit/verify", api_audit_verify, "audit.verify", PA | AUD, TR_NONE,
     SC_AUDIT_READ, RF_AUDIT_READ | RF_NO_TX, "from,to"},
    {"GET", "/api/v1/audit/checkpoints", api_audit_checkpoints, "audit.checkpoints", PA | AUD,
     TR_NONE, SC_AUDIT_READ, RF_AUDIT_READ, PAGE},
    {"GET", "/api/v1/audit/public-key", api_audit_public_key, "audit.public_key", PA | AUD, TR_NONE,
     SC_AUDIT_READ, 0, NULL},
    {"POST", "/api/v1/audit/commands", api_audit_ingest, "audit.ingest", PA, TR_NONE,
     SC_AUDIT_INGEST, RF_INGEST, NULL},
    {"GET", "/api/v1/audit/commands", api_audit_commands, "audit.commands", PA | AUD, TR_NONE,
     SC_AUDIT_READ, RF_AUDIT_READ | RF_REPLICA, "host,user,tenant,q,from,to,job_id,kind," PAGE},

    /* allocation requests (docs/allocations.md): a tenant admin or the project's PI
     * (a member) asks, platform admins decide; the handlers narrow who asks and comments */
    {"POST", "/api/v1/tenants/{tenant}/allocation-requests", api_alloc_create, "allocation.create",
     PA, TR_MEMBER, SC_ADMIN, RF_BODY | RF_CREATES, NULL},
    {"GET", "/api/v1/tenants/{tenant}/allocation-requests", api_alloc_list, "allocation.list",
     PA | FIN | AUD, TR_VIEWER, 0, 0, "state,project," PAGE},
    {"GET", "/api/v1/tenants/{tenant}/allocation-requests/{id}", api_alloc_get, "allocation.read",
     PA | FIN | AUD, TR_VIEWER, 0, 0, NULL},
    {"GET", "/api/v1/allocation-requests", api_alloc_queue, "allocation.queue", PA, TR_NONE,
     SC_ADMIN, 0, "state,project," PAGE},
    {"GET", "/api/v1/allocation-requests/report", api_alloc_report, "allocation.report", PA | FIN,
     TR_NONE, SC_USAGE_READ, 0, "from,to,format"},
    {"POST", "/api/v1/allocation-requests/{id}/approve", api_alloc_approve, "allocation.approve",
     PA, TR_NONE, SC_ADMIN, RF_BODY, NULL},
    {"POST", "/api/v1/allocation-requests/{id}/reject", api_alloc_reject, "allocation.reject", PA,
     TR_NONE, SC_ADMIN, RF_BODY, NULL},
    {"POST", "/api/v1/allocation-requests/{id}/comments", api_alloc_comment, "allocation.comment",
     0, TR_NONE, SC_ADMIN, RF_ANY_USER | RF_BODY, NULL},

    /* dual approval */
    {"GET", "/api/v1/approvals", api_approval_list, "approval.list", PA, TR_NONE, SC_ADMIN, 0,
     "state," PAGE},
    {"GET", "/api/v1/approvals/{id}", api_approval_get, "approval.read", PA, TR_NONE, SC_ADMIN, 0,
     NULL},
    {"POST", "/api/v1/approvals/{id}/approve", api_approval_approve, "approval.approve", PA,
     TR_NONE, SC_ADMIN, 0, NULL},
    {"POST", "/api/v1/approvals/{id}/reject", api_approval_reject, "approval.reject", PA, TR_NONE,
     SC_ADMIN, RF_BODY, NULL},
};

const size_t routes_count = sizeof routes / sizeof routes[0];
