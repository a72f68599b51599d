/*
 * test_admission.c - the admission decision, table-driven (conventions of the
 * rows in admission_world.h): admission within the guarantee, borrowing only
 * on idle GPUs, limits, and reclaim (which borrowed jobs are preempted).
 */
#include "tests/unit/admission_world.h"

// clang-format off
static const struct scenario scenarios[] = {
    /* guaranteed admission and quota waits */
    {"within guaranteed: admitted, not preemptible",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=4/8")},
     .queued = {{.gpus = 4}},
     .expect = {{"q0", "admit c0"}}},
    {"running guaranteed work counts: the next job borrows",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=4/8")},
     .active = {{.gpus = 2}},
     .queued = {{.gpus = 2, .sub = -20}, {.gpus = 2, .sub = -10}},
     .expect = {{"q0", "admit c0"}, {"q1", "borrow c0"}}},
    {"borrowed jobs do not use up the guarantee",
     .clusters = {CL("c0", "a100=16")},
     .tenants = {TN("acme", "a100=4/8")},
     .active = {{.gpus = 4, .pre = true}},
     .queued = {{.gpus = 4}},
     .expect = {{"q0", "admit c0"}}},
    {"no quota for a type",
     .types = "a100 t4",
     .clusters = {CL("c0", "a100=8 t4=8")},
     .tenants = {TN("acme", "a100=4/8")},
     .queued = {{.type = "t4", .gpus = 1}},
     .expect = {{"q0", "wait quota:gpu:t4 @0"}}},
    {"beyond the limit, borrowed jobs included",
     .clusters = {CL("c0", "a100=16")},
     .tenants = {TN("acme", "a100=4/8")},
     .active = {{.gpus = 4}, {.gpus = 2, .pre = true}},
     .queued = {{.gpus = 4}},
     /* when the first of its own jobs ends (both a day from now) */
     .expect = {{"q0", "wait quota:gpu:a100 @+86400"}}},
    /* borrowing */
    {"borrowing on idle GPUs",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=0/8")},
     .queued = {{.gpus = 4}},
     .expect = {{"q0", "borrow c0"}}},
    {"no borrowing while guaranteed work waits, whatever the priority",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "busy", .gpus = 4}},
     .queued = {{.tenant = "gold", .gpus = 6, .prio = "low"},
                {.tenant = "acme", .gpus = 2, .prio = "high"}},
     .expect = {{"q0", "wait capacity:gpu:a100"}, {"q1", "wait capacity:gpu:a100"}}},
    {"guaranteed work first, borrowing only gets what is left",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("gold", "a100=4/4"), TN("acme", "a100=0/16")},
     .queued = {{.tenant = "gold", .gpus = 4, .prio = "low", .sub = -10},
                {.tenant = "acme", .gpus = 4, .prio = "high", .sub = -30},
                {.tenant = "acme", .gpus = 2, .prio = "high", .sub = -20}},
     .expect = {{"q0", "admit c0"}, {"q1", "borrow c0"}, {"q2", "wait capacity:gpu:a100"}}},
    /* idle means "not needed by waiting guaranteed work": 8 free, 6 needed,
     * so 2 may be lent even though the 6 are split over two clusters */
    {"borrowing takes only what waiting guaranteed work leaves, even on fragments",
     .clusters = {CL("c0", "a100=8"), CL("c1", "a100=8")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "busy", .gpus = 4, .cluster = "c0"},
                {.tenant = "busy", .gpus = 4, .cluster = "c1"}},
     .queued = {{.tenant = "gold", .gpus = 6},
                {.tenant = "acme", .gpus = 2},
                {.tenant = "acme", .gpus = 2}},
     .expect = {{"q0", "wait capacity:gpu:a100"},
                {"q1", "borrow"},
                {"q2", "wait capacity:gpu:a100"}}},
    /* limits hold for borrowing too, with everything admitted in the same run */
    {"two borrowing jobs stay within the limit",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=0/4")},
     .queued = {{.gpus = 4, .sub = -20}, {.gpus = 4, .sub = -10}},
     .expect = {{"q0", "borrow c0"}, {"q1", "wait quota:gpu:a100"}}},
    {"guaranteed work admitted later counts against a borrower's limit",
     .clusters = {CL("c0", "a100=16")},
     .tenants = {TN("acme", "a100=4/6")},
     .queued = {{.gpus = 6, .prio = "high"}, {.gpus = 4, .prio = "low"}},
     .expect = {{"q1", "admit c0"}, {"q0", "wait quota:gpu:a100"}}},
    {"jobs limit holds across borrowing",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=0/8", .jobs = 1)},
     .queued = {{.gpus = 2, .sub = -20}, {.gpus = 2, .sub = -10}},
     .expect = {{"q0", "borrow c0"}, {"q1", "wait quota:jobs"}}},
    {"project limit holds across borrowing",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("acme", "a100=0/8")},
     .projects = {PJ("x", "acme", "a100=2")},
     .queued = {{.project = "x", .gpus = 2, .sub = -20},
                {.project = "x", .gpus = 2, .sub = -10}},
     .expect = {{"q0", "borrow c0"}, {"q1", "wait project-quota:gpu:a100"}}},
    /* reclaim */
    {"reclaim preempts the newest borrowed job",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "acme", .gpus = 4, .pre = true, .adm = -200},
                {.tenant = "acme", .gpus = 4, .pre = true, .adm = -100}},
     .queued = {{.tenant = "gold", .gpus = 4}},
     .expect = {{"q0", "wait @+30"}, {"a1", "preempt q0"}, {"a0", "keep"}}},
    {"reclaim: lowest priority before newest",
     .clusters = {CL("c0", "a100=12")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "acme", .gpus = 4, .pre = true, .prio = "low", .adm = -300},
                {.tenant = "acme", .gpus = 4, .pre = true, .adm = -100},
                {.tenant = "acme", .gpus = 4, .pre = true, .prio = "high", .adm = -50}},
     .queued = {{.tenant = "gold", .gpus = 4}},
     .expect = {{"q0", "wait"}, {"a0", "preempt q0"}}},
    {"reclaim two: the low ones, newest first",
     .clusters = {CL("c0", "a100=12")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "acme", .gpus = 4, .pre = true, .adm = -50},
                {.tenant = "acme", .gpus = 4, .pre = true, .prio = "low", .adm = -300},
                {.tenant = "acme", .gpus = 4, .pre = true, .prio = "low", .adm = -100}},
     .queued = {{.tenant = "gold", .gpus = 8}},
     .expect = {{"q0", "wait"}, {"a1", "preempt q0"}, {"a2", "preempt q0"}}},
    {"reclaim 4 from borrowers of 1, 1, 4: only the 4",
     .clusters = {CL("c0", "a100=6")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "acme", .gpus = 1, .pre = true, .prio = "low", .adm = -100},
                {.tenant = "acme", .gpus = 1, .pre = true, .prio = "low", .adm = -200},
                {.tenant = "acme", .gpus = 4, .pre = true, .prio = "low", .adm = -300}},
     .queued = {{.tenant = "gold", .gpus = 4}},
     .expect = {{"q0", "wait"}, {"a2", "preempt q0"}}},
    {"reclaim drops a first choice that is not needed",
     .clusters = {CL("c0", "a100=9")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "acme", .gpus = 1, .pre = true, .prio = "low", .adm = -100},
                {.tenant = "acme", .gpus = 4, .pre = true, .prio = "low", .adm = -200},
                {.tenant = "acme", .gpus = 4, .pre = true, .adm = -300}},
     .queued = {{.tenant = "gold", .gpus = 4}},
     .expect = {{"q0", "wait"}, {"a1", "preempt q0"}}},
    {"reclaim counts free GPUs first",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "acme", .gpus = 2, .pre = true, .prio = "low", .adm = -100},
                {.tenant = "acme", .gpus = 4, .pre = true, .prio = "low", .adm = -200}},
     .queued = {{.tenant = "gold", .gpus = 4}},
     .expect = {{"q0", "wait"}, {"a0", "preempt q0"}}},
    {"reclaim the fewest jobs, even when newer ones are smaller",
     .clusters = {CL("c0", "a100=7")},
     .tenants = {GOLD_ACME},
     .active = {{.tenant = "acme", .gpus = 2, .pre = true, .adm = -100},
                {.tenant = "acme", .gpus = 2, .pre = true, .adm = -200},
                {.tenant = "acme", .gpus = 3, .pre = true, .adm = -300}},
     .queued = {{.tenant = "gold", .gpus = 3}},
     .expect = {{"q0", "wait"}, {"a2", "preempt q0"}}},
    {"reclaim only preemptible jobs of the type on an allowed cluster",
     .types = "a100 t4",
     .clusters = {CL("c0", "a100=4 t4=4"), CL("c1", "a100=4")},
     .tenants = {TN("gold", "a100=4"), TN("acme", "a100=0/8 t4=0/8"), TN("busy", "a100=4")},
     .active = {{.tenant = "acme", .type = "t4", .gpus = 4, .pre = true, .cluster = "c0"},
                {.tenant = "busy", .gpus = 4, .cluster = "c0"},
                {.tenant = "acme", .gpus = 4, .pre = true, .cluster = "c1"}},
     .queued = {{.tenant = "gold", .gpus = 4, .cluster = "c0"}},
     .expect = {{"q0", "wait capacity:gpu:a100"}}},
    {"reclaim on the other cluster when the job allows it",
     .types = "a100 t4",
     .clusters = {CL("c0", "a100=4 t4=4"), CL("c1", "a100=4")},
     .tenants = {TN("gold", "a100=4"), TN("acme", "a100=0/8 t4=0/8"), TN("busy", "a100=4")},
     .active = {{.tenant = "acme", .type = "t4", .gpus = 4, .pre = true, .cluster = "c0"},
                {.tenant = "busy", .gpus = 4, .cluster = "c0"},
                {.tenant = "acme", .gpus = 4, .pre = true, .cluster = "c1"}},
     .queued = {{.tenant = "gold", .gpus = 4}},
     .expect = {{"q0", "wait"}, {"a2", "preempt q0"}}},
    {"GPUs being released are used before preempting, and not twice",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("gold", "a100=4"), TN("silver", "a100=4"), TN("acme", "a100=0/8")},
     .active = {{.tenant = "acme", .gpus = 4, .pre = true, .stop = true, .adm = -100},
                {.tenant = "acme", .gpus = 4, .pre = true, .adm = -200}},
     .queued = {{.tenant = "gold", .gpus = 4, .prio = "high"}, {.tenant = "silver", .gpus = 4}},
     .expect = {{"q0", "wait"}, {"q1", "wait"}, {"a1", "preempt q1"}}},
    {"what a preempted job frees beyond the need serves the next job",
     .clusters = {CL("c0", "a100=12")},
     .tenants = {TN("gold", "a100=4"), TN("silver", "a100=4"), TN("acme", "a100=0/12")},
     .active = {{.tenant = "acme", .gpus = 8, .pre = true, .prio = "low"},
                {.tenant = "acme", .gpus = 4, .pre = true}},
     .queued = {{.tenant = "gold", .gpus = 4, .prio = "high"}, {.tenant = "silver", .gpus = 4}},
     .expect = {{"q0", "wait"}, {"q1", "wait"}, {"a0", "preempt q0"}}},
    {"free GPUs promised to a reclaiming job are not given away",
     .clusters = {CL("c0", "a100=8")},
     .tenants = {TN("gold", "a100=4"), TN("silver", "a100=2"), TN("acme", "a100=0/8")},
     .active = {{.tenant = "acme", .gpus = 2, .pre = true, .prio = "low"},
                {.tenant = "acme", .gpus = 4, .pre = true}},
     .queued = {{.tenant = "gold", .gpus = 4, .prio = "high"}, {.tenant = "silver", .gpus = 2}},
     .expect = {{"q0", "wait"}, {"q1", "wait"}, {"a0", "preempt q0"}, {"a1", "preempt q1"}}},
    {"a CPU shortage does not make free GPUs look reclaimed",
     .clusters = {CL("c0", "a100=4", .cpus = 8)},
     .tenants = {TN("gold", "a100=4"), TN("busy", NULL)},
     .active = {{.tenant = "busy", .cpus = 8}},
     .queued = {{.tenant = "gold", .gpus = 2, .cpus = 4, .prio = "high"},
                {.tenant = "gold", .gpus = 2}},
     .expect = {{"q0", "wait"}, {"q1", "admit c0"}}},
    {"free GPUs without free cores: the reason names the cores",
     .clusters = {CL("c0", "a100=4", .cpus = 2)},
     .tenants = {TN("gold", "a100=4"), TN("busy", NULL)},
     .active = {{.tenant = "busy", .cpus = 2}},
     .queued = {{.tenant = "gold", .gpus = 1, .cpus = 1}},
     .expect = {{"q0", "wait capacity:cpu"}}},
    {"a reclaim missed for want of cores does not stop a later reclaim",
     .clusters = {CL("c0", "a100=8", .cpus = 16)},
     .tenants = {TN("gold", "a100=8"), TN("silver", "a100=8"), TN("acme", "a100=0/8"),
                 TN("busy", NULL)},
     .active = {{.tenant = "busy", .cpus = 11},
                {.tenant = "acme", .gpus = 4, .cpus = 1, .pre = true}},
     .queued = {{.tenant = "gold", .gpus = 2, .cpus = 8, .sub = -20},
                {.tenant = "silver", .gpus = 6, .cpus = 2, .sub = -10}},
     .expect = {{"q0", "wait"}, {"q1", "wait reclaim:gpu:a100"}, {"a1", "preempt q1"}}},
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

