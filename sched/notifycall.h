/*
 * notifycall.h - one notification delivery attempt in flight: a libcurl easy
 * handle (an HTTP POST for a webhook, an SMTP transaction for an e-mail) and
 * what it owns, run by the notifier together with the others of its batch
 * (sched/notifier.c), so a slow receiver holds up no one but itself.
 *
 * An attempt that cannot start (a refused address, no e-mail address) has no
 * handle: it is done at once, with its error and whether retrying can help.
 */
#ifndef AIDC_NOTIFYCALL_H
#define AIDC_NOTIFYCALL_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#define NOTIFYCALL_REPLY_KEEP 200   /* bytes of a receiver's answer kept for the log */
#define NOTIFYCALL_REPLY_MAX  65536 /* a longer answer is cut off (the attempt fails) */

struct notify_call {
    CURL *h;                 /* NULL: not started (done, with error) */
    struct curl_slist *list; /* webhook: headers; e-mail: recipients */
    struct curl_slist *pin;  /* CURLOPT_RESOLVE: the checked address */
    char *upload;            /* e-mail: the message */
    size_t upload_len, upload_off;
    char reply[NOTIFYCALL_REPLY_KEEP + 1];
    size_t reply_len, reply_total;
    char errbuf[CURL_ERROR_SIZE];
    char *password; /* SMTP AUTH's, wiped when freed */
    bool allow_loopback;
    bool permanent;  /* retrying cannot help */
    char error[512]; /* why it failed (no secret, no body) */
};

/* Mark c done without a handle: err (printf) is why, permanent whether to stop trying. */
void notifycall_refuse(struct notify_call *c, bool permanent, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The write callback that keeps the start of an answer and stops a long one (userdata: c). */
size_t notifycall_reply(char *data, size_t size, size_t n, void *userdata);
/*
 * The options every attempt shares: no signals, no proxy, no redirects, the
 * timeout (connect at most 5 s of it), the answer bounded. false if one failed.
 */
bool notifycall_common(struct notify_call *c, int timeout_s);
/* Release everything c holds (the password wiped). */
void notifycall_free(struct notify_call *c);

#endif
