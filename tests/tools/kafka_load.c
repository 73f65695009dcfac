/*
 * kafka_load - fill the pano Kafka topics with synthetic events, for the
 * indexer's tests and benchmarks.
 *
 *   kafka_load [options]
 *     -n, --count N          events to produce (default 1000)
 *     -w, --workflows N      distinct workflow UUIDs (default 10)
 *         --wf UUID          use this wf_uuid (repeatable; replaces -w)
 *         --families LIST    comma-separated families to cycle through
 *                            (default kickstart,darshan,transfer,stampede,custom)
 *         --bad N            additionally, N events whose fields break the
 *                            mapping (exitcode "not-a-number"), spread out
 *         --invalid-wf LIST  additionally, one event per wf_uuid in LIST
 *                            (separated by spaces), which are not UUIDs
 *         --rate R           events per second (default: as fast as possible)
 *         --pad BYTES        add a string field of this size to each event
 *         --run-id ID        prefix of the event ids (default: random)
 *         --ts-now           ts = time of production (default: a fixed day,
 *                            plus the event number in milliseconds)
 *         --bulk-dir DIR     also write the events as Elasticsearch bulk
 *                            bodies exactly as pano-indexer sends them
 *                            (DIR/bulk-000000.ndjson, ...), for the ceiling
 *         --bulk-docs N      documents per bulk body (default 2000)
 *         --bulk-prefix P    index prefix in those bodies (default pano-)
 *         --lines FILE       also write the events to FILE, one JSON object
 *                            a line (what pano-emit --events reads)
 *         --no-produce       only write the bulk bodies or the lines
 *         --delete-topics    delete every topic named with the prefix
 *                            pano.kafka.topic_prefix, and the dead-letter
 *                            topic, and exit (test and benchmark cleanup)
 *         --shape SHAPE      instead of -n synthetic events, one big
 *                            workflow (--wf, or a random UUID) in the shape
 *                            pano-monitor (monitor) or Pegasus's kickstart
 *                            and pegasus-monitord (pegasus) give it, each
 *                            event to its family's topic
 *                            (tests/tools/bench_workflow.h)
 *         --jobs N           its jobs (default 10000)
 *         --samples N        samples of a job that ends (default 100
 *                            monitor, 12 pegasus)
 *     plus the common options (--config, --set, ...): pano.kafka.brokers and
 *     pano.kafka.topic_prefix choose where the events go.
 *
 * Messages are keyed by wf_uuid, as pano-bridge does. Exits 1 when a
 * message is not delivered, or when two delivery reports name one offset
 * or one names none (an acknowledged message the log does not hold).
 * Prints one line:
 * "kafka_load: produced N events (W workflows) run=ID in S s"; with --shape
 * also "kafka_load: workflow UUID jobs=N events=N failed=N unended=N" first.
 */
#include "buf.h"
#include "bench_workflow.h"
#include "bulk.h"
#include "cli.h"
#include "event.h"
#include "json.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static long long delivered, failed;

/* The offsets Kafka's delivery reports gave, per partition: two messages
 * reported delivered at one offset, or one reported without an offset,
 * mean an acknowledged message the log does not hold (the loss is then the
 * producer's or the broker's, not the consumer's under test). Kept for the
 * first MAX_CHECKED reports. */
#define MAX_CHECKED 4000000
typedef struct {
    const rd_kafka_topic_t *rkt;
    int32_t partition;
    int64_t *offsets;
    size_t n, cap;
} reported;
static reported *parts;
static size_t nparts;
static long long checked, no_offset;

static void note_offset(const rd_kafka_message_t *m)
{
    if (m->offset < 0) {
        no_offset++;
        return;
    }
    if (checked >= MAX_CHECKED)
        return;
    checked++;
    reported *r = NULL;
    for (size_t i = 0; i < nparts && !r; i++)
        if (parts[i].rkt == m->rkt && parts[i].partition == m->partition)
            r = &parts[i];
    if (!r) {
        parts = pano_reallocarray(parts, nparts + 1, sizeof *parts);
        r = &parts[nparts++];
        *r = (reported){.rkt = m->rkt, .partition = m->partition};
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->offsets = pano_reallocarray(r->offsets, r->cap, sizeof *r->offsets);
    }
    r->offsets[r->n++] = m->offset;
}