/* The builder itself: a row becomes the snapshot it describes. */
START_TEST(test_builder)
{
    struct world w;
    size_t i = 0;
    while (strcmp(scenarios[i].name, "no quota for a type") != 0)
        i++;
    build(&w, &scenarios[i]);
    ck_assert_uint_eq(w.s.ngpu_types, 2);
    ck_assert_str_eq(w.s.gpu_types[1], "t4");
    ck_assert_int_eq(w.s.clusters[0].gpus[1], 8);
    ck_assert(w.s.tenants[0].gpu[0].guaranteed == 4 && w.s.tenants[0].gpu[0].limit == 8);
    ck_assert(w.s.tenants[0].gpu[1].limit == 0 && w.s.tenants[0].cpu_limit == ADM_UNLIMITED);
    ck_assert_int_eq(w.s.queued[0].gpu_type, 1);
    ck_assert_int_eq(w.s.queued[0].cluster, -1);
    ck_assert_int_eq(w.s.queued[0].priority, ADM_NORMAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("admission");
    TCase *tc = tcase_create("admission");
    tcase_add_test(tc, test_builder);
    tcase_add_loop_test(tc, test_scenario, 0, (int)(sizeof scenarios / sizeof *scenarios));
    tcase_add_test(tc, test_deterministic);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
