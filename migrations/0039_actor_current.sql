-- 0039_actor_current.sql - the actor's own check of the request's context, in a
-- function the statement calls only when it is needed.
--
-- Every request's context statement (db/context.c) also tells whether the actor
-- the server remembers is still current: the same auth epoch as when it was found
-- current - the answer for nearly every request - or else its user, token and
-- session looked up. Written as three EXISTS subqueries in the statement, the
-- lookups were never run for the common answer, but every execution set up their
-- plans: three index scans opened and locked (users, api_tokens,
-- revoked_sessions and their indexes), for a statement that otherwise reads one
-- row of aidc_auth_epoch. PostgreSQL spent more of a GET's time starting its two
-- statements than running them (docs/performance.md). Behind a function (PL/pgSQL,
-- so never inlined into the statement) the lookups are planned once per
-- connection and set up only when the epoch moved. Same rights as before: the
-- caller's. The tables are named with their schema (a temporary table of the
-- same name must not answer), and the token must be the user's own (the server
-- never asks otherwise: defence in depth).
CREATE FUNCTION aidc_actor_current(u uuid, v bigint, t uuid, j uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM public.users WHERE id = u AND auth_version = v AND NOT disabled)
       AND (t IS NULL OR EXISTS (SELECT 1 FROM public.api_tokens
                                  WHERE id = t AND user_id = u AND revoked_at IS NULL
                                    AND expires_at > now()))
       AND (j IS NULL OR NOT EXISTS (SELECT 1 FROM public.revoked_sessions WHERE jti = j));
END $$;