static int by_offset(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* 0 when every checked report had an offset of its own; else -1, said. */
static int offsets_distinct(void)
{
    long long twice = 0;
    for (size_t i = 0; i < nparts; i++) {
        reported *r = &parts[i];
        qsort(r->offsets, r->n, sizeof *r->offsets, by_offset);
        for (size_t j = 1; j < r->n; j++)
            if (r->offsets[j] == r->offsets[j - 1]) {
                if (twice++ < 5)
                    pano_error("two messages reported delivered at offset %lld of %s [%d]",
                               (long long)r->offsets[j], rd_kafka_topic_name(r->rkt),
                               (int)r->partition);
            }
        free(r->offsets);
    }
    free(parts);
    if (no_offset > 0)
        pano_error("%lld messages reported delivered without an offset", no_offset);
    if (twice > 0)
        pano_error("%lld messages reported delivered at an offset already reported "
                   "(of %lld reports checked)",
                   twice, checked);
    return twice > 0 || no_offset > 0 ? -1 : 0;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err) {
        if (failed++ < 5)
            pano_error("delivery failed: %s", rd_kafka_err2str(m->err));
    } else {
        delivered++;
        note_offset(m);
    }
}

static void random_uuid(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (unsigned char)rand();
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

/* One synthetic event of a family. bad: a value the mapping refuses. */
static char *make_event(const char *family, long long i, const char *wf, const char *run_id,
                        double ts, size_t pad, bool bad, size_t *len)
{
    pano_json *e = pano_json_object();
    char name[64], id[128];
    if (strcmp(family, "kickstart") == 0)
        snprintf(name, sizeof name, "kickstart.inv.end");
    else if (strcmp(family, "darshan") == 0)
        snprintf(name, sizeof name, "darshan.perf");
    else if (strcmp(family, "transfer") == 0)
        snprintf(name, sizeof name, "transfer.inv.local.single");
    else if (strcmp(family, "stampede") == 0)
        snprintf(name, sizeof name, "stampede.job_inst.main.end");
    else
        snprintf(name, sizeof name, "%s.load", family);
    if (bad)
        snprintf(name, sizeof name, "kickstart.inv.end");
    snprintf(id, sizeof id, "%s-%lld%s", run_id, i, bad ? "-bad" : "");
    pano_json_set_str(e, "event", name);
    pano_json_set_double(e, "ts", ts, 6);
    pano_json_set_str(e, "event_id", id);
    pano_json_set_int(e, "seq", i + 1);
    pano_json_set_str(e, "hostname", "load.example.org");
    pano_json_set_str(e, "wf_uuid", wf);
    pano_json_set_str(e, "wf_label", "load");
    char job[64];
    snprintf(job, sizeof job, "job_ID%07lld", i % 1000);
    pano_json_set_str(e, "dag_job_id", job);
    if (bad || strcmp(family, "kickstart") == 0) {
        pano_json_set_int(e, "pid", 1000 + i % 30000);
        if (bad)
            pano_json_set_str(e, "exitcode", "not-a-number");
        else
            pano_json_set_int(e, "exitcode", i % 7 == 0);
        pano_json_set_int(e, "signal", 0);
        pano_json_set_double(e, "duration", 1.5 + (double)(i % 100), 3);
        pano_json_set_double(e, "utime", 1.25, 3);
        pano_json_set_double(e, "stime", 0.25, 3);
        pano_json_set_int(e, "maxrss", 10240 + i % 4096);
    } else if (strcmp(family, "darshan") == 0) {
        pano_json_set_int(e, "nprocs", 1 + i % 64);
        pano_json_set_double(e, "run_time", 12.5, 3);
        pano_json_set_int(e, "total_bytes", 1048576LL * (i % 1000));
        pano_json_set_double(e, "agg_perf_by_slowest", 512.25, 2);
    } else if (strcmp(family, "transfer") == 0) {
        pano_json_set_str(e, "type", "TRANSFER");
        pano_json_set_str(e, "src_url", "file:///scratch/in.dat");
        pano_json_set_str(e, "dst_url", "gsiftp://dtn.example.org/data/in.dat");
        pano_json_set_int(e, "bytes_transferred", 4096 * (i % 1000));
        pano_json_set_double(e, "duration", 0.5, 3);
    } else if (strcmp(family, "stampede") == 0) {
        pano_json_set_int(e, "type", 1 + i % 10);
        pano_json_set_str(e, "job_id", job);
        pano_json_set_int(e, "status", 0);
        pano_json_set_double(e, "local_dur", 3.5, 3);
    } else {
        pano_json_set_str(e, "message", "custom load event");
        pano_json_set_int(e, "value", i);
    }
    if (pad) {
        char *p = pano_malloc(pad + 1);
        memset(p, 'x', pad);
        p[pad] = '\0';
        pano_json_set_str(e, "pad", p);
        free(p);
    }
    char *text = pano_json_serialize(e, len);
    pano_json_free(e);
    return text;
}

typedef struct {
    char *dir, *prefix;
    size_t per_body, in_body, files;
    pano_buf body;
    pano_bulk_layout layout;
    pano_stream_policy policies[PANO_N_STREAMS];
    char fallback[256];
} bulk_writer;

static int bulk_flush(bulk_writer *w)
{
    if (w->in_body == 0)
        return 0;
    char *path = pano_asprintf("%s/bulk-%06zu.ndjson", w->dir, w->files++);
    FILE *f = fopen(path, "w");
    int rc = 0;
    if (!f || fwrite(w->body.data, 1, w->body.len, f) != w->body.len)
        rc = -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc < 0)
        pano_error("cannot write %s: %s", path, strerror(errno));
    free(path);
    pano_buf_clear(&w->body);
    w->in_body = 0;
    return rc;
}

