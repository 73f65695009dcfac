#include "sink.h"

#include "amqp_client.h"
#include "event.h"
#include "log.h"
#include "filter.h"
#include "mem.h"
#include "secret.h"
#include "spool.h"
#include "store.h"
#include "url.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pano_sink {
    char description[512];
    pano_filter *filter; /* pano.events, pano.<publisher>.enabled */
    /* AMQP */
    pano_amqp_url url;
    pano_amqp_options options;
    char *password; /* from pano.amqp.password_file */
    pano_amqp *amqp;
    bool has_url;
    /* spool (AMQP only) */
    pano_spool *spool;
    double retry_at; /* no connection attempt before (pano_now()) */
    double backoff;  /* seconds, doubles after each failed connection */
    bool spooled;    /* this sink put something in the spool */
    pano_sink_stats stats;
    /* the embedded store */
    pano_store *store;
    bool hold_store;      /* held events go in one transaction */
    bool store_open;      /* that transaction is open */
    size_t store_pending; /* events put in it */
    /* file */
    FILE *out;
    bool close_out;
    pano_sink_format format;
    pano_buf lines; /* not written yet: one line, or more while held */
    size_t nlines;
    bool hold;
};

/* The file beside a broker or a store is a copy: their answer counts. */
static bool file_is_copy(const pano_sink *s)
{
    return s->has_url || s->store;
}

/* Commit the events held in the store's batch: 0, or -1 with the message
 * (also logged) in err, the events not stored then counted as failed. */
static int store_commit(pano_sink *s, char *err, size_t errlen)
{
    if (!s->store_open)
        return 0;
    char why[512];
    size_t lost = (size_t)pano_store_commit(s->store, why, sizeof why);
    if (lost > s->store_pending)
        lost = s->store_pending;
    s->stats.sent += s->store_pending - lost;
    s->stats.failed += lost;
    if (lost) {
        snprintf(err, errlen, "%zu held event(s) not stored in %s: %s", lost,
                 pano_store_file(s->store), why);
        pano_error("%s", err);
    }
    s->store_pending = 0;
    s->store_open = false;
    return lost ? -1 : 0;
}

/* Held lines are written once this much is waiting. */
#define HOLD_BYTES (64u * 1024)

/* The spool is an addition: without it the sink still works, as before. */
static void open_spool(pano_sink *s, const pano_config *cfg)
{
    const char *root = pano_config_str(cfg, "pano.spool.dir");
    char *def = NULL;
    if (!root || !*root)
        root = def = pano_spool_default_root();
    /* Events are replayed only to the broker they were meant for. */
    char *dest = pano_asprintf("amqp%s://%s@%s:%d/%s/%s", s->url.tls ? "s" : "", s->url.user,
                               s->url.host, s->url.port, s->url.vhost, s->url.exchange);
    char err[512];
    s->spool = pano_spool_open(root, dest, pano_config_size(cfg, "pano.spool.max_size"), err,
                               sizeof err);
    if (!s->spool)
        pano_warn("no spool (%s): events that cannot be delivered are logged and lost", err);
    free(dest);
    free(def);
}

static int open_output(pano_sink *s, const char *path, char *err, size_t errlen)
{
    if (strcmp(path, "-") == 0)
        s->out = stdout;
    else if (strcmp(path, "/dev/stderr") == 0)
        s->out = stderr;
    else {
        s->out = fopen(path, "ae");
        if (!s->out) {
            snprintf(err, errlen, "cannot open output file %s: %s", path, strerror(errno));
            return -1;
        }
        s->close_out = true;
    }
    snprintf(s->description, sizeof s->description, "%s",
             strcmp(path, "-") == 0 ? "standard output" : path);
    return 0;
}

