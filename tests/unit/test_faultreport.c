/*
 * test_faultreport.c - reading POST /clusters/{name}/gpu-faults bodies
 * (api/faultreport.c) without a database: Alertmanager webhook payloads as
 * DCGM exporter alerts produce them (firing, resolved, the node from node,
 * Hostname or instance, the GPU label, the reason from the alert's name and
 * summary, startsAt in UTC), a Grafana payload with its extra fields, alerts
 * that cannot be used (skipped with a reason, the others kept), the limits,
 * and the operator's form with each of its refusals.
 */
#include "api/faultreport.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* JSON with ' for " (readable payloads). */
static json_t *parse(const char *text)
{
    char *s = strdup(text);
    ck_assert_ptr_nonnull(s);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    ck_assert_msg(j != NULL, "bad test JSON: %s: %s", e.text, s);
    free(s);
    return j;
}

static int read_body(const char *text, struct faultreport *fr, char *field, char *msg)
{
    json_t *j = parse(text);
    int st = faultreport_parse(j, fr, field, 64, msg, 256);
    json_decref(j);
    return st;
}

/* What dcgm-exporter's metrics carry, as Prometheus and Alertmanager pass them on. */
#define DCGM_ALERT(status, extra)                                                                  \
    "{'status':'" status "','labels':{'alertname':'GpuXidError','severity':'critical',"            \
    "'Hostname':'node-a100','UUID':'GPU-5d2c1f9e-0000','device':'nvidia1','gpu':'1',"              \
    "'modelName':'NVIDIA A100-SXM4-80GB','instance':'10.0.0.7:9400','job':'dcgm'" extra "},"       \
    "'annotations':{'summary':'XID 79 on GPU 1: fallen off the bus',"                              \
    "'description':'DCGM_FI_DEV_XID_ERRORS is 79'},"                                               \
    "'startsAt':'2026-12-02T09:15:04.117650283+01:00','endsAt':'0001-01-01T00:00:00Z',"            \
    "'generatorURL':'http://prometheus:9090/graph?g0.expr=DCGM_FI_DEV_XID_ERRORS','fingerprint':"  \
    "'1a30ba71cca2921f'}"

#define WEBHOOK(alerts)                                                                            \
    "{'version':'4','groupKey':'{}/{severity=\\'critical\\'}:{alertname=\\'GpuXidError\\'}',"      \
    "'truncatedAlerts':0,'status':'firing','receiver':'aidc','groupLabels':{'alertname':"          \
    "'GpuXidError'},'commonLabels':{'alertname':'GpuXidError'},'commonAnnotations':{},"            \
    "'externalURL':'http://alertmanager:9093','alerts':[" alerts "]}"

START_TEST(a_dcgm_alert_fires)
{
    struct faultreport fr;
    char field[64], msg[256];
    ck_assert_int_eq(read_body(WEBHOOK(DCGM_ALERT("firing", "")), &fr, field, msg), FAULTREPORT_OK);
    ck_assert(fr.webhook);
    ck_assert_str_eq(fr.source, "alertmanager");
    ck_assert_uint_eq(fr.n, 1);
    const struct faultreport_item *it = &fr.items[0];
    ck_assert(it->firing);
    ck_assert_ptr_null(it->error);
    ck_assert_str_eq(it->node, "node-a100"); /* Hostname before instance */
    ck_assert_int_eq(it->gpu, 1);
    ck_assert_str_eq(it->reason, "GpuXidError: XID 79 on GPU 1: fallen off the bus");
    ck_assert_str_eq(it->alert, "GpuXidError");
    ck_assert_str_eq(it->since, "2026-12-02T08:15:04Z"); /* +01:00 to UTC, whole seconds */
    faultreport_free(&fr);
}
END_TEST

START_TEST(resolved_and_the_node_labels)
{
    struct faultreport fr;
    char field[64], msg[256];
    /* node wins over Hostname (in Kubernetes, Hostname is the exporter's pod) */
    ck_assert_int_eq(
        read_body(WEBHOOK(DCGM_ALERT(
                      "resolved",
                      ",'node':'gpu-17'") ","
                                          "{'status':'firing','labels':{'instance':'gpu-18:9400',"
                                          "'alertname':'GpuDown'}},"
                                          "{'status':'firing','labels':{'instance':'gpu-19'}}"),
                  &fr, field, msg),
        FAULTREPORT_OK);
    ck_assert_uint_eq(fr.n, 3);
    ck_assert(!fr.items[0].firing);
    ck_assert_str_eq(fr.items[0].node, "gpu-17");
    ck_assert_str_eq(fr.items[1].node, "gpu-18"); /* the exporter's port dropped */
    ck_assert_int_eq(fr.items[1].gpu, -1);        /* no gpu label: every GPU of the node */
    ck_assert_str_eq(fr.items[1].reason, "GpuDown");
    ck_assert_ptr_null(fr.items[1].since);
    ck_assert_str_eq(fr.items[2].node, "gpu-19");
    ck_assert_str_eq(fr.items[2].reason, "alert");
    ck_assert_ptr_null(fr.items[2].alert);
    faultreport_free(&fr);
}
END_TEST

