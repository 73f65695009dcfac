/*
 * intake.c - pano-bridge's RabbitMQ side (intake.h): the connection and its
 * topology (exchange, queue of pano.bridge.queue_type, dead-letter exchange
 * and queue, bindings), deliveries read one at a time, the acks of what
 * Kafka confirmed and the nacks of what goes back.
 */
#include "intake.h"

#include "log.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static amqp_connection_state_t connection(bridge *b) { return pano_amqp_connection(b->amqp); }

int intake_fd(bridge *b) { return amqp_get_sockfd(connection(b)); }

/* ---- acknowledgements -------------------------------------------------- */

void intake_send_acks(bridge *b, double now, bool force)
{
    if (!b->amqp || b->reconnect_needed)
        return;
    if (!pano_policy_ack_due(force, b->confirmed_since_ack, b->ack_batch, now - b->last_ack))
        return;
    b->confirmed_since_ack = 0;
    b->last_ack = now;
    uint64_t count;
    uint64_t upto = pano_tags_take_ack(&b->tags, now, &count);
    if (upto) {
        int rc = amqp_basic_ack(connection(b), CHANNEL, upto, 1);
        if (rc != AMQP_STATUS_OK) {
            pano_warn("ack failed: %s", amqp_error_string2(rc));
            b->reconnect_needed = true; /* RabbitMQ redelivers them */
            return;
        }
        b->m.acked += count;
    }
    /* A message stuck at the head: ack the finished ones behind it alone. */
    if (pano_policy_single_acks_due(b->tags.done, pano_tags_pending(&b->tags),
                                    now - b->tags.head_since)) {
        uint64_t single[256];
        size_t n = pano_tags_take_single(&b->tags, single, 256);
        for (size_t i = 0; i < n; i++) {
            int rc = amqp_basic_ack(connection(b), CHANNEL, single[i], 0);
            if (rc != AMQP_STATUS_OK) {
                pano_warn("ack failed: %s", amqp_error_string2(rc));
                b->reconnect_needed = true;
                return;
            }
        }
        b->m.acked += n;
    }
}

bool intake_reject(bridge *b, uint64_t tag)
{
    return amqp_basic_nack(connection(b), CHANNEL, tag, 0, 0) == AMQP_STATUS_OK;
}

bool intake_hand_back(bridge *b, const uint64_t *tags, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (amqp_basic_nack(connection(b), CHANNEL, tags[i], 0, 1) != AMQP_STATUS_OK) {
            b->reconnect_needed = true;
            return false;
        }
    return true;
}

/* ---- AMQP -------------------------------------------------------------- */

static bool is_precondition_failed(amqp_rpc_reply_t r)
{
    return r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
           r.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
           ((amqp_channel_close_t *)r.reply.decoded)->reply_code == AMQP_PRECONDITION_FAILED;
}

/* After the broker closed the channel: confirm, and open it again. */
static int reopen_channel(bridge *b)
{
    amqp_channel_close_ok_t ok = {0};
    if (amqp_send_method(connection(b), CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) != AMQP_STATUS_OK)
        return -1;
    amqp_channel_open(connection(b), CHANNEL);
    return amqp_get_rpc_reply(connection(b)).reply_type == AMQP_RESPONSE_NORMAL ? 0 : -1;
}

/* Log a failed AMQP call as "what: why"; -1 when it failed, else 0. */
static int rpc_failed(bridge *b, amqp_rpc_reply_t r, const char *what)
{
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    pano_error("%s: %s", what, why);
    return -1;
}

/* Declare something; if it exists with other settings, say so and use it
 * as it is (a passive declare). Returns 1 if it was declared as asked, 0 if
 * it exists with other settings, -1 on failure. */
static int declare_or_accept(bridge *b, const char *what, void (*declare)(bridge *, bool, const void *),
                             const void *arg)
{
    declare(b, false, arg);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(connection(b));
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 1;
    if (!is_precondition_failed(r))
        return rpc_failed(b, r, what);
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    pano_warn("%s: it exists with other settings (%s); using it as it is", what, why);
    if (reopen_channel(b) < 0)
        return rpc_failed(b, amqp_get_rpc_reply(connection(b)), "reopening the channel");
    declare(b, true, arg);
    return rpc_failed(b, amqp_get_rpc_reply(connection(b)), what) < 0 ? -1 : 0;
}

typedef struct {
    const char *name, *type;
} exchange_spec;

static void declare_exchange(bridge *b, bool passive, const void *arg)
{
    const exchange_spec *e = arg;
    amqp_exchange_declare(connection(b), CHANNEL, amqp_cstring_bytes(e->name),
                          amqp_cstring_bytes(e->type), passive, 1, 0, 0, amqp_empty_table);
}

/* Declare a durable queue of the configured type, with a dead-letter
 * exchange when dlx is not empty. */
