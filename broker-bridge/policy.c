#include "policy.h"

#include "event.h"

#include <string.h>

bool pano_policy_may_log(unsigned *counter) { return (*counter)++ < LOG_LIMIT; }

int pano_policy_topic(const char *family)
{
    for (int i = 0; i < PANO_N_FAMILIES; i++)
        if (pano_event_families[i] == family || strcmp(pano_event_families[i], family) == 0)
            return i;
    return PANO_N_FAMILIES - 1;
}

double pano_policy_backoff(double last, double cap) { return last * 2 > cap ? cap : last * 2; }

pano_produce_action pano_policy_produce(rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
        return PANO_PRODUCE_SENT;
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
        return PANO_PRODUCE_WAIT;
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        return PANO_PRODUCE_REFUSED;
    case RD_KAFKA_RESP_ERR__FATAL:
        return PANO_PRODUCE_FATAL;
    default:
        return PANO_PRODUCE_RETRY;
    }
}

/* Errors Kafka will not change its mind about. */
static bool is_permanent(rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT:
        return true;
    default:
        return false;
    }
}

pano_report_action pano_policy_report(rd_kafka_resp_err_t err, bool persisted, bool ours)
{
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR && persisted)
        return PANO_REPORT_PERSISTED;
    if (err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        return PANO_REPORT_PURGED;
    if (err == RD_KAFKA_RESP_ERR__FATAL)
        return PANO_REPORT_FATAL;
    if (!ours)
        return PANO_REPORT_STALE;
    return is_permanent(err) ? PANO_REPORT_REFUSED : PANO_REPORT_RETRY;
}

bool pano_policy_ack_due(bool force, unsigned confirmed_since_ack, unsigned ack_batch,
                         double since_last_ack)
{
    return force || confirmed_since_ack >= ack_batch || since_last_ack >= ACK_INTERVAL;
}

bool pano_policy_single_acks_due(uint64_t done, uint64_t pending, double head_waiting)
{
    return done > 0 && pending > 0 && head_waiting > SINGLE_ACK_AFTER;
}

pano_stall_decision pano_policy_stall(bool stalled, uint64_t pending, double quiet,
                                      double hold_timeout, bool connected, bool usable)
{
    pano_stall_decision d = {.stalled = stalled, .change = PANO_STALL_SAME};
    if (pending == 0) {
        d.idle = true;
        d.stalled = false;
        d.change = stalled ? PANO_STALL_ENDS : PANO_STALL_SAME;
        return d;
    }
    if (!stalled && quiet > STALL_AFTER) {
        d.stalled = true;
        d.change = PANO_STALL_BEGINS;
    } else if (stalled && quiet < STALL_AFTER) {
        d.stalled = false;
        d.change = PANO_STALL_ENDS;
    }
    if (d.stalled && quiet > hold_timeout && connected) {
        d.hand_back = PANO_HAND_BACK_ALL;
        d.stalled = false;
    } else if (usable)
        d.hand_back = PANO_HAND_BACK_EXPIRED;
    return d;
}