static int bulk_add(bulk_writer *w, const char *text, size_t len)
{
    pano_bulk_doc d;
    char reason[256];
    if (pano_bulk_doc_prepare(text, len, &w->layout, pano_now(), &d, reason, sizeof reason) !=
        PANO_BULK_DOC_OK) {
        pano_error("not indexable: %s", reason);
        return -1;
    }
    pano_bulk_append(&w->body, &d);
    pano_bulk_doc_free(&d);
    if (++w->in_body >= w->per_body)
        return bulk_flush(w);
    return 0;
}

/* Where each event goes: bulk bodies, Kafka, or both. */
typedef struct {
    pano_config *cfg;
    rd_kafka_t *rk;   /* NULL: --no-produce */
    bulk_writer *bw;  /* its dir NULL: no bulk bodies */
    FILE *lines;      /* NULL: no --lines */
    const char *key;  /* the wf_uuid of --shape's workflow */
} outlet;

/* The event to the topic of family, keyed by wf. */
static int send_event(outlet *o, const char *family, const char *wf, const char *text, size_t len)
{
    if (o->bw->dir && bulk_add(o->bw, text, len) < 0)
        return -1;
    if (o->lines && (fwrite(text, 1, len, o->lines) != len || putc('\n', o->lines) == EOF)) {
        pano_error("--lines: %s", strerror(errno));
        return -1;
    }
    if (!o->rk)
        return 0;
    char topic[256];
    pano_kafka_topic(o->cfg, family, topic, sizeof topic);
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            o->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(wf, strlen(wf)),
            RD_KAFKA_V_VALUE((void *)text, len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(o->rk, 10);
            continue;
        }
        rd_kafka_poll(o->rk, 0);
        if (e) {
            pano_error("produce: %s", rd_kafka_err2str(e));
            return -1;
        }
        return 0;
    }
}

static int send_workflow_event(const char *event, const char *text, size_t len, void *user)
{
    outlet *o = user;
    return send_event(o, pano_event_family(event), o->key, text, len);
}

/* The -n synthetic events: counts, workflows, families, pacing. */
typedef struct {
    long long count, bad;
    char **wfs;
    size_t nwfs;
    const char **fam;
    size_t nfam;
    char **invalid_wfs; /* one more event each, with a wf_uuid that is not a UUID */
    long long ninvalid;
    double rate; /* events/s, 0: as fast as possible */
    bool ts_now;
    size_t pad;
    const char *run_id;
} synthetic;

