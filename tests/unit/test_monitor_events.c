/* pano-monitor's events (monitor_events.h): the exact fields, names, units
 * and values of kickstart.inv.start, kickstart.inv.online and
 * kickstart.inv.end for known inputs, and that every field is one the
 * event's schema (schemas/events/) describes. */
#include "monitor_events.h"
#include "schema.h"
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Serialize the fields, free them, compare with what is expected. */
static void assert_json(pano_json *ev, const char *expected)
{
    char *text = pano_json_serialize(ev, NULL);
    ck_assert_str_eq(text, expected);
    free(text);
}

/* The schema of an event, parsed from the built-in copy of schemas/. */
static pano_json *schema_of(const char *event)
{
    char path[128];
    snprintf(path, sizeof path, "events/%s.schema.json", event);
    for (const pano_schema_file *f = pano_builtin_schemas; f->path; f++) {
        if (strcmp(f->path, path) != 0)
            continue;
        char err[256];
        pano_json *s = pano_json_parse(f->text, strlen(f->text), 0, err, sizeof err);
        ck_assert_msg(s != NULL, "%s: %s", path, err);
        return s;
    }
    ck_abort_msg("no schema %s", path);
    return NULL;
}

/* Every field of ev is a property of the event's schema, and every field
 * the schema requires is there. */
static void assert_schema_fields(const char *event, const pano_json *ev)
{
    pano_json *schema = schema_of(event);
    pano_json *props = pano_json_get(schema, "properties");
    ck_assert(props != NULL);
    for (size_t i = 0; i < pano_json_len(ev); i++)
        ck_assert_msg(pano_json_get(props, pano_json_key_at(ev, i)) != NULL,
                      "%s: '%s' is not in the schema", event, pano_json_key_at(ev, i));
    pano_json *required = pano_json_get(schema, "required");
    for (size_t i = 0; i < pano_json_len(required); i++) {
        const char *key = pano_json_at(required, i)->u.string.text;
        ck_assert_msg(pano_json_get(ev, key) != NULL, "%s: required '%s' missing", event, key);
    }
    pano_json_free(schema);
}

static const pano_tree_totals totals = {
    .utime = 1.5, .stime = 0.25, .iowait = 0.0125, .vm = 10240, .rss = 2048,
    .vm_peak = 12000, .rss_peak = 3000, .procs = 3, .threads = 5, .bread = 4096,
    .bwrite = 8192, .rchar = 100000, .wchar = 200000, .syscr = 50, .syscw = 60,
    .vol_ctxt = 70, .inv_ctxt = 9, .has_pss = true, .pss = 1500, .uss = 900, .pss_peak = 1600,
    .uss_peak = 950, .bsend = 123456, .brecv = 654321, .net_method = "sock_diag",
};

START_TEST(start_fields)
{
    char *argv[] = {"sim", "-n", "4", NULL};
    pano_monitor_start s = {
        .argv = argv, .exe = "/opt/bin/sim", .cwd = "/scratch/run", .pid = 4242,
        .monitor_pid = 4241, .user = "alice", .cpu_count = 16, .cpu_model = "Xeon",
        .mem_total = 65536000, .interval = 2.5,
    };
    pano_json *ev = pano_json_object();
    pano_monitor_start_fields(ev, &s);
    assert_json(ev, "{\"argv\":[\"sim\",\"-n\",\"4\"],\"executable\":\"sim\","
                    "\"exe\":\"/opt/bin/sim\",\"cwd\":\"/scratch/run\",\"pid\":4242,"
                    "\"monitor_pid\":4241,\"user\":\"alice\",\"cpu_count\":16,"
                    "\"cpu_model\":\"Xeon\",\"mem_total\":65536000,\"interval\":2.500,"
                    "\"monitor_version\":\"" PANO_VERSION "\"}");
    assert_schema_fields(PANO_MONITOR_START_EVENT, ev);
    pano_json_free(ev);

    /* What is unknown is left out. */
    s = (pano_monitor_start){.argv = argv, .exe = "", .pid = 7, .monitor_pid = 6,
                             .mem_total = -1, .interval = 1};
    ev = pano_json_object();
    pano_monitor_start_fields(ev, &s);
    assert_json(ev, "{\"argv\":[\"sim\",\"-n\",\"4\"],\"executable\":\"sim\",\"pid\":7,"
                    "\"monitor_pid\":6,\"interval\":1.000,"
                    "\"monitor_version\":\"" PANO_VERSION "\"}");
    pano_json_free(ev);
}
END_TEST

