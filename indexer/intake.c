/*
 * intake.c - pano-indexer's Kafka side: the consumer and its rebalances,
 * polling and pausing, messages into batches (with their bulk or dead-letter
 * documents), storing offsets (indexer.h).
 */
#include "indexer.h"

#include "json.h"
#include "kafka.h"
#include "log.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- batches ------------------------------------------------------------ */

/* The workflow and event id of a message the bridge refused, when it still
 * says them: they make its dead letter findable with the workflow. */
static void bridge_record_ids(const rd_kafka_message_t *m, pano_bulk_doc *doc)
{
    char why[64];
    pano_json *ev = pano_json_parse(m->payload ? m->payload : "", m->len, PANO_JSON_DEFAULT_DEPTH,
                                    why, sizeof why);
    if (ev && ev->type == PANO_JSON_OBJECT) {
        if (!pano_wf_uuid_normalize(pano_json_get_str(ev, "wf_uuid"), doc->wf_uuid))
            doc->wf_uuid[0] = '\0';
        const char *id = pano_json_get_str(ev, "event_id");
        if (id && strlen(id) < sizeof doc->id && strlen(id) == pano_json_get(ev, "event_id")->u.string.len)
            snprintf(doc->id, sizeof doc->id, "%s", id);
    }
    pano_json_free(ev);
}

void intake_add(indexer *ix, batch *b, rd_kafka_message_t *msg)
{
    pano_arena_reset(&ix->parse_arena); /* the message before is done with */
    batch_item *it = batch_add(b, msg, pano_monotonic());
    double now = pano_now(); /* its arrival, for all that follows */
    ix->n.consumed++;
    if (strcmp(rd_kafka_topic_name(msg->rkt), ix->dead_letter_topic) == 0) {
        char reason[sizeof it->reason];
        snprintf(it->reason, sizeof it->reason, "%s",
                 *batch_header(msg, "reason", reason, sizeof reason) ? reason
                                                                     : "refused by pano-bridge");
        bridge_record_ids(msg, &it->doc);
        ix->n.bridge_dead++;
        batch_make_dead_letter(it, &ix->dead_letters, now);
        return;
    }
    pano_bulk_doc_status st =
        pano_bulk_doc_prepare(msg->payload ? msg->payload : "", msg->len, &ix->layout, now,
                              &it->doc, it->reason, sizeof it->reason);
    if (st == PANO_BULK_DOC_EXPIRED)
        ix->n.expired++;
    if (st != PANO_BULK_DOC_OK)
        batch_make_dead_letter(it, &ix->dead_letters, now);
    else if (it->doc.event) {
        /* Run events (deltas.h) come through the kickstart topic. */
        if (ix->deltas && strcmp(rd_kafka_topic_name(msg->rkt), ix->kickstart_topic) == 0)
            it->run = pano_run_event_read(it->doc.event, it->doc.wf_uuid, msg->partition,
                                       msg->offset);
        if (ix->summarize)
            it->summary = summaries_note(&ix->summary_layout, &it->doc, msg->offset, now);
        pano_bulk_doc_drop_event(&it->doc);
    }
}

static void drop_message_list(rd_kafka_message_t **msgs, size_t *n,
                              const rd_kafka_topic_partition_list_t *parts, uint64_t *dropped)
{
    size_t keep = 0;
    for (size_t i = 0; i < *n; i++) {
        rd_kafka_message_t *m = msgs[i];
        if (!parts || rd_kafka_topic_partition_list_find(parts, rd_kafka_topic_name(m->rkt),
                                                         m->partition)) {
            rd_kafka_message_destroy(m);
            ++*dropped;
        } else
            msgs[keep++] = m;
    }
    *n = keep;
}

/* ---- where partitions go on ------------------------------------------------ */

static void clear_list(rd_kafka_topic_partition_list_t *l)
{
    while (l->cnt)
        rd_kafka_topic_partition_list_del_by_idx(l, l->cnt - 1);
}

/* Forget what was received from the partitions in parts (NULL: all), and
 * that they wait to be placed: taken away, or given anew (their messages
 * start at the committed offset then). */
static void forget_partitions(indexer *ix, const rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *lists[] = {ix->received, ix->unplaced};
    for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) {
        rd_kafka_topic_partition_list_t *l = lists[k];
        if (!parts) {
            clear_list(l);
            continue;
        }
        for (int i = 0; i < parts->cnt; i++)
            rd_kafka_topic_partition_list_del(l, parts->elems[i].topic, parts->elems[i].partition);
    }
    ix->received_last = 0;
}

