/*
 * relay.h - the sessions relay (docs/sessions.md): a second HTTP listener,
 * on an origin of its own, that passes the browser's requests and
 * WebSockets to the app of an interactive session.
 *
 * An app is HTML and script its user (or whoever wrote a notebook in a
 * shared space) controls: served from the portal's origin it could call
 * the API with the viewer's cookie. The relay is therefore another origin
 * (its own port, or a host name per session behind a proxy), entered only
 * through a single-use link (POST .../sessions/{id}/open) that sets a cookie
 * for that session's path alone. Every request needs that cookie for that
 * session; aidc's own cookies and any Authorization header never reach the
 * app; the app's own token is added instead (the browser never holds it).
 *
 * libmicrohttpd, a thread per connection: a request's relay blocks on the
 * app (long polls, downloads streamed at the client's pace, WebSockets
 * relayed byte for byte after the app's 101), never on anyone else's.
 */
#ifndef AIDC_RELAY_H
#define AIDC_RELAY_H

struct config;
struct relay;

/*
 * Listen on cfg's sessions address (nothing when AIDC_SESSIONS_LISTEN is
 * "off": returns NULL with *off true). cfg->sessions_url is completed when
 * empty (the bound port), before any other thread reads it. NULL on failure.
 */
struct relay *relay_start(struct config *cfg, int *off);
int relay_port(const struct relay *r);
void relay_stop(struct relay *r);

#endif