START_TEST(sample_fields)
{
    pano_monitor_sample s = {
        .pid = 4242, .exe = "/opt/bin/sim", .totals = totals,
        /* CPU seconds change by the difference of the printed milliseconds */
        .sent = {.utime = 1.0004, .stime = 0.2496, .vm = 10300, .rss = 1000, .procs = 1,
                 .threads = 1, .bwrite = 4096, .rchar = 50000, .syscr = 10, .syscw = 20},
        .cpu_util = 0.87654, .elapsed = 12.3456789, .interval = 2, .kind = "periodic",
        .pss = true, .monitor_pid = 4241, .self = {.known = true, .utime = 0.0123456, .stime = 0.5},
    };
    pano_json *ev = pano_json_object();
    pano_monitor_sample_fields(ev, &s);
    assert_json(ev, "{\"pid\":4242,\"exe\":\"/opt/bin/sim\","
                    "\"utime\":1.500,\"stime\":0.250,\"iowait\":0.013,"
                    "\"vm\":10240,\"rss\":2048,\"procs\":3,\"threads\":5,"
                    "\"bread\":4096,\"bwrite\":8192,\"rchar\":100000,\"wchar\":200000,"
                    "\"syscr\":50,\"syscw\":60,\"vm_peak\":12000,\"rss_peak\":3000,"
                    "\"vol_ctxt\":70,\"inv_ctxt\":9,\"bsend\":123456,\"brecv\":654321,"
                    "\"net_method\":\"sock_diag\",\"pss\":1500,\"uss\":900,"
                    "\"pss_peak\":1600,\"uss_peak\":950,"
                    "\"delta\":{\"utime\":0.500,\"stime\":0.000,\"iowait\":0.013,"
                    "\"vm\":-60,\"rss\":1048,\"procs\":2,\"threads\":4,\"bread\":4096,"
                    "\"bwrite\":4096,\"rchar\":50000,\"wchar\":200000,\"syscr\":40,"
                    "\"syscw\":40},"
                    "\"cpu_util\":0.8765,\"elapsed\":12.345679,\"interval\":2.000,"
                    "\"sample\":\"periodic\",\"monitor_pid\":4241,"
                    "\"monitor_utime\":0.012346,\"monitor_stime\":0.500000}");
    assert_schema_fields(PANO_MONITOR_SAMPLE_EVENT, ev);
    pano_json_free(ev);

    /* The first sample: no cpu_util, delta from zero; no exe, no own CPU time;
     * pss not asked for: none of its fields. */
    s = (pano_monitor_sample){.pid = 1, .exe = "", .totals = totals, .cpu_util = -1,
                              .elapsed = 0, .interval = 1, .kind = "start", .monitor_pid = 2};
    ev = pano_json_object();
    pano_monitor_sample_fields(ev, &s);
    assert_json(ev, "{\"pid\":1,"
                    "\"utime\":1.500,\"stime\":0.250,\"iowait\":0.013,"
                    "\"vm\":10240,\"rss\":2048,\"procs\":3,\"threads\":5,"
                    "\"bread\":4096,\"bwrite\":8192,\"rchar\":100000,\"wchar\":200000,"
                    "\"syscr\":50,\"syscw\":60,\"vm_peak\":12000,\"rss_peak\":3000,"
                    "\"vol_ctxt\":70,\"inv_ctxt\":9,\"bsend\":123456,\"brecv\":654321,"
                    "\"net_method\":\"sock_diag\","
                    "\"delta\":{\"utime\":1.500,\"stime\":0.250,\"iowait\":0.013,"
                    "\"vm\":10240,\"rss\":2048,\"procs\":3,\"threads\":5,\"bread\":4096,"
                    "\"bwrite\":8192,\"rchar\":100000,\"wchar\":200000,\"syscr\":50,"
                    "\"syscw\":60},"
                    "\"elapsed\":0.000000,\"interval\":1.000,\"sample\":\"start\","
                    "\"monitor_pid\":2}");
    assert_schema_fields(PANO_MONITOR_SAMPLE_EVENT, ev);
    pano_json_free(ev);
}
END_TEST