/* Note that m was received: its partition goes on after it. Messages come
 * in runs of one partition, so the last one noted is looked at first. */
static void note_received(indexer *ix, const rd_kafka_message_t *m)
{
    rd_kafka_topic_partition_list_t *r = ix->received;
    const char *topic = rd_kafka_topic_name(m->rkt);
    rd_kafka_topic_partition_t *p = NULL;
    if (ix->received_last < r->cnt) {
        p = &r->elems[ix->received_last];
        if (p->partition != m->partition || strcmp(p->topic, topic) != 0)
            p = NULL;
    }
    if (!p) {
        p = rd_kafka_topic_partition_list_find(r, topic, m->partition);
        if (!p)
            p = rd_kafka_topic_partition_list_add(r, topic, m->partition);
        ix->received_last = (int)(p - r->elems);
    }
    p->offset = m->offset + 1;
}

static void add_unplaced(indexer *ix, const rd_kafka_topic_partition_t *p)
{
    if (!rd_kafka_topic_partition_list_find(ix->unplaced, p->topic, p->partition))
        rd_kafka_topic_partition_list_add(ix->unplaced, p->topic, p->partition);
}

/* While a batch's bulk requests are in flight, or a thread gathers its
 * summaries, it is left alone, and its messages of revoked partitions are
 * dropped once the answers are in or the thread is done (before any offset
 * is stored). */
void intake_drop_partitions(indexer *ix, const rd_kafka_topic_partition_list_t *parts)
{
    for (int k = 0; k < 2; k++) {
        batch *b = &ix->batches[k];
        if (b->in_flight || b->gathering)
            batch_defer(b, parts);
        else
            ix->n.dropped_revoked += batch_drop(b, parts);
    }
    drop_message_list(ix->pending, &ix->npending, parts, &ix->n.dropped_revoked);
    forget_partitions(ix, parts);
    /* What the indexer kept of the runs of those partitions: their next
     * owner has it in the store. */
    for (int i = 0; ix->deltas && parts && i < parts->cnt; i++)
        if (strcmp(parts->elems[i].topic, ix->kickstart_topic) == 0)
            deltas_forget_partition(ix->deltas, parts->elems[i].partition);
}

