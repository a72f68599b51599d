-- 0042_project_pi_username.sql - a project carries its PI's username.
--
-- Every read of a project answered its PI with a subquery on users, and a
-- subquery is set up (the relation opened and locked, an index scan started)
-- for every execution, whether the project has a PI or not: 6 us of
-- PostgreSQL's 27-31 per project read in pgbench, a fifth of the statement
-- (docs/performance.md, thirteenth section). The name now sits beside the id,
-- and the database keeps the two together: one foreign key over both columns,
-- MATCH FULL (both set or both NULL), so a user's deletion clears both and a
-- changed username follows (ON UPDATE CASCADE) - no path of aidc renames a
-- user, but a change by hand must not leave a project naming a PI who is no
-- longer called that.
--
-- The index build and the constraint swap lock users and projects against
-- writes (the swap against reads too, for a moment): at most 5 s of waiting,
-- then the migration fails (run it again). An aidcd of the version before,
-- still answering during a rolling upgrade, sets a PI without its name: the
-- foreign key refuses that (409) until it is replaced; nothing else it does
-- changes.
SET LOCAL lock_timeout = '5s';

-- the key the composite foreign key refers to (id alone is already unique)
CREATE UNIQUE INDEX users_id_username ON users (id, username);

ALTER TABLE projects ADD COLUMN pi_username text;
UPDATE projects p SET pi_username = u.username FROM users u WHERE u.id = p.pi_user_id;

ALTER TABLE projects DROP CONSTRAINT projects_pi_user_id_fkey;
ALTER TABLE projects ADD CONSTRAINT projects_pi_fkey
    FOREIGN KEY (pi_user_id, pi_username) REFERENCES users (id, username)
    MATCH FULL ON UPDATE CASCADE ON DELETE SET NULL;