START_TEST(end_fields)
{
    pano_monitor_end e = {
        .pid = 4242, .exe = "/opt/bin/sim", .wait_status = 3 << 8, .duration = 4,
        .utime = 2.5, .stime = 0.5, .maxrss = 20480, .final = totals, .samples = 3,
        .self = {.known = true, .utime = 0.01, .stime = 0.02}, .payload_events = 2,
        .payload_errors = 1,
    };
    pano_json *ev = pano_json_object();
    pano_monitor_end_fields(ev, &e);
    assert_json(ev, "{\"pid\":4242,\"exe\":\"/opt/bin/sim\",\"exitcode\":3,\"signal\":0,"
                    "\"status\":1,\"duration\":4.000000,\"utime\":2.500,\"stime\":0.500,"
                    "\"remote_cpu_time\":3.000,\"avg_cpu\":0.7500,\"maxrss\":20480,"
                    "\"final\":{\"utime\":1.500,\"stime\":0.250,\"iowait\":0.013,"
                    "\"vm\":10240,\"rss\":2048,\"procs\":3,\"threads\":5,"
                    "\"bread\":4096,\"bwrite\":8192,\"rchar\":100000,\"wchar\":200000,"
                    "\"syscr\":50,\"syscw\":60,\"vm_peak\":12000,\"rss_peak\":3000,"
                    "\"vol_ctxt\":70,\"inv_ctxt\":9,\"bsend\":123456,\"brecv\":654321,"
                    "\"net_method\":\"sock_diag\",\"pss_peak\":1600,\"uss_peak\":950},"
                    "\"samples\":3,\"monitor_utime\":0.010000,\"monitor_stime\":0.020000,"
                    "\"payload_events\":2,\"payload_errors\":1}");
    assert_schema_fields(PANO_MONITOR_END_EVENT, ev);
    pano_json_free(ev);

    /* Killed by a signal (exit code 128+N), no duration: no avg_cpu; an error. */
    e = (pano_monitor_end){.pid = 9, .exe = "", .wait_status = SIGKILL, .duration = 0,
                           .final = totals, .error = "lost track of the task"};
    ev = pano_json_object();
    pano_monitor_end_fields(ev, &e);
    ck_assert(WIFSIGNALED(e.wait_status));
    assert_json(ev, "{\"pid\":9,\"exitcode\":137,\"signal\":9,\"core_dumped\":false,"
                    "\"status\":1,\"duration\":0.000000,\"utime\":0.000,\"stime\":0.000,"
                    "\"remote_cpu_time\":0.000,\"maxrss\":0,"
                    "\"final\":{\"utime\":1.500,\"stime\":0.250,\"iowait\":0.013,"
                    "\"vm\":10240,\"rss\":2048,\"procs\":3,\"threads\":5,"
                    "\"bread\":4096,\"bwrite\":8192,\"rchar\":100000,\"wchar\":200000,"
                    "\"syscr\":50,\"syscw\":60,\"vm_peak\":12000,\"rss_peak\":3000,"
                    "\"vol_ctxt\":70,\"inv_ctxt\":9,\"bsend\":123456,\"brecv\":654321,"
                    "\"net_method\":\"sock_diag\",\"pss_peak\":1600,\"uss_peak\":950},"
                    "\"samples\":0,\"payload_events\":0,\"payload_errors\":0,"
                    "\"error\":\"lost track of the task\"}");
    assert_schema_fields(PANO_MONITOR_END_EVENT, ev);
    pano_json_free(ev);
}
END_TEST

static pano_json *sample_object(const pano_monitor_sample *s)
{
    pano_json *ev = pano_json_object();
    pano_monitor_sample_fields(ev, s);
    return ev;
}

