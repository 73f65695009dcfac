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
 * The baseline, measured in the same run: ten times a second a document is
 * written straight into one of the run's indices (one the probes were found
 * in, so it shares their refresh schedule), and timed the same way from the
 * start of its write until a search finds it. That is what Elasticsearch
 * alone takes with this refresh interval on this machine under this load;
 * the difference to the probes is what pano and the two brokers add.
 *
 * And why Elasticsearch takes that long: every REFRESH_PERIOD the refresh
 * statistics of the run's indices are read, giving the time between two
 * refreshes of an index (to within that period) and the time each took.
 *
 *   e2e_probe [--rate 2000] [--duration 60] [--workflows 20] [--probe-every 10]
 *             [--index PATTERN] [--settle 60]
 *
 * Prints "e2e: published N, confirmed N, searchable N, probes N,
 * p50_ms=... p99_ms=... max_ms=... lost=N es_alone_p50_ms=... es_alone_p99_ms=...
 * refresh_every_p99_ms=... refresh_p99_ms=...".
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
/* Seconds between two documents written straight to Elasticsearch. */
#define DIRECT_PERIOD 0.1
/* Indices the direct documents rotate over (the run's event families). */
#define MAX_INDICES 8
/* Seconds between two readings of the indices' refresh statistics. */
#define REFRESH_PERIOD 0.05
/* Indices whose refreshes are followed (those of the run's pattern). */
#define MAX_WATCHED 32

typedef struct {
    double ts;   /* when it was published (or its write began) */
    double seen; /* 0 until searchable */
} probe;

/* Samples of one kind, in ts order. Its writer fills items[n] and then
 * raises n; the prober reads only items below n. */
typedef struct {
    const char *tag; /* in the ids: "<run>-<tag>-<k>" */
    probe *items;
    atomic_size_t n;
    size_t cap;
    size_t oldest; /* prober's: all below it are seen */
} probe_set;

static probe_set via_pano = {.tag = "p"}, es_alone = {.tag = "d"};
/* The run's indices, learnt from the probes' hits (prober writes, direct
 * writer reads below nindices). */
static char indices[MAX_INDICES][128];
static atomic_int nindices;
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

/* The q quantile of n values in ascending order, -1 when there is none. */
static double quantile(const double *sorted, size_t n, double q)
{
    return n ? sorted[(size_t)(q * (double)(n - 1))] : -1;
}

typedef struct {
    size_t seen;
    double p50, p99, max; /* ms, -1 when none was seen */
} latency;

/* The latency (seen - ts) of the set's samples that were seen. */
static latency latency_of(const probe_set *set)
{
    size_t n = atomic_load(&set->n);
    double *ms = pano_calloc(n ? n : 1, sizeof *ms);
    latency l = {0, -1, -1, -1};
    for (size_t i = 0; i < n; i++)
        if (set->items[i].seen)
            ms[l.seen++] = (set->items[i].seen - set->items[i].ts) * 1000;
    qsort(ms, l.seen, sizeof *ms, cmp_double);
    l.p50 = quantile(ms, l.seen, 0.50);
    l.p99 = quantile(ms, l.seen, 0.99);
    l.max = quantile(ms, l.seen, 1);
    free(ms);
    return l;
}

/* An Elasticsearch client for one of the threads (pano.es.url), or NULL
 * after saying why. */
static pano_es *es_client(void)
{
    char err[512];
    pano_es *es = pano_es_new(cfg, err, sizeof err);
    if (!es)
        pano_error("%s", err);
    return es;
}

/* Remember the index a probe was found in, for the direct documents. */
static void learn_index(const char *name)
{
    int n = atomic_load(&nindices);
    if (!name || n == MAX_INDICES || strlen(name) >= sizeof indices[0])
        return;
    for (int i = 0; i < n; i++)
        if (strcmp(indices[i], name) == 0)
            return;
    snprintf(indices[n], sizeof indices[n], "%s", name);
    atomic_store(&nindices, n + 1);
}

/* Add the ids of set's samples not seen yet to a list of ids. */
static size_t ask_for(probe_set *set, pano_buf *ids, size_t asked_for)
{
    size_t n = atomic_load(&set->n);
    while (set->oldest < n && set->items[set->oldest].seen)
        set->oldest++;
    for (size_t k = set->oldest; k < n && asked_for < MAX_ASKED; k++)
        if (!set->items[k].seen) {
            pano_buf_appendf(ids, "%s\"%s-%s-%zu\"", asked_for ? "," : "", run_id, set->tag, k);
            asked_for++;
        }
    return asked_for;
}

/* Mark the sample a hit's _id names ("<run>-<tag>-<k>") as seen. */
static void mark_seen(const char *id, const char *index, double when)
{
    const char *dash = id ? strrchr(id, '-') : NULL;
    if (!dash || dash - id < 2 || dash[-2] != '-')
        return;
    probe_set *set = dash[-1] == *es_alone.tag ? &es_alone : &via_pano;
    size_t k = strtoul(dash + 1, NULL, 10);
    if (k < atomic_load(&set->n) && !set->items[k].seen) {
        set->items[k].seen = when;
        if (set == &via_pano)
            learn_index(index);
    }
}

