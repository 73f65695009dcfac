/*
 * e2e_probe - the end-to-end benchmark's load and stopwatch.
 *
 * Publishes events at a steady rate to RabbitMQ (pano.amqp.url, confirmed,
 * through lib/amqp_client.h like every pano publisher) with ts = the time of
 * publishing, and meanwhile polls Elasticsearch (pano.es.url) with _search
 * (which sees only refreshed, i.e. searchable, documents) for a sample of
 * them, marked "probe": true. The latency of a probe is the time of the
 * answer that first contained it minus its ts. At the end it waits for the
 * stragglers and counts every event of the run in Elasticsearch.
 *
 *   e2e_probe [--rate 2000] [--duration 60] [--workflows 20] [--probe-every 10]
 *             [--index PATTERN] [--settle 60]
 *
 * Prints "e2e: published N, confirmed N, searchable N, probes N,
 * p50_ms=... p99_ms=... max_ms=... lost=N".
 */
#include "amqp_client.h"
#include "buf.h"
#include "cli.h"
#include "es.h"
#include "event.h"
#include "json.h"
#include "log.h"
#include "mem.h"
#include "url.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Seconds between two searches for the probes. */
#define POLL_PERIOD 0.02
/* Most probes asked for in one search (ES's default max_terms_count is
 * 65536). */
#define MAX_ASKED 10000

typedef struct {
    char id[64];
    double ts;
    double seen; /* 0 until searchable */
} probe;

static probe *probes;
static atomic_size_t nprobes; /* published probes, in ts order */
static size_t cap_probes;
static atomic_bool publishing_done;
static const char *index_pattern;
static char run_id[40];
static pano_config *cfg;
static uint64_t confirmed, refused;
static double search_seconds, search_max;
static long searches;