START_TEST(gpu_fields)
{
    /* a sample and the end with GPU figures */
    pano_monitor_sample s = {.pid = 1, .exe = "", .totals = totals, .cpu_util = -1,
                             .interval = 1, .kind = "periodic", .monitor_pid = 2,
                             .gpu = {.known = true, .memory = 3221225472, .util = 75}};
    pano_json *ev = sample_object(&s);
    int64_t v = 0;
    ck_assert(pano_json_get_int(ev, "gpu_mem", &v) && v == 3221225472);
    ck_assert(pano_json_get_int(ev, "gpu_util", &v) && v == 75);
    assert_schema_fields(PANO_MONITOR_SAMPLE_EVENT, ev);
    pano_json_free(ev);
    s.gpu.util = -1; /* no utilization given: left out */
    ev = sample_object(&s);
    ck_assert(pano_json_get(ev, "gpu_util") == NULL);
    pano_json_free(ev);
    pano_monitor_end e = {.pid = 3, .exe = "", .final = totals,
                          .gpu = {.known = true, .memory = 4294967296, .util = 90}};
    ev = pano_json_object();
    pano_monitor_end_fields(ev, &e);
    ck_assert(pano_json_get_int(ev, "gpu_mem_peak", &v) && v == 4294967296);
    ck_assert(pano_json_get_int(ev, "gpu_util_peak", &v) && v == 90);
    assert_schema_fields(PANO_MONITOR_END_EVENT, ev);
    pano_json_free(ev);

    /* a device: pegasus-kickstart's names; a process without a utilization
     * sample is in compute_procs only */
    pano_gpu_device d = {
        .id = 1, .name = "NVIDIA A100", .uuid = "GPU-42", .total_memory = 40, .mem_usage = 30,
        .gpu_utilization = 85, .mem_utilization = 40, .power_usage = 250000, .task_memory = 20,
        .task_sm = 60, .nprocs = 2,
        .procs = {{.pid = 100, .memory = 12, .sm = 60, .mem = 10}, {.pid = 101, .memory = 8, .sm = -1}},
    };
    ev = pano_json_object();
    pano_monitor_gpu_fields(ev, &d, "550.54.15");
    assert_json(ev, "{\"id\":1,\"name\":\"NVIDIA A100\",\"uuid\":\"GPU-42\","
                    "\"nvidia_driver_version\":\"550.54.15\",\"total_memory\":40,"
                    "\"mem_usage\":30,\"gpu_utilization\":85,\"mem_utilization\":40,"
                    "\"power_usage\":250000,"
                    "\"compute_procs\":[{\"pid\":100,\"mem_usage\":12},{\"pid\":101,\"mem_usage\":8}],"
                    "\"proc_samples\":[{\"pid\":100,\"sm_util\":60,\"mem_util\":10}],"
                    "\"task_mem_usage\":20,\"task_sm_utilization\":60}");
    assert_schema_fields(PANO_MONITOR_GPU_EVENT, ev);
    pano_json_free(ev);
    /* unknown figures are left out */
    d.gpu_utilization = -1;
    d.power_usage = -1;
    d.task_sm = -1;
    d.name[0] = d.uuid[0] = '\0';
    ev = pano_json_object();
    pano_monitor_gpu_max_fields(ev, &d, 1);
    assert_json(ev, "{\"devices\":[{\"id\":1,\"max_mem_usage\":30,\"max_task_mem_usage\":20}]}");
    assert_schema_fields(PANO_MONITOR_GPU_MAX_EVENT, ev);
    pano_json_free(ev);

    /* NSpid: the pids of a process, outermost first */
    const char status[] = "Name:\tbash\nTgid:\t4242\nNSpid:\t4242\t17\t1\nNSpgid:\t4242\n";
    pid_t pids[4];
    size_t n;
    ck_assert(pano_proc_nspid_parse(status, strlen(status), pids, 4, &n));
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(pids[0], 4242);
    ck_assert_int_eq(pids[2], 1);
    ck_assert(!pano_proc_nspid_parse("Name:\tx\nPid:\t5\n", 16, pids, 4, &n));
}
END_TEST

START_TEST(on_change_threshold)
{
    pano_tree_totals sent = totals, now = totals;
    ck_assert(!pano_monitor_changed(&now, &sent, 0.1));
    now.rchar = 110000; /* +10%: not more than the threshold */
    ck_assert(!pano_monitor_changed(&now, &sent, 0.1));
    now.rchar = 110001;
    ck_assert(pano_monitor_changed(&now, &sent, 0.1));
    now = totals;
    now.rss = 1843; /* a fall counts too */
    ck_assert(pano_monitor_changed(&now, &sent, 0.1));
    /* from zero, any move */
    now = totals;
    sent.bread = 0;
    now.bread = 1;
    ck_assert(pano_monitor_changed(&now, &sent, 10));
    /* the peaks are not compared */
    now = sent = totals;
    now.vm_peak *= 10;
    ck_assert(!pano_monitor_changed(&now, &sent, 0.1));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("monitor_events");
    TCase *tc = tcase_create("monitor_events");
    tcase_add_test(tc, start_fields);
    tcase_add_test(tc, sample_fields);
    tcase_add_test(tc, end_fields);
    tcase_add_test(tc, gpu_fields);
    tcase_add_test(tc, on_change_threshold);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
