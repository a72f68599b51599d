/* notifymail.c - an e-mail delivery attempt (see notifymail.h). */
#include "notifymail.h"

#include "../db/notify.h"
#include "../lib/config.h"
#include "../lib/credref.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LINE_MAX_BYTES 900 /* SMTP allows 998 per line: longer body lines are wrapped */

bool notifymail_address_ok(const char *addr)
{
    size_t n = strlen(addr);
    const char *at = strchr(addr, '@');
    if (n < 3 || n > 254 || !at || at == addr || !at[1] || strchr(at + 1, '@'))
        return false;
    for (const char *c = addr; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f || strchr("<>,;\"\\()[]", *c))
            return false;
    return true;
}

/* Append text to sb with every control character but tab turned into a space. */
static void put_clean(struct sbuf *sb, const char *text)
{
    for (const char *c = text; *c; c++) {
        char ch = *c;
        if ((unsigned char)ch < 0x20 && ch != '\t')
            ch = ' ';
        sbuf_putc(sb, ch);
    }
}

/* One line of the summary: "label: value" for a string or number member of o. */
static void put_field(struct sbuf *sb, const json_t *o, const char *key, const char *label)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_string(v)) {
        sbuf_printf(sb, "%s: ", label);
        put_clean(sb, json_string_value(v));
        sbuf_puts(sb, "\n");
    } else if (json_is_integer(v))
        sbuf_printf(sb, "%s: %lld\n", label, (long long)json_integer_value(v));
    else if (json_is_real(v))
        sbuf_printf(sb, "%s: %g\n", label, json_real_value(v));
}

/* The human part of the message: what happened, from the delivered document. */
static void summary(struct sbuf *sb, const char *event, const json_t *data)
{
    static const struct {
        const char *obj;
        const char *keys[8];
    } shapes[] = {
        {"job", {"name", "id", "tenant", "project", "state", "exit_code", "reason", "at"}},
        {"session", {"name", "id", "app", "tenant", "project", "job", "at", NULL}},
        {"budget",
         {"tenant", "project", "period", "threshold", "used_gpu_hours", "limit_gpu_hours", NULL}},
        {"allocation", {"id", "tenant", "project", "starts_on", "ends_on", NULL}},
    };
    sbuf_printf(sb, "aidc notification: %s\n\n", event);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const json_t *o = json_object_get(data, shapes[i].obj);
        if (!json_is_object(o))
            continue;
        for (size_t k = 0; k < 8 && shapes[i].keys[k]; k++)
            put_field(sb, o, shapes[i].keys[k], shapes[i].keys[k]);
    }
    sbuf_puts(sb, "\nYou receive this because your notification settings ask for it;\n"
                  "change them in the portal or with PUT /api/v1/me/notifications.\n");
}

/* The subject's text (ASCII kept, the rest as it is: the header encodes it). */
static void subject_text(struct sbuf *sb, const char *event, const json_t *data)
{
    sbuf_printf(sb, "[aidc] %s", event);
    const json_t *job = json_object_get(data, "job");
    const json_t *ses = json_object_get(data, "session");
    const json_t *bud = json_object_get(data, "budget");
    const char *name = json_string_value(json_object_get(job ? job : ses, "name"));
    if (name) {
        sbuf_puts(sb, ": ");
        put_clean(sb, name);
    } else if (bud) {
        const char *t = json_string_value(json_object_get(bud, "tenant"));
        const char *p = json_string_value(json_object_get(bud, "project"));
        sbuf_printf(sb, ": %s%s%s", t ? t : "", p ? "/" : "", p ? p : "");
    }
}

/* text as an RFC 2047 encoded word (base64 UTF-8): no header injection, any script. */
static void put_encoded(struct sbuf *sb, const char *text)
{
    size_t n = sbuf_utf8_prefix(text, 600);
    unsigned char *out = xmalloc(4 * ((n + 2) / 3) + 1);
    int k = EVP_EncodeBlock(out, (const unsigned char *)text, (int)n);
    sbuf_printf(sb, "=?UTF-8?B?%.*s?=", k > 0 ? k : 0, (const char *)out);
    free(out);
}

/* body with CRLF line ends, lines wrapped at LINE_MAX_BYTES, into sb. */
static void put_body(struct sbuf *sb, const char *body)
{
    size_t col = 0;
    for (const char *c = body; *c; c++) {
        if (*c == '\n' || col >= LINE_MAX_BYTES) {
            sbuf_puts(sb, "\r\n");
            col = 0;
            if (*c == '\n')
                continue;
        }
        if (*c != '\r') {
            sbuf_putc(sb, *c);
            col++;
        }
    }
    sbuf_puts(sb, "\r\n");
}