static void on_confirm(void *user, uint64_t seq, pano_amqp_outcome outcome)
{
    (void)user;
    (void)seq;
    if (outcome == PANO_AMQP_CONFIRMED)
        confirmed++;
    else
        refused++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Poll for probes not seen yet, from the oldest unseen one on. */
static void *prober(void *arg)
{
    (void)arg;
    char err[512];
    pano_es *es = pano_es_new(cfg, err, sizeof err);
    if (!es) {
        pano_error("%s", err);
        return NULL;
    }
    size_t oldest = 0;
    double settle_until = 0;
    double settle = *(double *)arg;
    for (;;) {
        size_t n = atomic_load(&nprobes);
        while (oldest < n && probes[oldest].seen)
            oldest++;
        if (atomic_load(&publishing_done)) {
            if (!settle_until)
                settle_until = pano_now() + settle;
            if (oldest == n || pano_now() > settle_until)
                break;
        }
        if (oldest == n) {
            usleep(50000);
            continue;
        }
        /* Ask only for the probes not seen yet (by id): the answer holds
         * what became searchable since the last search, and the search
         * stays cheap however long one probe takes. */
        char *path = pano_asprintf("/%s/_search?filter_path=hits.hits._source", index_pattern);
        pano_buf ids = {0};
        size_t asked_for = 0;
        for (size_t k = oldest; k < n && asked_for < MAX_ASKED; k++)
            if (!probes[k].seen) {
                pano_buf_appendf(&ids, "%s\"%s-p-%zu\"", asked_for ? "," : "", run_id, k);
                asked_for++;
            }
        pano_buf_append(&ids, "", 1);
        char *body = pano_asprintf("{\"size\":%zu,\"_source\":[\"event_id\"],\"query\":"
                                   "{\"terms\":{\"event_id\":[%s]}}}",
                                   asked_for, ids.data);
        pano_buf_free(&ids);
        pano_es_response resp;
        double asked = pano_now();
        int rc = pano_es_request(es, "POST", path, body, strlen(body), &resp, err, sizeof err);
        double answered = pano_now();
        searches++;
        search_seconds += answered - asked;
        if (answered - asked > search_max)
            search_max = answered - asked;
        free(path);
        free(body);
        if (rc == 0 && resp.status == 200) {
            pano_json *r = pano_json_parse(resp.body, resp.len, 16, err, sizeof err);
            pano_json *hits = pano_json_get(pano_json_get(r, "hits"), "hits");
            for (size_t i = 0; hits && i < hits->u.items.len; i++) {
                const char *id =
                    pano_json_get_str(pano_json_get(hits->u.items.values[i], "_source"), "event_id");
                /* ids are "<run>-<index of the probe>" */
                const char *dash = id ? strrchr(id, '-') : NULL;
                size_t k = dash ? strtoul(dash + 1, NULL, 10) : (size_t)-1;
                if (k < n && !probes[k].seen)
                    probes[k].seen = answered;
            }
            pano_json_free(r);
        }
        if (rc == 0)
            pano_es_response_free(&resp);
        /* A probe is seen at most one period (and a search) after it became
         * searchable: the reading is pessimistic by that much. */
        double spent = pano_now() - asked;
        if (spent < POLL_PERIOD)
            usleep((useconds_t)((POLL_PERIOD - spent) * 1e6));
    }
    pano_es_free(es);
    return NULL;
}

static long long count_run(void)
{
    char err[512];
    pano_es *es = pano_es_new(cfg, err, sizeof err);
    if (!es)
        return -1;
    char *path = pano_asprintf("/%s/_count", index_pattern);
    char *body = pano_asprintf("{\"query\":{\"term\":{\"run\":\"%s\"}}}", run_id);
    pano_es_response resp;
    long long count = -1;
    if (pano_es_request(es, "POST", path, body, strlen(body), &resp, err, sizeof err) == 0) {
        pano_json *r = pano_json_parse(resp.body, resp.len, 16, err, sizeof err);
        int64_t c;
        if (r && pano_json_get_int(r, "count", &c))
            count = c;
        pano_json_free(r);
        pano_es_response_free(&resp);
    }
    free(path);
    free(body);
    pano_es_free(es);
    return count;
}

int main(int argc, char **argv)
{
    cfg = pano_cli_init("e2e_probe", argc, argv, false);
    if (!cfg)
        return 2;
    enum { O_RATE = 0x2000, O_DURATION, O_WF, O_EVERY, O_INDEX, O_SETTLE };
    static const struct option options[] = {
        {"rate", required_argument, NULL, O_RATE},
        {"duration", required_argument, NULL, O_DURATION},
        {"workflows", required_argument, NULL, O_WF},
        {"probe-every", required_argument, NULL, O_EVERY},
        {"index", required_argument, NULL, O_INDEX},
        {"settle", required_argument, NULL, O_SETTLE},
        PANO_CLI_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    double rate = 2000, duration = 60, settle = 60;
    long nwf = 20, every = 10;
    index_pattern = "pano-*";
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        int handled = pano_cli_option(cfg, opt, optarg);
        if (handled < 0)
            return 2;
        if (handled)
            continue;
        switch (opt) {
        case O_RATE: rate = atof(optarg); break;
        case O_DURATION: duration = atof(optarg); break;
        case O_WF: nwf = atol(optarg); break;
        case O_EVERY: every = atol(optarg); break;
        case O_INDEX: index_pattern = optarg; break;
        case O_SETTLE: settle = atof(optarg); break;
        default: return 2;
        }
    }
    pano_cli_apply_logging(cfg);
    if (rate <= 0 || duration <= 0 || nwf < 1 || every < 1)
        return 2;
    unsigned char rnd[4];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return 1;
    snprintf(run_id, sizeof run_id, "e2e%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]);
    char (*wfs)[37] = pano_calloc((size_t)nwf, sizeof *wfs);
    for (long i = 0; i < nwf; i++) {
        unsigned char b[16];
        if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
            return 1;
        snprintf(wfs[i], 37,
                 "%02x%02x%02x%02x-%02x%02x-4%x%02x-a%x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6] & 15, b[7], b[8] & 15, b[9], b[10], b[11],
                 b[12], b[13], b[14], b[15]);
    }

    pano_amqp_url url;
    char err[512];
    const char *text = pano_config_str(cfg, "pano.amqp.url");
    if (!text || pano_amqp_url_parse(text, &url, err, sizeof err) < 0) {
        pano_error("pano.amqp.url: %s", text ? err : "not set");
        return 2;
    }
    pano_amqp_options o = {.url = &url,
                           .heartbeat = 0,
                           .timeout = 10,
                           .tls_verify = true,
                           .publisher = true,
                           .max_in_flight = 500};
    pano_amqp *amqp = pano_amqp_connect(&o, err, sizeof err);
    if (!amqp) {
        pano_error("%s", err);
        return 1;
    }
    long long total = (long long)(rate * duration);
    cap_probes = (size_t)(total / every + 1);
    probes = pano_calloc(cap_probes, sizeof *probes);
    pthread_t thread;
    if (pthread_create(&thread, NULL, prober, &settle) != 0)
        return 1;
    /* One name per family, none with a schema of its own (the bridge checks
     * events against schemas/): the envelope is all they must satisfy. */
    static const char *names[] = {"kickstart.e2e", "darshan.e2e", "transfer.e2e", "stampede.e2e",
                                  "custom.e2e"};
    double start = pano_now();
    uint64_t seq = 0;
    long long published = 0;
    int rc = 0;
    for (long long i = 0; i < total; i++) {
        double due = start + (double)i / rate, now = pano_now();
        if (due > now)
            usleep((useconds_t)((due - now) * 1e6));
        bool is_probe = i % every == 0;
        size_t k = atomic_load(&nprobes);
        pano_json *e = pano_json_object();
        const char *name = names[i % 5];
        char id[64];
        if (is_probe)
            snprintf(id, sizeof id, "%s-p-%zu", run_id, k);
        else
            snprintf(id, sizeof id, "%s-e%lld", run_id, i);
        double ts = pano_now();
        pano_json_set_str(e, "event", name);
        pano_json_set_double(e, "ts", ts, 6);
        pano_json_set_str(e, "event_id", id);
        pano_json_set_int(e, "seq", i + 1);
        pano_json_set_str(e, "hostname", "e2e.example.org");
        pano_json_set_str(e, "wf_uuid", wfs[i % nwf]);
        pano_json_set_str(e, "run", run_id);
        if (is_probe)
            pano_json_set_bool(e, "probe", true);
        pano_json_set_int(e, "value", i);
        size_t len;
        char *body = pano_json_serialize(e, &len);
        pano_json_free(e);
        if (is_probe) {
            snprintf(probes[k].id, sizeof probes[k].id, "%s", id);
            probes[k].ts = ts;
            atomic_store(&nprobes, k + 1);
        }
        int r = pano_amqp_send(amqp, name, body, len, id, &seq, on_confirm, NULL, err, sizeof err);
        free(body);
        if (r < 0) {
            pano_error("publish: %s", err);
            rc = 1;
            break;
        }
        published++;
    }
    if (rc == 0 && pano_amqp_wait(amqp, seq, on_confirm, NULL, err, sizeof err) < 0) {
        pano_error("confirms: %s", err);
        rc = 1;
    }
    double took = pano_now() - start;
    pano_amqp_close(amqp);
    pano_amqp_url_free(&url);
    atomic_store(&publishing_done, true);
    pano_info("published %lld events in %.1f s (%.0f/s); waiting for the stragglers", published,
              took, published / took);
    pthread_join(thread, NULL);

    size_t n = atomic_load(&nprobes), seen = 0;
    pano_info("%ld searches for probes, %.0f ms on average, %.0f ms at most", searches,
              searches ? search_seconds / (double)searches * 1000 : 0, search_max * 1000);
    /* The latency over the run, per 10 s of publishing, to stderr. */
    for (double w = 0; w < took; w += 10) {
        double sum = 0, worst = 0;
        size_t c = 0;
        for (size_t i = 0; i < n; i++)
            if (probes[i].seen && probes[i].ts - start >= w && probes[i].ts - start < w + 10) {
                double l = probes[i].seen - probes[i].ts;
                sum += l;
                worst = l > worst ? l : worst;
                c++;
            }
        if (c)
            pano_info("published at %3.0f-%3.0f s: %zu probes, mean %.0f ms, max %.0f ms", w,
                      w + 10, c, sum / (double)c * 1000, worst * 1000);
    }
    double *lat = pano_calloc(n ? n : 1, sizeof *lat);
    for (size_t i = 0; i < n; i++)
        if (probes[i].seen)
            lat[seen++] = (probes[i].seen - probes[i].ts) * 1000;
    qsort(lat, seen, sizeof *lat, cmp_double);
    double p50 = seen ? lat[(size_t)(0.50 * (double)(seen - 1))] : -1;
    double p99 = seen ? lat[(size_t)(0.99 * (double)(seen - 1))] : -1;
    double max = seen ? lat[seen - 1] : -1;
    /* every event of the run, searchable: poll the count until it stops
     * changing (the indexer may still be flushing its last batch) */
    long long found = -1;
    for (int i = 0; i < 100; i++) {
        found = count_run();
        if (found >= (long long)confirmed)
            break;
        usleep(300000);
    }
    printf("e2e: published %lld, confirmed %llu, refused %llu, searchable %lld, probes %zu "
           "(%zu seen), p50_ms=%.0f p99_ms=%.0f max_ms=%.0f lost=%lld\n",
           published, (unsigned long long)confirmed, (unsigned long long)refused, found, n, seen,
           p50, p99, max, published - (found < 0 ? 0 : found));
    free(lat);
    free(probes);
    free(wfs);
    pano_config_free(cfg);
    return rc;
}