static void declare_typed_queue(bridge *b, const char *name, bool passive, const char *dlx)
{
    amqp_table_entry_t entries[2] = {
        {amqp_cstring_bytes("x-queue-type"),
         {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(b->queue_type)}}},
        {amqp_cstring_bytes("x-dead-letter-exchange"),
         {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(dlx)}}},
    };
    /* A classic queue is declared without x-queue-type, so an existing one
     * declared without it (by hand, Panorama's way) is accepted as it is. */
    bool typed = strcmp(b->queue_type, "classic") != 0;
    amqp_table_t args = {(typed ? 1 : 0) + (*dlx ? 1 : 0), typed ? entries : entries + 1};
    amqp_queue_declare(connection(b), CHANNEL, amqp_cstring_bytes(name), passive, 1, 0, 0,
                       passive || args.num_entries == 0 ? amqp_empty_table : args);
}

static void declare_queue(bridge *b, bool passive, const void *arg)
{
    declare_typed_queue(b, b->queue, passive, arg);
}

/* Declare (or with pano.bridge.declare=false, check) the topology. */
static int setup_topology(bridge *b)
{
    const char *dlx = pano_config_str(b->cfg, "pano.bridge.dead_letter_exchange");
    if (!dlx)
        dlx = "";
    char what[600];
    b->dlx_known = false;
    if (!pano_config_bool(b->cfg, "pano.bridge.declare")) {
        declare_queue(b, true, dlx);
        snprintf(what, sizeof what, "checking that queue '%s' exists", b->queue);
        return rpc_failed(b, amqp_get_rpc_reply(connection(b)), what);
    }
    exchange_spec events = {b->url.exchange, "topic"};
    snprintf(what, sizeof what, "declaring exchange '%s' (durable topic)", b->url.exchange);
    if (declare_or_accept(b, what, declare_exchange, &events) < 0)
        return -1;
    if (*dlx) {
        exchange_spec dead = {dlx, "fanout"};
        snprintf(what, sizeof what, "declaring dead-letter exchange '%s'", dlx);
        if (declare_or_accept(b, what, declare_exchange, &dead) < 0)
            return -1;
        /* A queue behind the dead-letter exchange, so what is rejected to it
         * is kept, not dropped as unroutable. */
        char dead_queue[300];
        snprintf(dead_queue, sizeof dead_queue, "%s.dead", b->queue);
        declare_typed_queue(b, dead_queue, false, "");
        snprintf(what, sizeof what, "declaring dead-letter queue '%s'", dead_queue);
        if (rpc_failed(b, amqp_get_rpc_reply(connection(b)), what) < 0)
            return -1;
        amqp_queue_bind(connection(b), CHANNEL, amqp_cstring_bytes(dead_queue),
                        amqp_cstring_bytes(dlx), amqp_cstring_bytes(""), amqp_empty_table);
        snprintf(what, sizeof what, "binding '%s' to '%s'", dead_queue, dlx);
        if (rpc_failed(b, amqp_get_rpc_reply(connection(b)), what) < 0)
            return -1;
    }
    snprintf(what, sizeof what, "declaring queue '%s'", b->queue);
    int rc = declare_or_accept(b, what, declare_queue, dlx);
    if (rc < 0)
        return -1;
    b->dlx_known = rc == 1 && *dlx;
    if (rc == 0)
        pano_warn("queue '%s' has no dead-letter exchange of the bridge's: a message Kafka "
                  "refuses even as a dead letter stays in the queue",
                  b->queue);
    char *keys = pano_strdup(pano_config_str(b->cfg, "pano.bridge.bindings")), *save;
    for (char *k = strtok_r(keys, ", ", &save); k; k = strtok_r(NULL, ", ", &save)) {
        amqp_queue_bind(connection(b), CHANNEL, amqp_cstring_bytes(b->queue),
                        amqp_cstring_bytes(b->url.exchange), amqp_cstring_bytes(k),
                        amqp_empty_table);
        snprintf(what, sizeof what, "binding '%s' to '%s' with key '%s'", b->queue,
                 b->url.exchange, k);
        if (rpc_failed(b, amqp_get_rpc_reply(connection(b)), what) < 0) {
            free(keys);
            return -1;
        }
    }
    free(keys);
    return 0;
}