static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    indexer *ix = opaque;
    /* The protocol in use; NULL while the consumer is not in a group (on
     * close, say): then the one configured. */
    const char *protocol = rd_kafka_rebalance_protocol(rk);
    bool coop = protocol ? strcmp(protocol, "COOPERATIVE") == 0 : ix->cooperative;
    ix->n.rebalances++;
    rd_kafka_error_t *e = NULL;
    rd_kafka_resp_err_t r = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        pano_info("assigned %d partition(s)", parts->cnt);
        ix->was_assigned = true;
        forget_partitions(ix, parts); /* they start at their committed offsets */
        if (coop)
            e = rd_kafka_incremental_assign(rk, parts);
        else
            r = rd_kafka_assign(rk, parts);
        if (ix->paused && !e && !r)
            rd_kafka_pause_partitions(rk, parts);
    } else {
        pano_info("%s %d partition(s)",
                  err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS ? "revoked" : "lost", parts->cnt);
        /* What was settled is stored: commit it while the partitions are
         * still ours. The rest of the batch in hand is dropped. */
        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
            rd_kafka_resp_err_t c = rd_kafka_commit(rk, NULL, 0);
            if (c && c != RD_KAFKA_RESP_ERR__NO_OFFSET)
                pano_warn("commit on revocation: %s", rd_kafka_err2str(c));
        }
        intake_drop_partitions(ix, parts);
        if (coop)
            e = rd_kafka_incremental_unassign(rk, parts);
        else
            r = rd_kafka_assign(rk, NULL);
    }
    if (e) {
        pano_error("rebalance: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    } else if (r)
        pano_error("rebalance: %s", rd_kafka_err2str(r));
}

/* ---- pausing and resuming -------------------------------------------------- */

/* Resume the partitions in parts, each sought where it goes on.
 *
 * librdkafka resumes a partition where the application stood at the pause,
 * but a pause or resume racing another operation on the partition can lose
 * that (librdkafka #2190), and after a seek it does not know (a seek forgets
 * the position; its fetcher may then be past messages it fetched and dropped
 * at the next pause). Its maintainers' advice is a seek after the resume.
 * The indexer seeks each partition to the message after the last one it
 * received from it; one it received nothing from since it was assigned, to
 * its committed offset, or to its start when it has none (the reset policy,
 * earliest), where it would begin anyway. A partition whose committed offset
 * cannot be read is not resumed, and one that cannot be sought is paused
 * again (ix->unplaced): resumed where librdkafka stood, it could skip
 * messages. Logs where they went. */
static void resume_placed(indexer *ix, const rd_kafka_topic_partition_list_t *parts)
{
    int at_received = 0, at_committed = 0, at_start = 0, failed = 0;
    rd_kafka_topic_partition_list_t *place = rd_kafka_topic_partition_list_new(parts->cnt);
    rd_kafka_topic_partition_list_t *unread = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *p = &parts->elems[i];
        const rd_kafka_topic_partition_t *r =
            rd_kafka_topic_partition_list_find(ix->received, p->topic, p->partition);
        if (r) {
            rd_kafka_topic_partition_list_add(place, p->topic, p->partition)->offset = r->offset;
            at_received++;
        } else
            rd_kafka_topic_partition_list_add(unread, p->topic, p->partition);
    }
    rd_kafka_resp_err_t e =
        unread->cnt ? rd_kafka_committed(ix->consumer, unread, 5000) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (e)
        pano_warn("cannot read the committed offsets of %d partition(s): %s", unread->cnt,
                  rd_kafka_err2str(e));
    for (int i = 0; i < unread->cnt; i++) {
        const rd_kafka_topic_partition_t *u = &unread->elems[i];
        if (e || u->err) {
            add_unplaced(ix, u);
            continue;
        }
        rd_kafka_topic_partition_list_add(place, u->topic, u->partition)->offset =
            u->offset >= 0 ? u->offset : RD_KAFKA_OFFSET_BEGINNING;
        ++*(u->offset >= 0 ? &at_committed : &at_start);
    }
    rd_kafka_topic_partition_list_destroy(unread);
    rd_kafka_resp_err_t r = place->cnt ? rd_kafka_resume_partitions(ix->consumer, place)
                                       : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_error_t *error = place->cnt && !r ? rd_kafka_seek_partitions(ix->consumer, place, 10000)
                                               : NULL;
    /* One not sought is paused again at once (nothing was polled since the
     * resume, so nothing of where librdkafka stood reached the indexer) and
     * placed again with the others. */
    rd_kafka_topic_partition_list_t *again = rd_kafka_topic_partition_list_new(place->cnt);
    if (r || error)
        pano_warn("cannot %s the partitions: %s", r ? "resume" : "seek",
                  r ? rd_kafka_err2str(r) : rd_kafka_error_string(error));
    for (int i = 0; i < place->cnt; i++) {
        const rd_kafka_topic_partition_t *p = &place->elems[i];
        if (!r && !error && !p->err)
            continue;
        if (p->err)
            pano_warn("cannot seek %s [%d] to offset %lld: %s", p->topic, (int)p->partition,
                      (long long)p->offset, rd_kafka_err2str(p->err));
        rd_kafka_topic_partition_list_add(again, p->topic, p->partition);
        add_unplaced(ix, p);
    }
    rd_kafka_resp_err_t pe = again->cnt ? rd_kafka_pause_partitions(ix->consumer, again)
                                        : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (pe)
        pano_warn("cannot pause the partitions not sought: %s", rd_kafka_err2str(pe));
    failed = again->cnt;
    rd_kafka_topic_partition_list_destroy(again);
    if (error)
        rd_kafka_error_destroy(error);
    rd_kafka_topic_partition_list_destroy(place);
    pano_info("partitions resumed: %d at the message after the last received, %d at their "
              "committed offset, %d at their start (%d not sought); %d left paused until "
              "they can be placed",
              at_received, at_committed, at_start, failed, ix->unplaced->cnt);
}

void intake_set_paused(indexer *ix, bool pause)
{
    if (ix->paused == pause)
        return;
    rd_kafka_topic_partition_list_t *parts = NULL;
    rd_kafka_resp_err_t e = rd_kafka_assignment(ix->consumer, &parts);
    if (!e) {
        if (pause) {
            e = rd_kafka_pause_partitions(ix->consumer, parts);
            clear_list(ix->unplaced); /* every partition is placed at the resume */
        } else
            resume_placed(ix, parts);
        rd_kafka_topic_partition_list_destroy(parts);
    }
    if (e)
        pano_warn("cannot %s the partitions: %s", pause ? "pause" : "resume", rd_kafka_err2str(e));
    ix->paused = pause;
    if (pause)
        pano_info("partitions paused until Elasticsearch takes documents again");
}