pano_sink *pano_sink_open(const pano_config *cfg, char *err, size_t errlen)
{
    pano_sink *s = pano_calloc(1, sizeof *s);
    if (!(s->filter = pano_filter_new(cfg, pano_log_program(), err, errlen)))
        goto fail;
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    if (url && *url) {
        if (pano_amqp_url_parse(url, &s->url, err, errlen) < 0)
            goto fail;
        s->has_url = true;
        const char *pwfile = pano_config_str(cfg, "pano.amqp.password_file");
        if (pwfile && !(s->password = pano_secret_read("pano.amqp.password_file", pwfile, err, errlen)))
            goto fail;
        s->options.url = &s->url;
        s->options.password = s->password;
        s->options.heartbeat = (int)pano_config_int(cfg, "pano.amqp.heartbeat");
        if (s->url.heartbeat >= 0)
            s->options.heartbeat = s->url.heartbeat;
        s->options.timeout = pano_config_double(cfg, "pano.amqp.timeout");
        if (s->url.connection_timeout > 0)
            s->options.timeout = s->url.connection_timeout;
        s->options.tls_verify = pano_config_bool(cfg, "pano.amqp.tls_verify");
        s->options.cacert = pano_config_str(cfg, "pano.amqp.cacert");
        s->options.publisher = true;
        s->options.max_in_flight = 256;
        if (pano_config_bool(cfg, "pano.spool.enabled"))
            open_spool(s, cfg);
    }
    /* An output file asked for is written, broker or not (a copy beside it). */
    const char *path = pano_config_str(cfg, "pano.output");
    if (path && *path && open_output(s, path, err, errlen) < 0)
        goto fail;
    const char *store = pano_config_str(cfg, "pano.store");
    if (!s->has_url && (!s->out || (store && *store))) {
        char dir[4096];
        if (pano_store_path(cfg, dir, sizeof dir, err, errlen) < 0 ||
            !(s->store = pano_store_open_writer(cfg, dir, err, errlen)))
            goto fail;
        if (s->out) /* "STORE and FILE" */
            snprintf(s->description + strlen(s->description),
                     sizeof s->description - strlen(s->description), " and %.200s",
                     pano_store_file(s->store));
        else
            snprintf(s->description, sizeof s->description, "%s", pano_store_file(s->store));
    }
    if (s->has_url) { /* "amqp://user:***@host/vhost/exchange[ and FILE]" */
        char file[sizeof s->description];
        snprintf(file, sizeof file, " and %.400s", s->out ? s->description : "");
        pano_url_redact(url, s->description, sizeof s->description);
        if (s->out) {
            size_t n = strlen(s->description);
            snprintf(s->description + n, sizeof s->description - n, "%s", file);
        }
    }
    return s;

fail:
    pano_sink_close(s);
    return NULL;
}

pano_sink *pano_sink_open_file(const pano_config *cfg, const char *path,
                               pano_sink_format format, char *err, size_t errlen)
{
    pano_sink *s = pano_calloc(1, sizeof *s);
    s->format = format;
    if (!(s->filter = pano_filter_new(cfg, pano_log_program(), err, errlen)) ||
        open_output(s, path, err, errlen) < 0) {
        pano_sink_close(s);
        return NULL;
    }
    return s;
}

const char *pano_sink_describe(const pano_sink *s) { return s->description; }

/* Write the pending lines. Returns 0, or -1 with a message in err; then
 * the lines not (completely) written are dropped, and logged in full with
 * log_each (else the caller reports the one line there was). */
static int write_lines(pano_sink *s, bool log_each, char *err, size_t errlen)
{
    if (s->nlines == 0)
        return 0;
    size_t done = 0;
    int e = 0;
    /* stdio first: the stream may be shared (stdout) */
    if (fflush(s->out) != 0)
        e = errno;
    while (!e && done < s->lines.len) {
        ssize_t n = write(fileno(s->out), s->lines.data + done, s->lines.len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            e = errno;
        else if (n == 0)
            e = EIO;
        else
            done += (size_t)n;
    }
    if (!e) {
        if (!file_is_copy(s))
            s->stats.sent += s->nlines;
        pano_buf_clear(&s->lines);
        s->nlines = 0;
        return 0;
    }
    snprintf(err, errlen, "writing to %s: %s", s->description, strerror(e));
    /* lines wholly written count as sent */
    const char *p = s->lines.data, *end = s->lines.data + s->lines.len;
    for (const char *nl; p < end && (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
        if ((size_t)(nl + 1 - s->lines.data) <= done) {
            s->stats.sent += !file_is_copy(s);
            continue;
        }
        s->stats.failed += !file_is_copy(s);
        if (log_each)
            pano_error("event not written (%s): %.*s", err, (int)(nl - p), p);
    }
    pano_buf_clear(&s->lines);
    s->nlines = 0;
    return -1;
}

/* A line was added to s->lines: write it now, or later when held. */
static int line_added(pano_sink *s, char *err, size_t errlen)
{
    pano_buf_append(&s->lines, "\n", 1);
    s->nlines++;
    if (s->hold && s->lines.len < HOLD_BYTES)
        return 0;
    int rc = write_lines(s, s->hold, err, errlen);
    return s->hold ? 0 : rc; /* held lines that failed were logged */
}

void pano_sink_hold(pano_sink *s, bool hold)
{
    s->hold = hold && !file_is_copy(s);
    s->hold_store = hold && s->store;
    char err[512];
    if (!hold && s->store)
        store_commit(s, err, sizeof err); /* a failure is logged */
}

int pano_sink_flush(pano_sink *s, char *err, size_t errlen)
{
    if (s->has_url)
        return 0;
    int rc = s->store ? store_commit(s, err, errlen) : 0;
    return write_lines(s, true, err, errlen) < 0 ? -1 : rc;
}

/* Returns 0 confirmed, 1 refused by the broker (nacked or unroutable), -1
 * no usable connection (after which connecting waits for a backoff). */
static int publish(pano_sink *s, const char *key, const char *id, const char *json,
                   size_t len, char *err, size_t errlen)
{
    /* Two attempts: a connection that went stale (broker restart, idle
     * timeout) is reopened once before the send is reported as failed. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!s->amqp) {
            s->amqp = pano_amqp_connect(&s->options, err, errlen);
            if (!s->amqp)
                continue;
        }
        int rc = pano_amqp_publish(s->amqp, key, json, len, id, err, errlen);
        if (rc >= 0) {
            s->backoff = 0;
            return rc; /* nacked or unroutable: reconnecting won't help */
        }
        pano_amqp_close(s->amqp);
        s->amqp = NULL;
    }
    /* Do not hammer a broker that is down (nor wait for a connection
     * timeout on every event): try again after 0.5 s, 1 s, ... 15 s. */
    s->backoff = s->backoff > 0 ? s->backoff * 2 : 0.5;
    if (s->backoff > 15)
        s->backoff = 15;
    s->retry_at = pano_now() + s->backoff;
    return -1;
}