/* Sends the synthetic events; sets *sent to how many it tried. */
static int write_synthetic(outlet *o, const synthetic *s, long long *sent)
{
    long long total = s->count + s->bad + s->ninvalid;
    long long bad_every = s->bad ? (s->count + s->bad) / s->bad : 0;
    double start = pano_now();
    const double day = 1790000000.0; /* 2026-09-21, a fixed day */
    long long bad_done = 0, normal_done = 0;
    int rc = 0;
    long long i;
    for (i = 0; i < total && rc == 0; i++) {
        if (s->rate > 0) {
            double due = start + (double)i / s->rate;
            double now = pano_now();
            if (due > now)
                usleep((useconds_t)((due - now) * 1e6));
        }
        bool is_bad = false;
        const char *wf;
        const char *family;
        if (i >= s->count + s->bad) {
            wf = s->invalid_wfs[i - s->count - s->bad];
            family = s->fam[i % (long long)s->nfam];
        } else {
            is_bad = bad_done < s->bad &&
                     (normal_done >= s->count || (bad_every && i % bad_every == 0));
            wf = s->wfs[i % (long long)s->nwfs];
            family = s->fam[(i / (long long)s->nwfs) % (long long)s->nfam];
        }
        if (is_bad)
            bad_done++;
        else if (i < s->count + s->bad)
            normal_done++;
        double ts = s->ts_now ? pano_now() : day + (double)i / 1000.0;
        size_t len;
        char *text = make_event(family, i, wf, s->run_id, ts, s->pad, is_bad, &len);
        if (send_event(o, is_bad ? "kickstart" : pano_event_family(family), wf, text, len) < 0)
            rc = 1;
        free(text);
    }
    *sent = i;
    return rc;
}

/* --shape: the big workflow's events; sets *sent to how many it sent. */
static int write_workflow(outlet *o, const bench_workflow *w, long long *sent)
{
    printf("kafka_load: workflow %s jobs=%lld events=%lld failed=%lld unended=%lld\n", w->wf_uuid,
           w->jobs, bench_workflow_count(w), bench_workflow_failed(w), bench_workflow_unended(w));
    fflush(stdout);
    o->key = w->wf_uuid;
    long long n = bench_workflow_write(w, send_workflow_event, o);
    *sent = n < 0 ? 0 : n;
    return n < 0 ? 1 : 0;
}

/* Every topic whose name begins with pano.kafka.topic_prefix, and the
 * dead-letter topic: a test's or a benchmark's topics, gone with it. */
static int delete_topics(pano_config *cfg)
{
    const char *prefix = pano_config_str(cfg, "pano.kafka.topic_prefix");
    const char *dead = pano_config_str(cfg, "pano.kafka.dead_letter_topic");
    if (!*prefix) {
        pano_error("--delete-topics needs a topic prefix (pano.kafka.topic_prefix)");
        pano_config_free(cfg);
        return 2;
    }
    char err[512], why[256];
    rd_kafka_conf_t *conf = pano_kafka_conf_new(cfg, err, sizeof err);
    if (!conf) {
        pano_error("%s", err);
        pano_config_free(cfg);
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!rk) {
        pano_error("%s", why);
        pano_config_free(cfg);
        return 1;
    }
    int rc = 1;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, 10000);
    if (e) {
        pano_error("cannot list the topics: %s", rd_kafka_err2str(e));
        goto out;
    }
    size_t plen = strlen(prefix), n = 0;
    rd_kafka_DeleteTopic_t **del = pano_calloc((size_t)md->topic_cnt + 1, sizeof *del);
    for (int i = 0; i < md->topic_cnt; i++) {
        const char *t = md->topics[i].topic;
        if (strncmp(t, prefix, plen) == 0 || strcmp(t, dead) == 0)
            del[n++] = rd_kafka_DeleteTopic_new(t);
    }
    rc = 0;
    if (n > 0) {
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteTopics(rk, del, n, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        if (!ev || !rd_kafka_event_DeleteTopics_result(ev)) {
            pano_error("no answer to DeleteTopics");
            rc = 1;
        }
        if (ev)
            rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
    }
    printf("kafka_load: deleted %zu topics\n", n);
    for (size_t i = 0; i < n; i++)
        rd_kafka_DeleteTopic_destroy(del[i]);
    free(del);
    rd_kafka_metadata_destroy(md);
out:
    rd_kafka_destroy(rk);
    pano_config_free(cfg);
    return rc;
}