void intake_place_unplaced(indexer *ix)
{
    double now = pano_monotonic();
    if (ix->paused || ix->unplaced->cnt == 0 || now < ix->next_placing)
        return;
    ix->next_placing = now + 1;
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_copy(ix->unplaced);
    clear_list(ix->unplaced);
    resume_placed(ix, parts);
    rd_kafka_topic_partition_list_destroy(parts);
}

rd_kafka_message_t *intake_poll(indexer *ix, int timeout_ms)
{
    rd_kafka_message_t *msg = rd_kafka_consumer_poll(ix->consumer, timeout_ms);
    if (msg && msg->err == RD_KAFKA_RESP_ERR__FATAL) {
        /* the consumer is unusable: above all, another member with this
         * group.instance.id took our place (fenced) */
        char why[512];
        rd_kafka_resp_err_t e = rd_kafka_fatal_error(ix->consumer, why, sizeof why);
        pano_error("Kafka: %s%s", why,
                   e == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID
                       ? " (another pano-indexer of this group uses the same "
                         "pano.indexer.instance_id: give each its own)"
                       : "");
        ix->fatal = true;
    }
    if (msg && msg->err) {
        if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && msg->err != RD_KAFKA_RESP_ERR__FATAL)
            pano_warn("Kafka: %s", rd_kafka_message_errstr(msg));
        rd_kafka_message_destroy(msg);
        return NULL;
    }
    if (msg)
        note_received(ix, msg);
    return msg;
}

void intake_keep_pending(indexer *ix, rd_kafka_message_t *m)
{
    if (ix->npending == ix->cap_pending) {
        ix->cap_pending = ix->cap_pending ? ix->cap_pending * 2 : 64;
        ix->pending = pano_reallocarray(ix->pending, ix->cap_pending, sizeof *ix->pending);
    }
    ix->pending[ix->npending++] = m;
}

void intake_take_pending(indexer *ix, batch *b)
{
    size_t taken = 0;
    while (taken < ix->npending && !batch_full(b, &ix->limits))
        intake_add(ix, b, ix->pending[taken++]);
    if (taken) {
        memmove(ix->pending, ix->pending + taken, (ix->npending - taken) * sizeof *ix->pending);
        ix->npending -= taken;
    }
}

void intake_store_offsets(indexer *ix, rd_kafka_topic_partition_list_t *store)
{
    if (store->cnt == 0)
        return;
    rd_kafka_resp_err_t e = rd_kafka_offsets_store(ix->consumer, store);
    for (int i = 0; i < store->cnt; i++) {
        rd_kafka_resp_err_t pe = store->elems[i].err;
        if (pe)
            pano_warn("cannot store offset %lld of %s [%d]: %s (it will be replayed)",
                      (long long)store->elems[i].offset, store->elems[i].topic,
                      (int)store->elems[i].partition, rd_kafka_err2str(pe));
        else
            ix->n.offsets_stored++;
    }
    if (e && e != RD_KAFKA_RESP_ERR__INVALID_ARG)
        pano_warn("cannot store offsets: %s", rd_kafka_err2str(e));
}

/* ---- setup ---------------------------------------------------------------- */

