/*
 * test_admission_rules.c - the admission decision, table-driven (conventions
 * of the rows in admission_world.h): queue order, small jobs passing a blocked
 * large one until the starvation bound, budgets and other limits, placement
 * on clusters, estimated starts.
 */
#include "tests/unit/admission_world.h"

// clang-format off
static const struct scenario scenarios[] = {
    /* order */
    {"priority: high before normal before low",
     .clusters = {CL("c0", "a100=4")},
     .tenants = {TN("t1", "a100=4"), TN("t2", "a100=4"), TN("t3", "a100=4")},
     .queued = {{.tenant = "t1", .gpus = 4, .prio = "low", .sub = -300},
                {.tenant = "t2", .gpus = 4, .sub = -200},
                {.tenant = "t3", .gpus = 4, .prio = "high", .sub = -100}},
     .expect = {{"q2", "admit c0"}, {"q1", "wait capacity:gpu:a100"}, {"q0", "wait"}}},
    {"same priority: earlier submit first",
     .clusters = {CL("c0", "a100=4")},
     .tenants = {TN("t1", "a100=4"), TN("t2", "a100=4")},
     .queued = {{.tenant = "t1", .gpus = 4, .sub = -100},
                {.tenant = "t2", .gpus = 4, .sub = -200}},
     .expect = {{"q1", "admit c0"}, {"q0", "wait capacity:gpu:a100"}}},
    /* fragmentation and starvation */
    {"a small job passes a blocked large one",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {GOLD_ACME},
     .starvation = 3600,
     .active = {{.tenant = "busy", .gpus = 6}},
     .queued = {{.tenant = "gold", .gpus = 8, .sub = -600}, {.tenant = "gold", .gpus = 2}},
     .expect = {{"q0", "wait capacity:gpu:a100"}, {"q1", "admit c0"}}},
    {"past the starvation bound the type is held for the large job",
     .types = "a100 t4",
     .clusters = {CL("c0", "a100=8 t4=4")},
     .tenants = {TN("gold", "a100=8 t4=4"), TN("busy", "a100=8")},
     .starvation = 3600,
     .active = {{.tenant = "busy", .gpus = 6}},
     .queued = {{.tenant = "gold", .gpus = 8, .sub = -7200},
                {.tenant = "gold", .gpus = 2},
                {.tenant = "gold", .type = "t4", .gpus = 2}},
     .expect = {{"q0", "wait capacity:gpu:a100"},
                {"q1", "wait starvation-hold"},
                {"q2", "admit c0"}}},
    {"a job no cluster can run does not hold the type",
     .clusters = {CL("c0", "a100=8", .max_time = 3600)},
     .tenants = {TN("gold", "a100=8")},
     .starvation = 3600,
     .queued = {{.gpus = 2, .tl = 7200, .sub = -7200}, {.gpus = 2, .tl = 600}},
     .expect = {{"q0", "wait"}, {"q1", "admit c0"}}},
    /* budgets and other limits */
    {"budget exhausted",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=4/8", .budget = 100, .used = 100)},
     .queued = {{.gpus = 1}},
     .expect = {{"q0", "wait budget @month_end"}}},
    {"budget not yet exhausted",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=4/8", .budget = 100, .used = 99.5)},
     .queued = {{.gpus = 1}},
     .expect = {{"q0", "admit c0"}}},
    {"project budget exhausted",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=4/8")},
     .projects = {PJ("x", "acme", NULL, .budget = 10, .used = 12)},
     .queued = {{.project = "x", .gpus = 1}, {.gpus = 1}},
     .expect = {{"q0", "wait budget @month_end"}, {"q1", "admit c0"}}},
    {"project limit below the tenant's",
     .clusters = {CL("c0", "a100=16")},
     .tenants = {TN("acme", "a100=8")},
     .projects = {PJ("small", "acme", "a100=4")},
     .active = {{.project = "small", .gpus = 2}},
     .queued = {{.project = "small", .gpus = 4}, {.gpus = 4}},
     .expect = {{"q0", "wait project-quota:gpu:a100 @0"}, {"q1", "admit c0"}}},
    {"cpu limit",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=8", .cpu = 16)},
     .active = {{.cpus = 10}},
     .queued = {{.gpus = 1, .cpus = 8}, {.gpus = 1, .cpus = 6}},
     .expect = {{"q0", "wait quota:cpu"}, {"q1", "admit c0"}}},
    {"memory limit",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=8", .mem = 64)},
     .active = {{.gpus = 1, .mem = 40}},
     .queued = {{.gpus = 1, .mem = 32}},
     .expect = {{"q0", "wait quota:memory_gib"}}},
    {"jobs limit",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=8", .jobs = 2)},
     .active = {{.gpus = 1}, {.cpus = 1}},
     .queued = {{.gpus = 1}},
     .expect = {{"q0", "wait quota:jobs"}}},
    {"project cpu limit",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=8")},
     .projects = {PJ("x", "acme", NULL, .cpu = 4)},
     .queued = {{.project = "x", .gpus = 1, .cpus = 8}, {.gpus = 1, .cpus = 8}},
     .expect = {{"q0", "wait project-quota:cpu"}, {"q1", "admit c0"}}},
    /* placement */
    {"GPU types never mix",
     .types = "a100 t4",
     .clusters = {CL("c0", "a100=4 t4=8"), CL("c1", "t4=8")},
     .tenants = {TN("gold", "a100=4 t4=8"), TN("busy", "a100=4")},
     .active = {{.tenant = "busy", .gpus = 4}},
     .queued = {{.tenant = "gold", .gpus = 2},
                {.tenant = "gold", .gpus = 2, .cluster = "c1"},
                {.tenant = "gold", .type = "t4", .gpus = 8}},
     .expect = {{"q0", "wait capacity:gpu:a100"},
                {"q1", "wait no-cluster-fits"}, /* c1 has no a100 at all */
                {"q2", "admit"}}},
    {"a job asking for a cluster waits for that cluster",
     .clusters = {CL("c0", "a100=8"), CL("c1", "a100=8")},
     .tenants = {TN("gold", "a100=8"), TN("busy", "a100=8")},
     .active = {{.tenant = "busy", .gpus = 8, .cluster = "c1"}},
     .queued = {{.tenant = "gold", .gpus = 2, .cluster = "c1"},
                {.tenant = "gold", .gpus = 2, .cluster = "c0"}},
     .expect = {{"q0", "wait capacity:gpu:a100"}, {"q1", "admit c0"}}},
    {"a cluster's maximum time limit",
     .clusters = {CL("c0", "a100=8", .max_time = 3600), CL("c1", "a100=8")},
     .tenants = {TN("gold", "a100=8")},
     .queued = {{.gpus = 2, .tl = 7200}, {.gpus = 2, .tl = 600, .cluster = "c0"}},
     .expect = {{"q0", "admit c1"}, {"q1", "admit c0"}}},
    {"a cluster's maximum time limit, the other one full",
     .clusters = {CL("c0", "a100=8", .max_time = 3600), CL("c1", "a100=8")},
     .tenants = {TN("gold", "a100=8"), TN("busy", "a100=8")},
     .active = {{.tenant = "busy", .gpus = 8, .cluster = "c1"}},
     .queued = {{.tenant = "gold", .gpus = 2, .tl = 7200}},
     .expect = {{"q0", "wait capacity:gpu:a100"}}},
    {"a cluster's maximum nodes",
     .clusters = {CL("c0", "a100=8", .max_nodes = 1), CL("c1", "a100=8")},
     .tenants = {TN("gold", "a100=8")},
     .queued = {{.gpus = 2, .nodes = 2}, {.gpus = 2, .cluster = "c0"}},
     .expect = {{"q0", "admit c1"}, {"q1", "admit c0"}}},
    {"a job asking for a cluster that is down",
     .clusters = {CL("c0", "a100=8", .down = true), CL("c1", "a100=8")},
     .tenants = {TN("gold", "a100=8")},
     .queued = {{.gpus = 2, .cluster = "c0"}, {.gpus = 2}},
     .expect = {{"q0", "wait cluster-down @0"}, {"q1", "admit c1"}}},
    {"nothing is placed on a cluster that is down",
     .clusters = {CL("c0", "a100=8", .down = true), CL("c1", "a100=8")},
     .tenants = {TN("gold", "a100=8"), TN("busy", "a100=8")},
     .active = {{.tenant = "busy", .gpus = 8, .cluster = "c1"}},
     .queued = {{.tenant = "gold", .gpus = 2}},
     .expect = {{"q0", "wait capacity:gpu:a100"}}},
    {"idle GPUs of a cluster that is down are not lent",
     .clusters = {CL("c0", "a100=8"), CL("c1", "a100=8", .down = true)},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "busy", .gpus = 4, .cluster = "c0"}},
     .queued = {{.tenant = "gold", .gpus = 6}, {.tenant = "acme", .gpus = 2}},
     .expect = {{"q0", "wait capacity:gpu:a100"}, {"q1", "wait capacity:gpu:a100"}}},
    {"a suspended tenant gets no admissions",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=4/8", .suspended = true)},
     .queued = {{.gpus = 1}, {.cpus = 1}},
     .expect = {{"q0", "wait"}, {"q1", "wait"}}},
    {"CPU-only jobs need no GPU quota",
     .clusters = {CL("c0", "a100=4", .cpus = 32)},
     .tenants = {TN("acme", NULL), TN("busy", "a100=4")},
     .active = {{.tenant = "busy", .gpus = 4}},
     .queued = {{.tenant = "acme", .cpus = 16, .sub = -20}, {.tenant = "acme", .cpus = 32}},
     .expect = {{"q0", "admit c0"}, {"q1", "wait capacity"}}},
    /* estimated starts */
    {"estimated starts follow the expected ends of running jobs",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("gold", "a100=8"), TN("busy", "a100=8")},
     .active = {{.tenant = "busy", .gpus = 4, .end = 200},
                {.tenant = "busy", .gpus = 4, .end = 100}},
     .queued = {{.tenant = "gold", .gpus = 4, .sub = -30},
                {.tenant = "gold", .gpus = 4, .sub = -20},
                {.tenant = "gold", .gpus = 4, .sub = -10}},
     .expect = {{"q0", "wait capacity:gpu:a100 @+100"},
                {"q1", "wait capacity:gpu:a100 @+200"},
                {"q2", "wait capacity:gpu:a100 @0"}}},
    {"estimated starts: two jobs served by one end",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("gold", "a100=8"), TN("busy", "a100=8")},
     .active = {{.tenant = "busy", .gpus = 8, .end = 100}},
     .queued = {{.tenant = "gold", .gpus = 4, .sub = -20}, {.tenant = "gold", .gpus = 4}},
     .expect = {{"q0", "wait capacity:gpu:a100 @+100"}, {"q1", "wait capacity:gpu:a100 @+100"}}},
    {"estimated starts ignore GPUs of a cluster that is down",
     .clusters = {CL("c0", "a100=8"), CL("c1", "a100=8", .down = true)},
     .tenants = {TN("gold", "a100=8"), TN("busy", "a100=8")},
     .active = {{.tenant = "busy", .gpus = 8, .cluster = "c0", .end = 100}},
     .queued = {{.tenant = "gold", .gpus = 4}},
     .expect = {{"q0", "wait capacity:gpu:a100 @+100"}}},
};
// clang-format on

START_TEST(test_scenario)
{
    struct world w;
    run_scenario(&w, &scenarios[_i]);
    admission_result_free(&w.r);
}
END_TEST

/* Equal inputs, equal decisions: every scenario twice. */
START_TEST(test_deterministic)
{
    check_deterministic(scenarios, sizeof scenarios / sizeof *scenarios);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("admission_rules");
    TCase *tc = tcase_create("admission_rules");
    tcase_add_loop_test(tc, test_scenario, 0, (int)(sizeof scenarios / sizeof *scenarios));
    tcase_add_test(tc, test_deterministic);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
