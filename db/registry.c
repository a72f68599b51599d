/*
 * registry.c - the list of every db/ module's prepared statements. A new
 * db/ module adds its list here; db_ensure prepares them all.
 */
#include "allocations.h"
#include "appsessions.h"
#include "approvals.h"
#include "arraycancel.h"
#include "audit.h"
#include "auditchain.h"
#include "auditseal.h"
#include "auditlog.h"
#include "billing.h"
#include "clusters.h"
#include "efficiency.h"
#include "db.h"
#include "files.h"
#include "gauges.h"
#include "gpufaults.h"
#include "health.h"
#include "idempotency.h"
#include "idproviders.h"
#include "images.h"
#include "plans.h"
#include "identity.h"
#include "jobarrays.h"
#include "jobs.h"
#include "notify.h"
#include "projects.h"
#include "quotas.h"
#include "sched.h"
#include "schedsnap.h"
#include "sessions.h"
#include "storage.h"
#include "templates.h"
#include "tenants.h"
#include "tokens.h"
#include "users.h"

const struct db_stmt *const *const db_registry[] = {
    db_identity_stmts, db_auditlog_stmts, db_idempotency_stmts, db_tenants_stmts,
    db_projects_stmts, db_users_stmts,    db_tokens_stmts,      db_health_stmts,  db_gauges_stmts,
    db_clusters_stmts, db_quotas_stmts,   db_jobs_stmts,        db_sched_stmts, db_schedsnap_stmts,
    db_audit_stmts,    db_auditseal_stmts, db_auditchain_stmts, db_approvals_stmts, db_billing_stmts, db_plans_stmts, db_images_stmts, db_gpufaults_stmts,
    db_sessions_stmts, db_files_stmts, db_storage_stmts, db_appsessions_stmts, db_idproviders_stmts,
    db_allocations_stmts,
    db_templates_stmts,
    db_efficiency_stmts,
    db_jobarrays_stmts,
    db_arraycancel_stmts,
    db_notify_stmts,
    NULL,
};