static int store_event(pano_sink *s, const char *key, const char *json, size_t len,
                       char *err, size_t errlen)
{
    char why[512];
    if (s->hold_store && !s->store_open)
        s->store_open = pano_store_begin(s->store, why, sizeof why) == 0; /* else one by one */
    /* held: written by the store's writer thread while the next are checked */
    switch (s->store_open ? pano_store_queue(s->store, key, json, len, why, sizeof why)
                          : pano_store_put(s->store, key, json, len, why, sizeof why)) {
    case PANO_STORE_STORED:
    case PANO_STORE_DUPLICATE:
        if (!s->store_open)
            s->stats.sent++;
        else
            s->store_pending++;
        return 0;
    case PANO_STORE_REJECTED:
        s->stats.rejected++;
        snprintf(err, errlen, "%s refused: %s; kept in the dead letters of %s", key, why,
                 pano_store_file(s->store));
        return -1;
    case PANO_STORE_FAILED:
        break;
    }
    s->stats.failed++;
    snprintf(err, errlen, "%s not stored: %s", key, why);
    return -1;
}

static pano_spool_result replay_one(void *user, const char *key, const char *id,
                                    const char *json, size_t len, char *err, size_t errlen)
{
    pano_sink *s = user;
    int rc = publish(s, key, id, json, len, err, errlen);
    if (rc == 0)
        s->stats.replayed++;
    return rc == 0 ? PANO_SPOOL_SENT : rc > 0 ? PANO_SPOOL_REJECTED : PANO_SPOOL_FAILED;
}

/* Replay what waits in the spool. True when it is empty afterwards. */
static bool drain_spool(pano_sink *s, double lock_wait, char *err, size_t errlen)
{
    if (!pano_spool_pending(s->spool))
        return true;
    if (pano_now() < s->retry_at) {
        snprintf(err, errlen, "broker unreachable, retrying in %.1f s",
                 s->retry_at - pano_now());
        return false;
    }
    return pano_spool_replay(s->spool, replay_one, s, lock_wait, err, errlen) >= 0;
}

static int spool_event(pano_sink *s, const char *key, const char *id, const char *json,
                       size_t len, const char *why, char *err, size_t errlen)
{
    char perr[512];
    if (pano_spool_put(s->spool, key, id, json, len, perr, sizeof perr) < 0) {
        snprintf(err, errlen, "%s; and %s", why, perr);
        s->stats.failed++;
        return -1;
    }
    if (!s->spooled || s->stats.spooled % 1000 == 0)
        pano_warn("event(s) kept in spool %s for later delivery (%s)",
                  pano_spool_path(s->spool), why);
    s->spooled = true;
    s->stats.spooled++;
    return 0;
}

static int write_payload(pano_sink *s, const pano_json *event, char *err, size_t errlen)
{
    pano_event_payload_block(&s->lines, event);
    return line_added(s, err, errlen);
}

static bool filtered_out(const pano_sink *s, const char *name)
{
    if (pano_filter_pass(s->filter, name))
        return false;
    /* not an error, not spooled */
    pano_debug("event %s not sent (pano.events, pano.<publisher>.enabled)", name);
    return true;
}