static int start_consuming(bridge *b)
{
    amqp_basic_qos(connection(b), CHANNEL, 0, (uint16_t)b->prefetch, 0);
    if (rpc_failed(b, amqp_get_rpc_reply(connection(b)), "setting the prefetch count") < 0)
        return -1;
    amqp_basic_consume_ok_t *ok = amqp_basic_consume(
        connection(b), CHANNEL, amqp_cstring_bytes(b->queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    char what[300];
    snprintf(what, sizeof what, "consuming from '%s'", b->queue);
    if (rpc_failed(b, amqp_get_rpc_reply(connection(b)), what) < 0 || !ok)
        return -1;
    snprintf(b->consumer_tag, sizeof b->consumer_tag, "%.*s", (int)ok->consumer_tag.len,
             (const char *)ok->consumer_tag.bytes);
    b->consuming = true;
    return 0;
}

/* Close the connection: RabbitMQ requeues every unacked message. A clean
 * close when the connection still works, else just drop it. */
void intake_disconnect(bridge *b, bool clean)
{
    if (!b->amqp)
        return;
    if (!clean)
        pano_amqp_mark_broken(b->amqp);
    pano_amqp_close(b->amqp);
    b->amqp = NULL;
    b->consuming = false;
    b->reconnect_needed = false;
    b->generation++;
    pano_tags_reset(&b->tags, pano_monotonic());
    b->m.amqp_disconnects++;
    b->reconnect_at = pano_monotonic() + b->backoff;
}

bool intake_connect(bridge *b, bool consume)
{
    char err[512];
    b->amqp = pano_amqp_connect(&b->amqp_options, err, sizeof err);
    if (!b->amqp) {
        if (b->connect_failures++ < 3 || b->connect_failures % 10 == 0)
            pano_warn("%s (retrying in %.0f s)", err, b->backoff);
        b->reconnect_at = pano_monotonic() + b->backoff;
        b->backoff = pano_policy_backoff(b->backoff, 10);
        return false;
    }
    if (setup_topology(b) < 0 || (consume && start_consuming(b) < 0)) {
        pano_amqp_mark_broken(b->amqp);
        pano_amqp_close(b->amqp);
        b->amqp = NULL;
        b->reconnect_at = pano_monotonic() + b->backoff;
        b->backoff = pano_policy_backoff(b->backoff, 10);
        return false;
    }
    b->generation++;
    if (consume)
        pano_tags_reset(&b->tags, pano_monotonic());
    b->last_progress = pano_monotonic(); /* the stall clock starts now */
    b->connect_failures = 0;
    b->backoff = 1;
    b->m.amqp_connections++;
    char shown[512];
    pano_url_redact(pano_config_str(b->cfg, "pano.amqp.url"), shown, sizeof shown);
    if (consume)
        pano_info("consuming '%s' from %s (prefetch %d)", b->queue, shown, b->prefetch);
    return true;
}

/* A method frame other than a delivery. Returns -1 when the channel or
 * connection is gone. */
static int handle_frame(bridge *b)
{
    amqp_frame_t frame;
    struct timeval zero = {0, 0};
    int rc = amqp_simple_wait_frame_noblock(connection(b), &frame, &zero);
    if (rc == AMQP_STATUS_TIMEOUT)
        return 0;
    if (rc != AMQP_STATUS_OK) {
        pano_warn("AMQP connection lost: %s", amqp_error_string2(rc));
        return -1;
    }
    if (frame.frame_type != AMQP_FRAME_METHOD)
        return 0;
    switch (frame.payload.method.id) {
    case AMQP_BASIC_CANCEL_METHOD:
        pano_error("RabbitMQ cancelled the consumer of '%s' (was the queue deleted?); "
                   "reconnecting",
                   b->queue);
        return -1;
    case AMQP_BASIC_CANCEL_OK_METHOD:
        b->consuming = false;
        return 0;
    case AMQP_CHANNEL_CLOSE_METHOD: {
        amqp_channel_close_t *m = frame.payload.method.decoded;
        pano_error("RabbitMQ closed the channel: %u %.*s", m->reply_code,
                   (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        return -1;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
        amqp_connection_close_t *m = frame.payload.method.decoded;
        pano_error("RabbitMQ closed the connection: %u %.*s", m->reply_code,
                   (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        return -1;
    }
    default:
        return 0; /* connection.blocked and the like */
    }
}

intake_event intake_next(bridge *b, amqp_envelope_t *env)
{
    amqp_connection_state_t c = connection(b);
    struct timeval zero = {0, 0};
    amqp_maybe_release_buffers(c);
    amqp_rpc_reply_t r = amqp_consume_message(c, env, &zero, 0);
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return INTAKE_DELIVERY;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT)
        return INTAKE_IDLE;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_UNEXPECTED_STATE)
        return handle_frame(b) < 0 ? INTAKE_LOST : INTAKE_FRAME;
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    pano_warn("AMQP connection lost: %s", why);
    return INTAKE_LOST;
}

int intake_cancel(bridge *b)
{
    amqp_basic_cancel(connection(b), CHANNEL, amqp_cstring_bytes(b->consumer_tag));
    b->consuming = false;
    return rpc_failed(b, amqp_get_rpc_reply(connection(b)), "cancelling the consumer");
}

bool intake_buffered(bridge *b)
{
    return b->amqp && (amqp_data_in_buffer(connection(b)) || amqp_frames_enqueued(connection(b)));
}
