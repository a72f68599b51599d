-- seed.sql - bench data set: :tenants tenants, each with :projects projects and
-- :users users (members of that tenant only). Run by tests/bench/run.sh as the
-- owner role (row-level security does not apply to the table owner), after
-- `aidcd migrate` and `aidcd bootstrap --admin :'admin'`.
--
--   psql -v tenants=100 -v projects=10 -v users=1000 -v admin=bench -f seed.sql
--
-- Names: tenants tenant-001.., projects project-01.. (per tenant), users
-- user-001-0001.. (user-TTT-NNNN belongs to tenant-TTT). User 0001 of each
-- tenant is its tenant_admin, 0002-0100 are members, the rest viewers.
-- Every user gets the admin's password hash (no scrypt per user), so all of
-- them log in with the admin's password. Widths: at most 999 tenants, 99
-- projects and 9999 users per tenant.
\set ON_ERROR_STOP on

BEGIN;

INSERT INTO tenants (slug, name)
SELECT format('tenant-%s', lpad(t::text, 3, '0')), format('Bench tenant %s', t)
  FROM generate_series(1, :tenants) t;

INSERT INTO users (username, display_name, email, password_hash)
SELECT format('user-%s-%s', lpad(t::text, 3, '0'), lpad(u::text, 4, '0')),
       format('Bench user %s of tenant %s', u, t),
       format('user-%s-%s@bench.invalid', lpad(t::text, 3, '0'), lpad(u::text, 4, '0')),
       (SELECT password_hash FROM users WHERE username = :'admin')
  FROM generate_series(1, :tenants) t CROSS JOIN generate_series(1, :users) u;

INSERT INTO memberships (tenant_id, user_id, role)
SELECT t.id, u.id,
       CASE WHEN n = 1 THEN 'tenant_admin' WHEN n <= 100 THEN 'member' ELSE 'viewer' END
  FROM users u
  CROSS JOIN LATERAL (SELECT split_part(u.username, '-', 2) AS tnum,
                             split_part(u.username, '-', 3)::int AS n) x
  JOIN tenants t ON t.slug = 'tenant-' || x.tnum
 WHERE u.username LIKE 'user-%';

INSERT INTO projects (tenant_id, slug, name, description, created_by, created_by_name)
SELECT t.id, format('project-%s', lpad(p::text, 2, '0')),
       format('Project %s of %s', p, t.slug), 'seeded by tests/bench/seed.sql', a.id, a.username
  FROM tenants t
  CROSS JOIN generate_series(1, :projects) p
  JOIN users a ON a.username = 'user-' || substr(t.slug, 8) || '-0001';

COMMIT;

ANALYZE tenants, users, memberships, projects, api_tokens, audit_events;

SELECT (SELECT count(*) FROM tenants) AS tenants, (SELECT count(*) FROM projects) AS projects,
       (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM memberships) AS memberships;
