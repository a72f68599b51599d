/*
 * relaypipe.h - the sessions relay's pipes to an app (server/relay.h decides
 * who may pass): an HTTP request passed with libcurl and its answer streamed
 * back at the client's pace (a 100 MB download holds one 256 KiB buffer),
 * and a WebSocket relayed byte for byte once the app answered 101.
 *
 * What the app gets: the method, the path and query as the browser sent them,
 * the browser's headers less the hop-by-hop ones, Authorization, and aidc's
 * cookies (the portal's and the relay's: an app never sees a key of aidc);
 * its own token as Authorization; X-Forwarded-For, -Proto and -Host. What the
 * browser gets: the app's answer less the hop-by-hop headers and any cookie
 * of aidc's name the app tries to set.
 */
#ifndef AIDC_RELAYPIPE_H
#define AIDC_RELAYPIPE_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* The WebSockets being relayed (so that stopping the relay can end them). */
struct relaypipe_registry {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct relaypipe_ws *head;
    int count;
};
void relaypipe_registry_init(struct relaypipe_registry *reg);
/* End every WebSocket being relayed and wait (a few seconds at most) for them to go. */
void relaypipe_registry_close(struct relaypipe_registry *reg);

/* One admitted request (strings borrowed for the call; what outlives it is copied). */
struct relaypipe_request {
    const char *method, *uri;
    const char *origin; /* the relay's public origin for this session */
    const char *session_id;
    const char *host; /* the app's */
    int port;
    const char *secret; /* the app's token */
    const char *body;   /* the request's body (may be NULL) */
    size_t body_len;
    const char *client_ip;
    struct relaypipe_registry *registry;
    /* traffic on a WebSocket: the session is not idle (called now and then) */
    void (*touch)(void *arg, const char *session_id);
    void *touch_arg;
};

bool relaypipe_init(void);
/* Pass the request to the app and queue its answer (502 when the app does not answer). */
enum MHD_Result relaypipe_http(struct MHD_Connection *c, const struct relaypipe_request *pr);
/*
 * Open the WebSocket on the app and, on its 101, relay the connection. When
 * the 101 is queued, *held is the WebSocket, which the request holds until
 * libmicrohttpd completes it (relaypipe_ws_release): the browser may be gone
 * before it is upgraded. NULL otherwise.
 */
enum MHD_Result relaypipe_websocket(struct MHD_Connection *c, const struct relaypipe_request *pr,
                                    struct relaypipe_ws **held);
/* The request's hold on a WebSocket of relaypipe_websocket let go (w may be NULL). */
void relaypipe_ws_release(struct relaypipe_ws *w);
/* A problem answer of the relay's own (server/relay.c). */
enum MHD_Result relaypipe_bad_gateway(struct MHD_Connection *c, int app_status);

#endif