START_TEST(unusable_alerts_are_skipped_with_a_reason)
{
    struct faultreport fr;
    char field[64], msg[256];
    ck_assert_int_eq(read_body(WEBHOOK("{'status':'pending','labels':{'node':'a'}},"
                                       "{'status':'firing','labels':{'job':'dcgm'}},"
                                       "{'status':'firing','labels':{'instance':'[::1]:9400'}},"
                                       "{'status':'firing','labels':{'node':'a','gpu':'01'}},"
                                       "{'status':'firing','labels':{'node':'a','gpu':'1024'}},"
                                       "{'status':'firing','labels':{'node':'a','gpu':'-1'}},"
                                       "{'status':'firing','labels':'node=a'},"
                                       "'not an alert',"
                                       "{'status':'firing','labels':{'node':'bad node'}},"
                                       "{'status':'firing','labels':{'node':'a','gpu':'3'}}"),
                               &fr, field, msg),
                     FAULTREPORT_OK);
    ck_assert_uint_eq(fr.n, 10);
    for (size_t i = 0; i < 9; i++)
        ck_assert_msg(fr.items[i].error != NULL, "alert %zu was taken", i);
    ck_assert_ptr_nonnull(strstr(fr.items[0].error, "firing or resolved"));
    ck_assert_ptr_nonnull(strstr(fr.items[1].error, "no node label"));
    ck_assert_ptr_nonnull(strstr(fr.items[3].error, "label gpu"));
    ck_assert_ptr_null(fr.items[9].error);
    ck_assert_int_eq(fr.items[9].gpu, 3);
    faultreport_free(&fr);
}
END_TEST

START_TEST(grafana_and_long_texts)
{
    struct faultreport fr;
    char field[64], msg[256];
    /* Grafana's webhook: extra fields at both levels, read as Alertmanager's */
    char long_summary[1200];
    memset(long_summary, 'x', sizeof long_summary - 1);
    long_summary[sizeof long_summary - 1] = '\0';
    char body[2000];
    snprintf(
        body, sizeof body,
        "{'receiver':'aidc','status':'firing','orgId':1,'title':'[FIRING:1]','state':'alerting',"
        "'message':'x','alerts':[{'status':'firing','labels':{'alertname':'Xid\\u00e9',"
        "'node':'n1','gpu':'0'},'annotations':{'description':'%s'},'values':{'B':79},"
        "'silenceURL':'http://g/s','dashboardURL':'','panelURL':''}]}",
        long_summary);
    ck_assert_int_eq(read_body(body, &fr, field, msg), FAULTREPORT_OK);
    ck_assert_uint_eq(fr.n, 1);
    ck_assert_ptr_null(fr.items[0].error);
    ck_assert_str_eq(fr.items[0].alert, "Xid\xc3\xa9");
    ck_assert_uint_eq(strlen(fr.items[0].reason), 500 + 1); /* 500 characters, é has 2 bytes */
    ck_assert(strncmp(fr.items[0].reason, "Xid\xc3\xa9: xxx", 9) == 0);
    faultreport_free(&fr);
}
END_TEST

START_TEST(webhook_refusals)
{
    struct faultreport fr;
    char field[64], msg[256];
    ck_assert_int_eq(read_body("{'version':'3','alerts':[{}]}", &fr, field, msg), FAULTREPORT_BAD);
    ck_assert_str_eq(field, "version");
    faultreport_free(&fr);
    ck_assert_int_eq(read_body("{'version':4,'alerts':[{}]}", &fr, field, msg), FAULTREPORT_BAD);
    faultreport_free(&fr);
    ck_assert_int_eq(read_body("{'alerts':[]}", &fr, field, msg), FAULTREPORT_BAD);
    ck_assert_str_eq(field, "alerts");
    faultreport_free(&fr);
    ck_assert_int_eq(read_body("{'alerts':{'a':1}}", &fr, field, msg), FAULTREPORT_BAD);
    faultreport_free(&fr);
    /* one alert more than a request may hold */
    json_t *many = json_pack("{s:s, s:[]}", "version", "4", "alerts");
    for (int i = 0; i < FAULTREPORT_MAX_ALERTS + 1; i++)
        json_array_append_new(
            json_object_get(many, "alerts"),
            json_pack("{s:s, s:{s:s}}", "status", "firing", "labels", "node", "a"));
    ck_assert_int_eq(faultreport_parse(many, &fr, field, sizeof field, msg, sizeof msg),
                     FAULTREPORT_TOO_MANY);
    ck_assert_ptr_nonnull(strstr(msg, "max_alerts"));
    faultreport_free(&fr);
    json_array_remove(json_object_get(many, "alerts"), 0);
    ck_assert_int_eq(faultreport_parse(many, &fr, field, sizeof field, msg, sizeof msg),
                     FAULTREPORT_OK);
    ck_assert_uint_eq(fr.n, FAULTREPORT_MAX_ALERTS);
    faultreport_free(&fr);
    json_decref(many);
}
END_TEST

