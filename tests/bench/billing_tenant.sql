-- billing_tenant.sql - pgbench script for tests/bench/billing.sh, the baseline
-- of the tenant report: the same figures as GET /api/v1/tenants/{t}/usage
-- ?group_by=project,resource for one whole month, of a random tenant and month,
-- written straight against usage_intervals (its (tenant_id, started_at) index)
-- and run as the owner role: no HTTP, no row-level security, a custom plan.
-- Variables (pgbench -D): tenants, months, t0 (epoch of the first month's start).
\set tn random(1, :tenants)
\set m random(0, :months - 1)
SELECT coalesce(pr.slug, u.project_id::text) AS project, v.res AS resource,
       min(v.unit) AS unit, round(sum(v.n * extract(epoch FROM u.ended_at - u.started_at)) / 3600, 6)
  FROM usage_intervals u LEFT JOIN projects pr ON pr.id = u.project_id
 CROSS JOIN LATERAL (VALUES ('gpu:' || u.gpu_type, u.gpus, 'gpu_hour'),
                            ('cpu', u.cpus::numeric, 'core_hour'),
                            ('memory_gib', u.memory_gib::numeric, 'gib_hour')) v(res, n, unit)
 WHERE u.tenant_id = (SELECT id FROM tenants WHERE slug = 'tenant-' || lpad(:tn::text, 3, '0'))
   AND u.started_at >= to_timestamp(:t0) + :m * interval '1 month'
   AND u.started_at < to_timestamp(:t0) + (:m + 1) * interval '1 month'
   AND v.n > 0 AND v.res IS NOT NULL
 GROUP BY 1, 2 ORDER BY 1, 2;