rd_kafka_t *intake_create_consumer(indexer *ix, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = pano_kafka_conf_new(ix->cfg, err, errlen);
    if (!conf)
        return NULL;
    /* The indexer's own settings: offsets are stored only once
     * Elasticsearch settled everything before them. */
    const pano_kafka_property own[] = {
        {"group.id", pano_config_str(ix->cfg, "pano.indexer.group")},
        {"enable.auto.offset.store", "false"},
        {"enable.auto.commit", "true"},
    };
    /* Fast failover: a static member that comes back (within the session
     * timeout) takes its partitions back without a rebalance, and a
     * rebalance moves only the partitions that change hands. */
    char host[256] = "pano-indexer";
    const char *instance = pano_config_str(ix->cfg, "pano.indexer.instance_id");
    if (!instance && gethostname(host, sizeof host - 1) == 0)
        host[sizeof host - 1] = '\0';
    if (pano_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, errlen) < 0 ||
        pano_kafka_conf_set(conf, "partition.assignment.strategy", "cooperative-sticky", err,
                            errlen) < 0 ||
        pano_kafka_conf_set(conf, "group.instance.id", instance ? instance : host, err,
                            errlen) < 0 ||
        pano_kafka_conf_apply(conf, own, sizeof own / sizeof own[0], ix->cfg,
                              "pano.indexer.kafka_properties", err, errlen) < 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    char strategy[128] = "";
    size_t len = sizeof strategy;
    if (rd_kafka_conf_get(conf, "partition.assignment.strategy", strategy, &len) ==
        RD_KAFKA_CONF_OK)
        ix->cooperative = strstr(strategy, "cooperative") != NULL;
    rd_kafka_conf_set_rebalance_cb(conf, rebalance);
    rd_kafka_conf_set_opaque(conf, ix);
    char why[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    if (!rk) {
        snprintf(err, errlen, "cannot create the Kafka consumer: %s", why);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    ix->received = rd_kafka_topic_partition_list_new(32);
    ix->unplaced = rd_kafka_topic_partition_list_new(8);
    if (pano_kafka_ensure_topics(rk, ix->cfg, err, errlen) < 0) {
        rd_kafka_destroy(rk);
        return NULL;
    }
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(8);
    char name[256];
    for (size_t i = 0; pano_event_families[i]; i++) {
        pano_kafka_topic(ix->cfg, pano_event_families[i], name, sizeof name);
        rd_kafka_topic_partition_list_add(topics, name, RD_KAFKA_PARTITION_UA);
    }
    /* and what the bridge refused, to make it findable */
    rd_kafka_topic_partition_list_add(topics, ix->dead_letter_topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(err, errlen, "cannot subscribe: %s", rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return NULL;
    }
    return rk;
}

/* ---- closing -------------------------------------------------------------- */

/* How long a member that joined its group may wait for its first
 * assignment at shutdown (see below). */
#define FIRST_ASSIGNMENT_GRACE 5.0

/* librdkafka before 2.3.0 aborts (an assertion in the sticky assignor) when
 * a consumer with the cooperative-sticky assignor is destroyed after its
 * group answered its JoinGroup and before its first assignment: the
 * assignor's state is made by the first assignment and freed without a
 * check (librdkafka issue #4312, fixed in 2.3.0; Debian 12 has 2.0.2). The
 * protocol is known ("COOPERATIVE", not "NONE") once the JoinGroup was
 * answered. */
static bool close_would_abort(indexer *ix)
{
    if (!ix->cooperative || ix->was_assigned || rd_kafka_version() >= 0x020300ff)
        return false;
    const char *protocol = rd_kafka_rebalance_protocol(ix->consumer);
    return protocol && strcmp(protocol, "NONE") != 0;
}

void intake_close_consumer(indexer *ix)
{
    /* Caught between joining and the first assignment (usually the
     * milliseconds until the group's leader sends it): wait for it. What is
     * polled meanwhile is not indexed, so its offset is not stored and the
     * partition's next owner reads it again. */
    double deadline = pano_monotonic() + FIRST_ASSIGNMENT_GRACE;
    while (close_would_abort(ix) && pano_monotonic() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(ix->consumer, 100);
        if (m)
            rd_kafka_message_destroy(m);
    }
    if (close_would_abort(ix)) {
        /* It holds no partition and has stored no offset: nothing is lost
         * by leaving it to the exit; the group lets the member go after
         * its session timeout, as after a kill. */
        pano_warn("leaving the consumer group without closing: still waiting for a first "
                  "assignment after %.0f s, and librdkafka %s (before 2.3.0) cannot close a "
                  "consumer in that state (librdkafka issue #4312); nothing is lost",
                  FIRST_ASSIGNMENT_GRACE, rd_kafka_version_str());
        intake_drop_partitions(ix, NULL);
        return;
    }
    rd_kafka_resp_err_t e = rd_kafka_commit(ix->consumer, NULL, 0);
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
        pano_warn("final commit: %s", rd_kafka_err2str(e));
    e = rd_kafka_consumer_close(ix->consumer);
    if (e)
        pano_warn("closing the consumer: %s", rd_kafka_err2str(e));
    intake_drop_partitions(ix, NULL); /* anything the close delivered */
    rd_kafka_destroy(ix->consumer);
    ix->consumer = NULL;
}