static char *message(const struct config *cfg, const struct db_notification *n)
{
    json_error_t jerr;
    json_t *doc = json_loads(n->body, 0, &jerr);
    const json_t *data = json_object_get(doc, "data");
    struct sbuf subj = {0}, text = {0}, msg = {0};
    subject_text(&subj, n->event, data);
    summary(&text, n->event, data);
    char *pretty = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (pretty) {
        sbuf_puts(&text, "\nThe event as delivered to webhooks:\n\n");
        sbuf_puts(&text, pretty);
        free(pretty);
    }
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
    sbuf_printf(&msg, "From: %s\r\nTo: %s\r\nSubject: ", cfg->smtp_from, n->email);
    put_encoded(&msg, sbuf_str(&subj));
    sbuf_printf(&msg,
                "\r\nDate: %s\r\nMessage-ID: <%s@aidc>\r\nX-Aidc-Event: %s\r\n"
                "Auto-Submitted: auto-generated\r\n"
                "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
                "Content-Transfer-Encoding: 8bit\r\n\r\n",
                date, n->id, n->event);
    put_body(&msg, sbuf_str(&text));
    json_decref(doc);
    sbuf_free(&subj);
    sbuf_free(&text);
    return sbuf_steal(&msg);
}

static size_t read_upload(char *buf, size_t size, size_t nitems, void *userdata)
{
    struct notify_call *c = userdata;
    size_t room = size * nitems, left = c->upload_len - c->upload_off;
    size_t take = left < room ? left : room;
    memcpy(buf, c->upload + c->upload_off, take);
    c->upload_off += take;
    return take;
}

/* Whether the SMTP server is on the loopback (then STARTTLS may be skipped). */
static bool smtp_loopback(const char *url)
{
    CURLU *u = curl_url();
    char *host = NULL;
    bool lo = false;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
        lo = strcmp(host, "127.0.0.1") == 0 || strcmp(host, "[::1]") == 0 ||
             strcasecmp(host, "localhost") == 0;
    curl_free(host);
    curl_url_cleanup(u);
    return lo;
}

static bool options(struct notify_call *c, const struct config *cfg, char *from)
{
    CURL *h = c->h;
    bool tls_required = !smtp_loopback(cfg->smtp_url);
    return notifycall_common(c, cfg->notify_timeout_seconds) &&
           curl_easy_setopt(h, CURLOPT_URL, cfg->smtp_url) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "smtp,smtps") == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_USE_SSL,
                            tls_required ? (long)CURLUSESSL_ALL : (long)CURLUSESSL_TRY) ==
               CURLE_OK &&
           (!cfg->smtp_ca_file[0] ||
            curl_easy_setopt(h, CURLOPT_CAINFO, cfg->smtp_ca_file) == CURLE_OK) &&
           (!cfg->smtp_user[0] ||
            (curl_easy_setopt(h, CURLOPT_USERNAME, cfg->smtp_user) == CURLE_OK &&
             curl_easy_setopt(h, CURLOPT_PASSWORD, c->password) == CURLE_OK)) &&
           curl_easy_setopt(h, CURLOPT_MAIL_FROM, from) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_MAIL_RCPT, c->list) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_UPLOAD, 1L) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_READFUNCTION, read_upload) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_READDATA, c) == CURLE_OK &&
           curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->upload_len) == CURLE_OK;
}

void notifymail_prepare(const struct config *cfg, const struct db_notification *n,
                        struct notify_call *c)
{
    if (!cfg->smtp_url[0]) {
        notifycall_refuse(c, true, "e-mail is not set up on this platform (AIDC_SMTP_URL)");
        return;
    }
    if (!n->email_on) {
        notifycall_refuse(c, true, "e-mail notifications were turned off since");
        return;
    }
    if (!notifymail_address_ok(n->email)) {
        notifycall_refuse(c, true, "the user has no usable e-mail address");
        return;
    }
    if (cfg->smtp_user[0]) {
        int e = 0;
        char err[256] = "";
        c->password = credref_line(cfg->smtp_password_ref, &e, err, sizeof err);
        if (!c->password) {
            notifycall_refuse(c, false, "SMTP password: %s", err);
            return;
        }
    }
    char to[300], from[300];
    snprintf(to, sizeof to, "<%s>", n->email);
    snprintf(from, sizeof from, "<%s>", cfg->smtp_from);
    c->list = curl_slist_append(NULL, to);
    c->upload = message(cfg, n);
    c->upload_len = strlen(c->upload);
    c->h = curl_easy_init();
    if (!c->list || !c->h || !options(c, cfg, from))
        notifycall_refuse(c, false, "cannot prepare the e-mail");
}