int pano_sink_send_raw(pano_sink *s, const char *routing_key, const char *event_id,
                       const char *json, size_t len, char *err, size_t errlen)
{
    if (filtered_out(s, routing_key))
        return 0;
    if (s->format == PANO_SINK_PAYLOAD) {
        char why[256];
        pano_json *event = pano_json_parse(json, len, 0, why, sizeof why);
        if (!event) {
            snprintf(err, errlen, "%s is not valid JSON: %s", routing_key, why);
            s->stats.failed++;
            return -1;
        }
        int rc = write_payload(s, event, err, errlen);
        pano_json_free(event);
        return rc;
    }
    if (s->out) {
        pano_buf_append(&s->lines, json, len);
        if (!file_is_copy(s))
            return line_added(s, err, errlen);
        /* The copy beside the broker or store: a failure to write it is its own. */
        char werr[512];
        if (line_added(s, werr, sizeof werr) < 0)
            pano_error("event %s not written (%s); sending it still", routing_key, werr);
    }
    if (s->store)
        return store_event(s, routing_key, json, len, err, errlen);
    if (!s->spool) {
        int rc = publish(s, routing_key, event_id, json, len, err, errlen);
        if (rc == 0)
            s->stats.sent++;
        else
            s->stats.failed++;
        return rc == 0 ? 0 : -1;
    }
    char why[512];
    /* Older events first: whatever waits in the spool goes before this one. */
    if (!drain_spool(s, 0, why, sizeof why))
        return spool_event(s, routing_key, event_id, json, len, why, err, errlen);
    if (pano_now() < s->retry_at)
        return spool_event(s, routing_key, event_id, json, len, "broker unreachable", err,
                           errlen);
    int rc = publish(s, routing_key, event_id, json, len, why, sizeof why);
    if (rc == 0) {
        s->stats.sent++;
        return 0;
    }
    if (rc > 0) { /* the broker answered: in the spool it would block it forever */
        char not_kept[512];
        if (pano_spool_reject(s->spool, routing_key, event_id, json, len, why, not_kept,
                              sizeof not_kept) == 0) {
            snprintf(err, errlen, "%s; kept in %s/" PANO_SPOOL_REJECTED_DIR, why,
                     pano_spool_path(s->spool));
            s->stats.rejected++;
        } else {
            snprintf(err, errlen, "%s; and %s", why, not_kept);
            s->stats.failed++;
        }
        return -1;
    }
    return spool_event(s, routing_key, event_id, json, len, why, err, errlen);
}

int pano_sink_flush_spool(pano_sink *s, double lock_wait, char *err, size_t errlen)
{
    if (!s->spool) {
        snprintf(err, errlen, "no spool (no broker URL, or pano.spool.enabled is false)");
        return -1;
    }
    s->retry_at = 0; /* an explicit request: try now */
    uint64_t before = s->stats.replayed;
    if (!drain_spool(s, lock_wait, err, errlen))
        return -1;
    return (int)(s->stats.replayed - before);
}

pano_sink_stats pano_sink_get_stats(const pano_sink *s)
{
    pano_sink_stats st = s->stats;
    if (s->spool)
        st.dropped = pano_spool_dropped(s->spool);
    return st;
}

int pano_sink_send(pano_sink *s, const pano_json *event, char *err, size_t errlen)
{
    const char *name = pano_json_get_str(event, "event");
    if (!name) {
        snprintf(err, errlen, "event has no name");
        return -1;
    }
    if (s->format == PANO_SINK_PAYLOAD)
        return filtered_out(s, name) ? 0 : write_payload(s, event, err, errlen);
    if (!file_is_copy(s)) { /* straight into the line buffer */
        if (filtered_out(s, name))
            return 0;
        pano_json_serialize_to(&s->lines, event);
        return line_added(s, err, errlen);
    }
    size_t len;
    char *json = pano_json_serialize(event, &len);
    int rc = pano_sink_send_raw(s, name, pano_json_get_str(event, "event_id"), json, len,
                                err, errlen);
    free(json);
    return rc;
}

void pano_sink_close(pano_sink *s)
{
    if (!s)
        return;
    pano_filter_free(s->filter);
    char err[512];
    if (s->store)
        store_commit(s, err, sizeof err); /* a failure is logged */
    if (s->out)
        write_lines(s, true, err, sizeof err); /* what failed is logged */
    pano_buf_free(&s->lines);
    if (s->spool && s->spooled) {
        /* A last chance for what this process left in the spool; what stays
         * there goes with the next publisher on this node, or with
         * pano-emit --flush-spool. */
        s->retry_at = 0;
        if (!drain_spool(s, 2.0, err, sizeof err))
            pano_warn("undelivered events stay in spool %s (%s)", pano_spool_path(s->spool),
                      err);
    }
    pano_spool_close(s->spool);
    pano_store_close(s->store);
    pano_amqp_close(s->amqp);
    if (s->has_url)
        pano_amqp_url_free(&s->url);
    if (s->password) {
        memset(s->password, 0, strlen(s->password));
        free(s->password);
    }
    if (s->close_out && s->out)
        fclose(s->out);
    free(s);
}
