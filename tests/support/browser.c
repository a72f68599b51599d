/* browser.c - the single sign-on tests' browser (see browser.h). */
#include "browser.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t discard(char *p, size_t s, size_t n, void *u)
{
    (void)p;
    (void)u;
    return s * n;
}

void browser_open(struct browser *b)
{
    memset(b, 0, sizeof *b);
    b->h = curl_easy_init();
    ck_assert_ptr_nonnull(b->h);
    curl_easy_setopt(b->h, CURLOPT_COOKIEFILE, ""); /* the cookie engine, in memory */
    curl_easy_setopt(b->h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(b->h, CURLOPT_TIMEOUT, 15L);
}

void browser_close(struct browser *b)
{
    curl_easy_cleanup(b->h);
    b->h = NULL;
}

long browser_get(struct browser *b, const char *url)
{
    curl_easy_setopt(b->h, CURLOPT_URL, url);
    ck_assert_int_eq(curl_easy_perform(b->h), CURLE_OK);
    curl_easy_getinfo(b->h, CURLINFO_RESPONSE_CODE, &b->status);
    char *loc = NULL;
    curl_easy_getinfo(b->h, CURLINFO_REDIRECT_URL, &loc);
    snprintf(b->location, sizeof b->location, "%s", loc ? loc : "");
    return b->status;
}

bool browser_to_callback(struct browser *b, const char *base, const char *url)
{
    char next[4096];
    snprintf(next, sizeof next, "%s", url);
    for (int i = 0; i < 20; i++) {
        browser_get(b, next);
        if (b->status < 300 || b->status >= 400 || !b->location[0])
            return false;
        if (strstr(b->location, base) == b->location && strstr(b->location, "/callback?"))
            return true;
        snprintf(next, sizeof next, "%s", b->location);
    }
    return false;
}

char *browser_cookie(struct browser *b, const char *name)
{
    struct curl_slist *all = NULL, *c;
    char *out = NULL;
    curl_easy_getinfo(b->h, CURLINFO_COOKIELIST, &all);
    for (c = all; c && !out; c = c->next) {
        /* domain, tailmatch, path, secure, expires, name, value: tab-separated */
        const char *f = c->data;
        for (int k = 0; k < 5 && f; k++)
            f = strchr(f, '\t') ? strchr(f, '\t') + 1 : NULL;
        size_t nl = strlen(name);
        if (f && strncmp(f, name, nl) == 0 && f[nl] == '\t' && f[nl + 1])
            out = strdup(f + nl + 1);
    }
    curl_slist_free_all(all);
    return out;
}

long browser_post_empty(const char *url)
{
    CURL *h = curl_easy_init();
    ck_assert_ptr_nonnull(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 15L);
    ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_cleanup(h);
    return st;
}
