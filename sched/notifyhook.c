/* notifyhook.c - a webhook delivery attempt (see notifyhook.h). */
#include "notifyhook.h"

#include "../db/notify.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/urlguard.h"
#include "../lib/xalloc.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

bool notifyhook_sign(const char *secret, const char *body, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t klen = strlen(secret);
    if (klen > 1024 ||
        !HMAC(EVP_sha256(), secret, (int)klen, (const unsigned char *)body, strlen(body), md,
              &mdlen) ||
        mdlen != 32)
        return false;
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < mdlen; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[64] = '\0';
    return true;
}

/*
 * The last check, as libcurl opens the socket: the address must pass the
 * guard whatever led there (the pinned address, a literal host).
 */
static curl_socket_t open_checked(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    const struct notify_call *c = clientp;
    if (purpose != CURLSOCKTYPE_IPCXN || !urlguard_addr_allowed(&a->addr, c->allow_loopback))
        return CURL_SOCKET_BAD;
    return socket(a->family, a->socktype, a->protocol);
}

static bool add_header(struct notify_call *c, const char *h)
{
    struct curl_slist *l = curl_slist_append(c->list, h);
    if (l)
        c->list = l;
    return l != NULL;
}

static bool headers(struct notify_call *c, const struct db_notification *n, const char *sig)
{
    char line[160];
    bool ok = add_header(c, "Content-Type: application/json") &&
              add_header(c, "User-Agent: aidc-notifier") && add_header(c, "Expect:");
    int k = snprintf(line, sizeof line, "X-Aidc-Event: %s", n->event);
    ok = ok && k > 0 && (size_t)k < sizeof line && add_header(c, line);
    k = snprintf(line, sizeof line, "X-Aidc-Delivery: %s", n->id);
    ok = ok && k > 0 && (size_t)k < sizeof line && add_header(c, line);
    k = snprintf(line, sizeof line, "X-Aidc-Signature: sha256=%s", sig);
    return ok && k > 0 && (size_t)k < sizeof line && add_header(c, line);
}

static bool options(struct notify_call *c, const struct config *cfg,
                    const struct db_notification *n, bool https)
{
    CURL *h = c->h;
    return notifycall_common(c, cfg->notify_timeout_seconds) &&
           curl_easy_setopt(h, CURLOPT_URL, n->target) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, https ? "https" : "http") == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "https") == CURLE_OK &&
           (!c->pin || curl_easy_setopt(h, CURLOPT_RESOLVE, c->pin) == CURLE_OK) &&
           curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_checked) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, c) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->list) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_POSTFIELDS, n->body) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(n->body)) ==
               CURLE_OK;
}

void notifyhook_prepare(const struct config *cfg, const struct db_notification *n,
                        struct notify_call *c)
{
    c->allow_loopback = cfg->webhook_allow_loopback;
    if (!n->secret || !n->secret[0]) {
        notifycall_refuse(c, true, "the webhook was removed from the preferences");
        return;
    }
    struct urlguard_target t;
    char why[300], pin[600];
    if (urlguard_check(n->target, c->allow_loopback, &t, why, sizeof why) != 0) {
        notifycall_refuse(c, true, "refused: the URL %s", why);
        return;
    }
    if (!t.literal) {
        int e = urlguard_resolve(&t, c->allow_loopback, pin, sizeof pin, why, sizeof why);
        if (e) {
            notifycall_refuse(c, e != AIDC_EUNAVAIL, "%s%s", e != AIDC_EUNAVAIL ? "refused: " : "",
                              why);
            return;
        }
        c->pin = curl_slist_append(NULL, pin);
        if (!c->pin) {
            notifycall_refuse(c, false, "out of memory");
            return;
        }
    }
    char sig[65];
    if (!notifyhook_sign(n->secret, n->body, sig)) {
        notifycall_refuse(c, false, "cannot sign the delivery");
        return;
    }
    c->h = curl_easy_init();
    if (!c->h || !headers(c, n, sig) || !options(c, cfg, n, t.https))
        notifycall_refuse(c, false, "cannot prepare the request");
}