int main(int argc, char **argv)
{
    pano_config *cfg = pano_cli_init("kafka_load", argc, argv, false);
    if (!cfg)
        return 2;
    enum {
        O_WF = 0x2000, O_FAMILIES, O_BAD, O_RATE, O_PAD, O_RUN, O_TSNOW, O_BULKDIR, O_BULKDOCS,
        O_BULKPREFIX, O_NOPRODUCE, O_LINES, O_INVALID, O_DELETE, O_SHAPE, O_JOBS, O_SAMPLES
    };
    static const struct option options[] = {
        {"count", required_argument, NULL, 'n'},
        {"workflows", required_argument, NULL, 'w'},
        {"wf", required_argument, NULL, O_WF},
        {"families", required_argument, NULL, O_FAMILIES},
        {"bad", required_argument, NULL, O_BAD},
        {"invalid-wf", required_argument, NULL, O_INVALID},
        {"rate", required_argument, NULL, O_RATE},
        {"pad", required_argument, NULL, O_PAD},
        {"run-id", required_argument, NULL, O_RUN},
        {"ts-now", no_argument, NULL, O_TSNOW},
        {"bulk-dir", required_argument, NULL, O_BULKDIR},
        {"bulk-docs", required_argument, NULL, O_BULKDOCS},
        {"bulk-prefix", required_argument, NULL, O_BULKPREFIX},
        {"no-produce", no_argument, NULL, O_NOPRODUCE},
        {"lines", required_argument, NULL, O_LINES},
        {"delete-topics", no_argument, NULL, O_DELETE},
        {"shape", required_argument, NULL, O_SHAPE},
        {"jobs", required_argument, NULL, O_JOBS},
        {"samples", required_argument, NULL, O_SAMPLES},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    long long count = 1000, bad = 0;
    long nwf = 10;
    char **wfs = NULL;
    size_t nwfs = 0, pad = 0;
    char *families_arg = pano_strdup("kickstart,darshan,transfer,stampede,custom");
    char *invalid = NULL;
    double rate = 0;
    char run_id[40] = "";
    bool ts_now = false, produce = true;
    bulk_writer bw = {.per_body = 2000};
    const char *bulk_prefix = "pano-";
    const char *shape_name = NULL, *lines_path = NULL;
    bench_workflow big = {.jobs = 10000};
    int opt;
    while ((opt = getopt_long(argc, argv, "n:w:", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            return 2;
        if (handled)
            continue;
        switch (opt) {
        case 'n': count = atoll(optarg); break;
        case 'w': nwf = atol(optarg); break;
        case O_WF:
            wfs = pano_reallocarray(wfs, nwfs + 1, sizeof *wfs);
            wfs[nwfs++] = pano_strdup(optarg);
            break;
        case O_FAMILIES:
            free(families_arg);
            families_arg = pano_strdup(optarg);
            break;
        case O_BAD: bad = atoll(optarg); break;
        case O_INVALID: invalid = optarg; break;
        case O_RATE: rate = atof(optarg); break;
        case O_PAD: pad = (size_t)atol(optarg); break;
        case O_RUN: snprintf(run_id, sizeof run_id, "%s", optarg); break;
        case O_TSNOW: ts_now = true; break;
        case O_BULKDIR: bw.dir = optarg; break;
        case O_BULKDOCS: bw.per_body = (size_t)atol(optarg); break;
        case O_BULKPREFIX: bulk_prefix = optarg; break;
        case O_NOPRODUCE: produce = false; break;
        case O_LINES: lines_path = optarg; break;
        case O_DELETE:
            free(families_arg);
            for (size_t i = 0; i < nwfs; i++)
                free(wfs[i]);
            free(wfs);
            return delete_topics(cfg);
        case O_SHAPE: shape_name = optarg; break;
        case O_JOBS: big.jobs = atoll(optarg); break;
        case O_SAMPLES: big.samples = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: see the comment at the top of tests/tools/kafka_load.c\n");
            return 2;
        }
    }
    pano_cli_apply_logging(cfg);
    if (count < 0 || nwf < 1 || bw.per_body < 1) {
        pano_error("bad arguments");
        return 2;
    }
    if (shape_name) {
        if (!bench_shape_parse(shape_name, &big.shape) || big.jobs < 1 || nwfs > 1 ||
            (big.samples != 0 && big.samples < 2)) {
            pano_error("--shape monitor|pegasus, --jobs >= 1, --samples >= 2, at most one --wf");
            free(families_arg);
            pano_config_free(cfg);
            return 2;
        }
        nwf = 1;
        if (big.samples == 0)
            big.samples = bench_shape_default_samples(big.shape);
    }
    if (!*run_id) {
        char u[37];
        random_uuid(u);
        snprintf(run_id, sizeof run_id, "load-%.8s", u);
    }
    if (nwfs == 0) {
        wfs = pano_calloc((size_t)nwf, sizeof *wfs);
        for (long i = 0; i < nwf; i++) {
            wfs[i] = pano_malloc(37);
            random_uuid(wfs[i]);
        }
        nwfs = (size_t)nwf;
    }
    const char *fam[16];
    size_t nfam = 0;
    for (char *save = NULL, *t = strtok_r(families_arg, ",", &save); t && nfam < 16;
         t = strtok_r(NULL, ",", &save))
        fam[nfam++] = t;
    if (nfam == 0) {
        pano_error("no families");
        return 2;
    }
    rd_kafka_t *rk = NULL;
    char err[512];
    if (bw.dir) {
        /* the partitions pano-indexer would write, as configured */
        if (pano_stream_policies(cfg, bw.policies, err, sizeof err) < 0) {
            pano_error("%s", err);
            return 2;
        }
        snprintf(bw.fallback, sizeof bw.fallback, "%sunassigned", bulk_prefix);
        bw.layout = (pano_bulk_layout){
            .prefix = bulk_prefix, .fallback_index = bw.fallback, .policies = bw.policies};
    }

    if (produce) {
        rd_kafka_conf_t *conf = pano_kafka_conf_new(cfg, err, sizeof err);
        if (!conf || pano_kafka_conf_set(conf, "linger.ms", "20", err, sizeof err) < 0 ||
            pano_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err) < 0 ||
            pano_kafka_conf_set(conf, "queue.buffering.max.messages", "1000000", err,
                                sizeof err) < 0) {
            pano_error("%s", err);
            return 1;
        }
        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
        char why[256];
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
        if (!rk) {
            pano_error("cannot create the producer: %s", why);
            return 1;
        }
        if (pano_kafka_ensure_topics(rk, cfg, err, sizeof err) < 0) {
            pano_error("%s", err);
            return 1;
        }
    }

    synthetic syn = {.count = count, .bad = bad, .wfs = wfs, .nwfs = nwfs, .fam = fam,
                     .nfam = nfam, .rate = rate, .ts_now = ts_now, .pad = pad, .run_id = run_id};
    if (invalid) {
        for (char *save = NULL, *t = strtok_r(invalid, " ", &save); t;
             t = strtok_r(NULL, " ", &save)) {
            syn.invalid_wfs =
                pano_reallocarray(syn.invalid_wfs, (size_t)syn.ninvalid + 1, sizeof *syn.invalid_wfs);
            syn.invalid_wfs[syn.ninvalid++] = t;
        }
    }
    outlet out = {.cfg = cfg, .rk = rk, .bw = &bw};
    if (lines_path && !(out.lines = fopen(lines_path, "w"))) {
        pano_error("%s: %s", lines_path, strerror(errno));
        return 1;
    }
    double start = pano_now();
    long long total = 0;
    int rc;
    if (shape_name) {
        big.wf_uuid = wfs[0];
        big.run_id = run_id;
        big.now = start;
        rc = write_workflow(&out, &big, &total);
    } else
        rc = write_synthetic(&out, &syn, &total);
    if (bw.dir && bulk_flush(&bw) < 0)
        rc = 1;
    if (out.lines && fclose(out.lines) != 0) {
        pano_error("%s: %s", lines_path, strerror(errno));
        rc = 1;
    }
    if (rk) {
        rd_kafka_resp_err_t e = rd_kafka_flush(rk, 120000);
        if (e) {
            pano_error("flush: %s", rd_kafka_err2str(e));
            rc = 1;
        }
        if (rc == 0 && (failed || delivered != total)) {
            pano_error("%lld of %lld events not delivered", total - delivered, total);
            rc = 1;
        }
        if (offsets_distinct() < 0)
            rc = 1;
        rd_kafka_destroy(rk);
    }
    printf("kafka_load: produced %lld events (%zu workflows) run=%s in %.1f s\n",
           rk || !produce ? total : 0, nwfs, run_id, pano_now() - start);
    pano_buf_free(&bw.body);
    for (size_t i = 0; i < nwfs; i++)
        free(wfs[i]);
    free(wfs);
    free(syn.invalid_wfs);
    free(families_arg);
    pano_config_free(cfg);
    return rc;
}
