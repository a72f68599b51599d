/* notifycall.c - one delivery attempt's resources (see notifycall.h). */
#include "notifycall.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void notifycall_refuse(struct notify_call *c, bool permanent, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    c->permanent = permanent;
    if (c->h) {
        curl_easy_cleanup(c->h);
        c->h = NULL;
    }
}

size_t notifycall_reply(char *data, size_t size, size_t n, void *userdata)
{
    struct notify_call *c = userdata;
    size_t len = size * n;
    c->reply_total += len;
    if (c->reply_total > NOTIFYCALL_REPLY_MAX)
        return 0; /* libcurl ends the transfer (CURLE_WRITE_ERROR) */
    size_t room = NOTIFYCALL_REPLY_KEEP - c->reply_len;
    size_t take = len < room ? len : room;
    memcpy(c->reply + c->reply_len, data, take);
    c->reply_len += take;
    c->reply[c->reply_len] = '\0';
    return len;
}

bool notifycall_common(struct notify_call *c, int timeout_s)
{
    long total = (long)timeout_s * 1000;
    long connect = total < 5000 ? total : 5000;
    CURL *h = c->h;
    return curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_PROXY, "") == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, notifycall_reply) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_WRITEDATA, c) == CURLE_OK;
}

void notifycall_free(struct notify_call *c)
{
    if (c->h)
        curl_easy_cleanup(c->h);
    curl_slist_free_all(c->list);
    curl_slist_free_all(c->pin);
    free(c->upload);
    if (c->password) {
        explicit_bzero(c->password, strlen(c->password));
        free(c->password);
    }
    memset(c, 0, sizeof *c);
}