START_TEST(the_operators_form)
{
    struct faultreport fr;
    char field[64], msg[256];
    ck_assert_int_eq(read_body("{'node':'node-a100','gpus':[0,1],'reason':'XID 79',"
                               "'source':'operator'}",
                               &fr, field, msg),
                     FAULTREPORT_OK);
    ck_assert(!fr.webhook);
    ck_assert_str_eq(fr.source, "operator");
    ck_assert_uint_eq(fr.n, 2);
    ck_assert(fr.items[0].firing && fr.items[1].firing);
    ck_assert_int_eq(fr.items[0].gpu, 0);
    ck_assert_int_eq(fr.items[1].gpu, 1);
    ck_assert_str_eq(fr.items[1].reason, "XID 79");
    ck_assert_ptr_null(fr.items[1].since);
    faultreport_free(&fr);
    /* "all", or no gpus: the whole node; another source */
    ck_assert_int_eq(
        read_body("{'node':'n','gpus':'all','reason':'fans','source':'bmc.ipmi'}", &fr, field, msg),
        FAULTREPORT_OK);
    ck_assert_uint_eq(fr.n, 1);
    ck_assert_int_eq(fr.items[0].gpu, -1);
    ck_assert_str_eq(fr.source, "bmc.ipmi");
    faultreport_free(&fr);
    ck_assert_int_eq(read_body("{'node':'n','reason':'r'}", &fr, field, msg), FAULTREPORT_OK);
    ck_assert_int_eq(fr.items[0].gpu, -1);
    faultreport_free(&fr);

    static const struct {
        const char *body, *field;
        int status;
    } bad[] = {
        {"{'gpus':[0],'reason':'r'}", "node", FAULTREPORT_BAD},
        {"{'node':'a b','reason':'r'}", "node", FAULTREPORT_BAD},
        {"{'node':'-a','reason':'r'}", "node", FAULTREPORT_BAD},
        {"{'node':'n'}", "reason", FAULTREPORT_BAD},
        {"{'node':'n','reason':''}", "reason", FAULTREPORT_BAD},
        {"{'node':'n','reason':5}", "reason", FAULTREPORT_BAD},
        {"{'node':'n','reason':'r','gpus':[]}", "gpus", FAULTREPORT_BAD},
        {"{'node':'n','reason':'r','gpus':'some'}", "gpus", FAULTREPORT_BAD},
        {"{'node':'n','reason':'r','gpus':[1.5]}", "gpus", FAULTREPORT_BAD},
        {"{'node':'n','reason':'r','gpus':[-1]}", "gpus", FAULTREPORT_BAD},
        {"{'node':'n','reason':'r','gpus':[1024]}", "gpus", FAULTREPORT_BAD},
        {"{'node':'n','reason':'r','source':'Bob'}", "source", FAULTREPORT_BAD},
        {"{'node':'n','reason':'r','colour':'red'}", "colour", FAULTREPORT_BAD},
        {"{'node':'n','reason':'r','state':'healthy'}", "state", FAULTREPORT_BAD},
        {"[{'node':'n'}]", "body", FAULTREPORT_BAD},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = read_body(bad[i].body, &fr, field, msg);
        ck_assert_msg(st == bad[i].status && strcmp(field, bad[i].field) == 0, "%s: %d on %s (%s)",
                      bad[i].body, st, field, msg);
        faultreport_free(&fr);
    }
    /* 65 GPUs: more than a request may name */
    json_t *b = json_pack("{s:s, s:s, s:[]}", "node", "n", "reason", "r", "gpus");
    for (int i = 0; i <= FAULTREPORT_MAX_GPUS; i++)
        json_array_append_new(json_object_get(b, "gpus"), json_integer(i));
    ck_assert_int_eq(faultreport_parse(b, &fr, field, sizeof field, msg, sizeof msg),
                     FAULTREPORT_TOO_MANY);
    faultreport_free(&fr);
    json_decref(b);
    /* a reason of 500 characters is taken whole; control characters become spaces */
    char reason[600];
    memset(reason, 'r', 500);
    reason[500] = '\0';
    b = json_pack("{s:s, s:s}", "node", "n", "reason", reason);
    ck_assert_int_eq(faultreport_parse(b, &fr, field, sizeof field, msg, sizeof msg),
                     FAULTREPORT_OK);
    ck_assert_uint_eq(strlen(fr.items[0].reason), 500);
    faultreport_free(&fr);
    json_decref(b);
    ck_assert_int_eq(read_body("{'node':'n','reason':'line\\nbreak'}", &fr, field, msg),
                     FAULTREPORT_OK);
    ck_assert_str_eq(fr.items[0].reason, "line break");
    faultreport_free(&fr);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faultreport");
    TCase *tc = tcase_create("faultreport");
    tcase_add_test(tc, a_dcgm_alert_fires);
    tcase_add_test(tc, resolved_and_the_node_labels);
    tcase_add_test(tc, unusable_alerts_are_skipped_with_a_reason);
    tcase_add_test(tc, grafana_and_long_texts);
    tcase_add_test(tc, webhook_refusals);
    tcase_add_test(tc, the_operators_form);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