/* Poll for samples not seen yet, from the oldest unseen one on. */
static void *prober(void *arg)
{
    char err[512];
    pano_es *es = es_client();
    if (!es)
        return NULL;
    double settle_until = 0;
    double settle = *(double *)arg;
    char *path = pano_asprintf("/%s/_search?filter_path=hits.hits._id,hits.hits._index",
                               index_pattern);
    for (;;) {
        /* Ask only for the samples not seen yet, by _id (the indexer's is
         * the event_id) and without _source: the answer holds what became
         * searchable since the last search, and the search stays cheap
         * however long one sample takes. */
        pano_buf ids = {0};
        size_t asked_for = ask_for(&es_alone, &ids, ask_for(&via_pano, &ids, 0));
        pano_buf_append(&ids, "", 1);
        if (atomic_load(&publishing_done)) {
            if (!settle_until)
                settle_until = pano_now() + settle;
            if (asked_for == 0 || pano_now() > settle_until) {
                pano_buf_free(&ids);
                break;
            }
        }
        if (asked_for == 0) {
            pano_buf_free(&ids);
            usleep(50000);
            continue;
        }
        char *body = pano_asprintf("{\"size\":%zu,\"_source\":false,\"query\":"
                                   "{\"ids\":{\"values\":[%s]}}}",
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
        free(body);
        if (rc == 0 && resp.status == 200) {
            pano_json *r = pano_json_parse(resp.body, resp.len, 16, err, sizeof err);
            pano_json *hits = pano_json_get(pano_json_get(r, "hits"), "hits");
            for (size_t i = 0; i < pano_json_len(hits); i++) {
                pano_json *hit = pano_json_at(hits, i);
                mark_seen(pano_json_get_str(hit, "_id"), pano_json_get_str(hit, "_index"),
                          answered);
            }
            pano_json_free(r);
        }
        if (rc == 0)
            pano_es_response_free(&resp);
        /* A sample is seen at most one period (and a search) after it became
         * searchable: the reading is pessimistic by that much. */
        double spent = pano_now() - asked;
        if (spent < POLL_PERIOD)
            usleep((useconds_t)((POLL_PERIOD - spent) * 1e6));
    }
    free(path);
    pano_es_free(es);
    return NULL;
}

/* The baseline: write a document straight into one of the run's indices
 * every DIRECT_PERIOD, until publishing is done. */
static void *direct_writer(void *arg)
{
    (void)arg;
    char err[512];
    pano_es *es = es_client();
    if (!es)
        return NULL;
    while (!atomic_load(&publishing_done)) {
        usleep((useconds_t)(DIRECT_PERIOD * 1e6));
        int n = atomic_load(&nindices);
        size_t k = atomic_load(&es_alone.n);
        if (n == 0 || k == es_alone.cap)
            continue;
        char id[64];
        snprintf(id, sizeof id, "%s-d-%zu", run_id, k);
        char *path = pano_asprintf("/%s/_doc/%s", indices[k % (size_t)n], id);
        double ts = pano_now();
        char *body = pano_asprintf("{\"event\":\"custom.e2e\",\"ts\":%.6f,\"event_id\":\"%s\","
                                   "\"hostname\":\"e2e.example.org\"}",
                                   ts, id);
        pano_es_response resp;
        int rc = pano_es_request(es, "PUT", path, body, strlen(body), &resp, err, sizeof err);
        if (rc == 0 && (resp.status == 200 || resp.status == 201)) {
            es_alone.items[k].ts = ts;
            atomic_store(&es_alone.n, k + 1);
        } else {
            pano_warn("direct write to %s: %s", path, rc == 0 ? resp.body : err);
        }
        if (rc == 0)
            pano_es_response_free(&resp);
        free(path);
        free(body);
    }
    pano_es_free(es);
    return NULL;
}

/* The refreshes seen: time since the index's previous one, and its own
 * duration, in ms (only where exactly one refresh happened between two
 * readings). */
typedef struct {
    double *every, *took;
    size_t n, cap;
} refresh_log;

static refresh_log refreshes;

typedef struct {
    char name[128];
    int64_t total, millis;
    double at; /* when its total last changed */
} watched_index;

/* Note the refreshes that happened since the last reading of one index. */
static void note_refreshes(watched_index *w, int64_t total, int64_t millis, double now)
{
    if (w->at && total == w->total + 1 && refreshes.n < refreshes.cap) {
        refreshes.every[refreshes.n] = (now - w->at) * 1000;
        refreshes.took[refreshes.n++] = (double)(millis - w->millis);
    }
    if (total != w->total || !w->at)
        w->at = now;
    w->total = total;
    w->millis = millis;
}

/* Read the refresh statistics of the run's indices every REFRESH_PERIOD
 * until publishing is done. */
static void *refresh_watcher(void *arg)
{
    (void)arg;
    char err[512];
    pano_es *es = es_client();
    if (!es)
        return NULL;
    watched_index watched[MAX_WATCHED] = {0};
    size_t nwatched = 0;
    char *path = pano_asprintf("/%s/_stats/refresh?level=indices&filter_path=indices.*.primaries."
                               "refresh.total,indices.*.primaries.refresh.total_time_in_millis",
                               index_pattern);
    while (!atomic_load(&publishing_done)) {
        usleep((useconds_t)(REFRESH_PERIOD * 1e6));
        pano_es_response resp;
        if (pano_es_request(es, "GET", path, NULL, 0, &resp, err, sizeof err) < 0)
            continue;
        double now = pano_now();
        pano_json *r = resp.status == 200 ? pano_json_parse(resp.body, resp.len, 16, err, sizeof err)
                                          : NULL;
        pano_json *indices_stats = pano_json_get(r, "indices");
        for (size_t i = 0; i < pano_json_len(indices_stats); i++) {
            const char *name = pano_json_key_at(indices_stats, i);
            pano_json *primaries = pano_json_get(pano_json_at(indices_stats, i), "primaries");
            pano_json *stats = pano_json_get(primaries, "refresh");
            int64_t total, millis;
            if (!pano_json_get_int(stats, "total", &total) ||
                !pano_json_get_int(stats, "total_time_in_millis", &millis) ||
                strlen(name) >= sizeof watched[0].name)
                continue;
            size_t k = 0;
            while (k < nwatched && strcmp(watched[k].name, name) != 0)
                k++;
            if (k == nwatched) {
                if (nwatched == MAX_WATCHED)
                    continue;
                snprintf(watched[nwatched++].name, sizeof watched[0].name, "%s", name);
            }
            note_refreshes(&watched[k], total, millis, now);
        }
        pano_json_free(r);
        pano_es_response_free(&resp);
    }
    free(path);
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
    via_pano.cap = (size_t)(total / every + 1);
    via_pano.items = pano_calloc(via_pano.cap, sizeof *via_pano.items);
    es_alone.cap = (size_t)(duration / DIRECT_PERIOD + 1);
    es_alone.items = pano_calloc(es_alone.cap, sizeof *es_alone.items);
    refreshes.cap = (size_t)(duration / REFRESH_PERIOD) * 4 + 64;
    refreshes.every = pano_calloc(refreshes.cap, sizeof *refreshes.every);
    refreshes.took = pano_calloc(refreshes.cap, sizeof *refreshes.took);
    pthread_t thread, writer, watcher;
    if (pthread_create(&thread, NULL, prober, &settle) != 0 ||
        pthread_create(&writer, NULL, direct_writer, NULL) != 0 ||
        pthread_create(&watcher, NULL, refresh_watcher, NULL) != 0)
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
        size_t k = atomic_load(&via_pano.n);
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
            via_pano.items[k].ts = ts;
            atomic_store(&via_pano.n, k + 1);
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
    pthread_join(writer, NULL);
    pthread_join(watcher, NULL);
    pthread_join(thread, NULL);

    const probe *probes = via_pano.items;
    size_t n = atomic_load(&via_pano.n);
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
    latency pano = latency_of(&via_pano), alone = latency_of(&es_alone);
    pano_info("written straight to Elasticsearch: %zu documents (%zu seen), p50 %.0f ms, "
              "p99 %.0f ms, max %.0f ms",
              atomic_load(&es_alone.n), alone.seen, alone.p50, alone.p99, alone.max);
    size_t nr = refreshes.n;
    qsort(refreshes.every, nr, sizeof *refreshes.every, cmp_double);
    qsort(refreshes.took, nr, sizeof *refreshes.took, cmp_double);
    double every_p50 = quantile(refreshes.every, nr, 0.50),
           every_p99 = quantile(refreshes.every, nr, 0.99),
           took_p50 = quantile(refreshes.took, nr, 0.50),
           took_p90 = quantile(refreshes.took, nr, 0.90),
           took_p99 = quantile(refreshes.took, nr, 0.99);
    pano_info("Elasticsearch refreshed an index every p50 %.0f ms, p99 %.0f ms (read every %.0f "
              "ms); a refresh took p50 %.0f ms, p90 %.0f ms, p99 %.0f ms (%zu refreshes)",
              every_p50, every_p99, REFRESH_PERIOD * 1000, took_p50, took_p90, took_p99, nr);
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
           "(%zu seen), p50_ms=%.0f p99_ms=%.0f max_ms=%.0f lost=%lld es_alone_p50_ms=%.0f "
           "es_alone_p99_ms=%.0f refresh_every_p99_ms=%.0f refresh_p99_ms=%.0f\n",
           published, (unsigned long long)confirmed, (unsigned long long)refused, found, n,
           pano.seen, pano.p50, pano.p99, pano.max, published - (found < 0 ? 0 : found),
           alone.p50, alone.p99, every_p99, took_p99);
    free(refreshes.every);
    free(refreshes.took);
    free(via_pano.items);
    free(es_alone.items);
    free(wfs);
    pano_config_free(cfg);
    return rc;
}
