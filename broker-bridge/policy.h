/*
 * policy.h - pano-bridge's decisions, as pure functions of its state and
 * what happened: where an event goes, what becomes of a message librdkafka
 * would not take or Kafka did not persist, when acks are due, when Kafka
 * counts as stalled and when messages go back to RabbitMQ, how backoffs
 * grow, and how many lines of a kind are logged.
 *
 * Nothing here does I/O or touches the bridge's state: outlet.c and
 * intake.c ask, and the loop in bridge.c acts on the answers (bridge.h).
 */
#ifndef PANO_BRIDGE_POLICY_H
#define PANO_BRIDGE_POLICY_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#define STALL_AFTER 10.0     /* seconds without a confirmation: Kafka is stalled */
#define SINGLE_ACK_AFTER 1.0 /* a head stuck this long: ack the others one by one */
#define ACK_INTERVAL 0.02    /* at most this long between cumulative acks ... */
/* ... or an ack per ack_batch messages confirmed (a tenth of the prefetch
 * window, as RabbitMQ's guidance has it: every ack costs the broker work). */
#define LOG_LIMIT 20 /* lines of a kind per stats interval */

/* Whether to log one more line of a kind: true for the first LOG_LIMIT
 * calls since the counter was reset to 0. Counts every call. */
bool pano_policy_may_log(unsigned *counter);

/* The topic index of an event family: its place in pano_event_families,
 * the last ("other") for a name that is none of them. */
int pano_policy_topic(const char *family);

/* The next backoff: twice the last one, at most cap. */
double pano_policy_backoff(double last, double cap);

/* What rd_kafka_producev()'s result asks for. */
typedef enum {
    PANO_PRODUCE_SENT,    /* librdkafka took it */
    PANO_PRODUCE_WAIT,    /* its queue is full: try again very soon, quietly */
    PANO_PRODUCE_REFUSED, /* Kafka never takes it (too large) */
    PANO_PRODUCE_FATAL,   /* the producer is unusable: replace it */
    PANO_PRODUCE_RETRY,   /* say so, try again after the backoff */
} pano_produce_action;
pano_produce_action pano_policy_produce(rd_kafka_resp_err_t err);

/* What a delivery report asks for. ours: the message belongs to the current
 * channel and still waits for Kafka (only asked of failed reports). */
typedef enum {
    PANO_REPORT_PERSISTED, /* Kafka persisted it */
    PANO_REPORT_PURGED,    /* dropped on purpose with a producer: nothing */
    PANO_REPORT_FATAL,     /* the producer is unusable: replace it */
    PANO_REPORT_STALE,     /* a failure nobody waits for: nothing */
    PANO_REPORT_REFUSED,   /* Kafka refuses it for good */
    PANO_REPORT_RETRY,     /* produce it again after a backoff */
} pano_report_action;
pano_report_action pano_policy_report(rd_kafka_resp_err_t err, bool persisted, bool ours);

/* A cumulative ack is due: forced, ack_batch messages confirmed since the
 * last one, or ACK_INTERVAL seconds passed. */
bool pano_policy_ack_due(bool force, unsigned confirmed_since_ack, unsigned ack_batch,
                         double since_last_ack);
/* The finished messages behind a pending head are acked one by one: the
 * head has waited SINGLE_ACK_AFTER seconds. */
bool pano_policy_single_acks_due(uint64_t done, uint64_t pending, double head_waiting);

/* What to do about messages Kafka does not confirm. */
typedef enum {
    PANO_HAND_BACK_NONE,
    PANO_HAND_BACK_ALL,     /* close the channel: RabbitMQ requeues every unacked message */
    PANO_HAND_BACK_EXPIRED, /* nack (requeue) those pending for hold_timeout */
} pano_hand_back;

typedef enum { PANO_STALL_SAME, PANO_STALL_BEGINS, PANO_STALL_ENDS } pano_stall_change;

typedef struct {
    bool idle;                /* nothing waits for Kafka: restart the quiet clock */
    bool stalled;             /* Kafka counts as stalled after this check */
    pano_stall_change change; /* to report */
    pano_hand_back hand_back;
} pano_stall_decision;

/* Kafka's state after another look. stalled: as decided last time;
 * pending: messages waiting for Kafka; quiet: seconds since Kafka confirmed
 * something; connected: there is an AMQP connection; usable: and it can
 * take nacks. Kafka is stalled after STALL_AFTER quiet seconds with
 * messages waiting; when it stays so for hold_timeout, every message goes
 * back (and Kafka no longer counts as stalled); otherwise single messages
 * pending that long go back. */
pano_stall_decision pano_policy_stall(bool stalled, uint64_t pending, double quiet,
                                      double hold_timeout, bool connected, bool usable);

#endif
