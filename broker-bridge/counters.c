#include "counters.h"

#include "event.h"
#include "mem.h"

#include <inttypes.h>
#include <stdio.h>

/* ---- rendering --------------------------------------------------------- */

static void metric(pano_buf *out, const char *type, const char *name, const char *help,
                   uint64_t value)
{
    pano_buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", name, help, name, type,
                     name, value);
}

void pano_bridge_counters_render(const pano_bridge_counters *m, const char *const *families,
                        pano_buf *out)
{
    metric(out, "counter", "pano_bridge_messages_received_total",
           "AMQP messages received from RabbitMQ.", m->received);
    metric(out, "counter", "pano_bridge_received_bytes_total",
           "Bytes of AMQP message bodies received.", m->received_bytes);
    metric(out, "counter", "pano_bridge_messages_redelivered_total",
           "Messages RabbitMQ marked as redelivered.", m->redelivered);
    pano_buf_appendf(out, "# HELP pano_bridge_events_produced_total Events Kafka persisted, "
                          "by family.\n# TYPE pano_bridge_events_produced_total counter\n");
    for (size_t i = 0; i < PANO_N_FAMILIES && families[i]; i++)
        pano_buf_appendf(out, "pano_bridge_events_produced_total{family=\"%s\"} %" PRIu64 "\n",
                         families[i], m->produced[i]);
    metric(out, "counter", "pano_bridge_messages_dead_lettered_total",
           "Invalid messages Kafka persisted in the dead-letter topic.", m->dead_lettered);
    metric(out, "counter", "pano_bridge_messages_rejected_to_dlx_total",
           "Messages rejected to the queue's dead-letter exchange (Kafka refused even "
           "their dead-letter record).",
           m->rejected_to_dlx);
    metric(out, "counter", "pano_bridge_messages_acked_total",
           "Messages acknowledged to RabbitMQ.", m->acked);
    metric(out, "counter", "pano_bridge_kafka_delivery_errors_total",
           "Kafka delivery reports that did not say persisted.", m->delivery_errors);
    metric(out, "counter", "pano_bridge_produce_retries_total",
           "Messages produced again after a failure.", m->produce_retries);
    metric(out, "counter", "pano_bridge_amqp_connections_total",
           "Successful connections to RabbitMQ.", m->amqp_connections);
    metric(out, "counter", "pano_bridge_amqp_disconnects_total",
           "Lost or closed RabbitMQ connections.", m->amqp_disconnects);
    metric(out, "counter", "pano_bridge_producer_restarts_total",
           "Kafka producers replaced after a fatal error.", m->producer_restarts);
    metric(out, "counter", "pano_bridge_hold_timeouts_total",
           "Times unconfirmed messages were handed back to RabbitMQ because Kafka "
           "confirmed nothing for too long.",
           m->hold_timeouts);
    metric(out, "counter", "pano_bridge_duplicates_skipped_total",
           "Messages acknowledged without producing them: copies of an event whose "
           "Kafka delivery was confirmed (same event_id).",
           m->duplicates_skipped);
    metric(out, "gauge", "pano_bridge_messages_in_flight",
           "Messages received and not yet acknowledged.", m->in_flight);
    metric(out, "gauge", "pano_bridge_kafka_queue_messages",
           "Messages in librdkafka's queues, waiting for a delivery report.", m->kafka_queue);
    metric(out, "gauge", "pano_bridge_retry_queue_messages",
           "Messages waiting to be produced again.", m->retry_queue);
    metric(out, "gauge", "pano_bridge_dedup_window_ids",
           "Event ids of confirmed events remembered to skip copies of them.", m->dedup_ids);
    metric(out, "gauge", "pano_bridge_dedup_window_bytes",
           "Memory of the window of remembered event ids.", m->dedup_bytes);
    metric(out, "gauge", "pano_bridge_amqp_connected", "1 while connected to RabbitMQ.",
           m->amqp_connected);
    metric(out, "gauge", "pano_bridge_consuming", "1 while consuming the queue.", m->consuming);
    metric(out, "gauge", "pano_bridge_kafka_stalled",
           "1 while Kafka confirms nothing although messages wait.", m->kafka_stalled);
    pano_buf_appendf(out,
                     "# HELP pano_bridge_start_time_seconds Start time of the process, "
                     "seconds since the epoch.\n"
                     "# TYPE pano_bridge_start_time_seconds gauge\n"
                     "pano_bridge_start_time_seconds %.3f\n",
                     m->start_time);
}
