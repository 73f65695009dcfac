/* pano-bridge's decisions (broker-bridge/policy.h): routing, backoffs, what
 * librdkafka's results ask for, when acks are due, stalls and hand-backs. */
#include "event.h"
#include "policy.h"
#include "testutil.h"

START_TEST(may_log_counts_every_call)
{
    unsigned counter = 0;
    for (int i = 0; i < LOG_LIMIT; i++)
        ck_assert(pano_policy_may_log(&counter));
    ck_assert(!pano_policy_may_log(&counter));
    ck_assert(!pano_policy_may_log(&counter));
    ck_assert_uint_eq(counter, LOG_LIMIT + 2); /* the stats line reports the rest */
    counter = 0;
    ck_assert(pano_policy_may_log(&counter));
}
END_TEST

START_TEST(topic_of_each_family)
{
    for (int i = 0; i < PANO_N_FAMILIES; i++)
        ck_assert_int_eq(pano_policy_topic(pano_event_families[i]), i);
    /* by name, not only by pointer */
    char kickstart[] = "kickstart", stampede[] = "stampede";
    ck_assert_int_eq(pano_policy_topic(kickstart), 0);
    ck_assert_int_eq(pano_policy_topic(stampede), 3);
    ck_assert_int_eq(pano_policy_topic(pano_event_family("transfer.start")), 2);
    ck_assert_int_eq(pano_policy_topic("nothing-known"), PANO_N_FAMILIES - 1);
    ck_assert_str_eq(pano_event_families[PANO_N_FAMILIES - 1], "other");
}
END_TEST

START_TEST(backoff_doubles_up_to_the_cap)
{
    ck_assert_double_eq(pano_policy_backoff(1, 30), 2);
    ck_assert_double_eq(pano_policy_backoff(0.05, 30), 0.1);
    ck_assert_double_eq(pano_policy_backoff(15, 30), 30);
    ck_assert_double_eq(pano_policy_backoff(16, 30), 30);
    ck_assert_double_eq(pano_policy_backoff(30, 30), 30);
    ck_assert_double_eq(pano_policy_backoff(8, 10), 10);
    double b = 1;
    for (int i = 0; i < 10; i++)
        b = pano_policy_backoff(b, 10);
    ck_assert_double_eq(b, 10);
}
END_TEST

START_TEST(produce_results)
{
    ck_assert_int_eq(pano_policy_produce(RD_KAFKA_RESP_ERR_NO_ERROR), PANO_PRODUCE_SENT);
    ck_assert_int_eq(pano_policy_produce(RD_KAFKA_RESP_ERR__QUEUE_FULL), PANO_PRODUCE_WAIT);
    ck_assert_int_eq(pano_policy_produce(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE),
                     PANO_PRODUCE_REFUSED);
    ck_assert_int_eq(pano_policy_produce(RD_KAFKA_RESP_ERR__FATAL), PANO_PRODUCE_FATAL);
    ck_assert_int_eq(pano_policy_produce(RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION),
                     PANO_PRODUCE_RETRY);
    ck_assert_int_eq(pano_policy_produce(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC), PANO_PRODUCE_RETRY);
    /* refused for good only when delivered: produce() retries these */
    ck_assert_int_eq(pano_policy_produce(RD_KAFKA_RESP_ERR_INVALID_RECORD), PANO_PRODUCE_RETRY);
}
END_TEST

START_TEST(delivery_reports)
{
    /* persisted, whoever waits for it */
    ck_assert_int_eq(pano_policy_report(RD_KAFKA_RESP_ERR_NO_ERROR, true, true),
                     PANO_REPORT_PERSISTED);
    ck_assert_int_eq(pano_policy_report(RD_KAFKA_RESP_ERR_NO_ERROR, true, false),
                     PANO_REPORT_PERSISTED);
    /* no error but not persisted (possibly persisted): produced again */
    ck_assert_int_eq(pano_policy_report(RD_KAFKA_RESP_ERR_NO_ERROR, false, true),
                     PANO_REPORT_RETRY);
    /* purges and fatal errors, even for a channel that is gone */
    ck_assert_int_eq(pano_policy_report(RD_KAFKA_RESP_ERR__PURGE_QUEUE, false, false),
                     PANO_REPORT_PURGED);
    ck_assert_int_eq(pano_policy_report(RD_KAFKA_RESP_ERR__PURGE_INFLIGHT, false, true),
                     PANO_REPORT_PURGED);
    ck_assert_int_eq(pano_policy_report(RD_KAFKA_RESP_ERR__FATAL, false, false),
                     PANO_REPORT_FATAL);
    /* failures nobody waits for */
    ck_assert_int_eq(pano_policy_report(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, false, false),
                     PANO_REPORT_STALE);
    ck_assert_int_eq(pano_policy_report(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, false, false),
                     PANO_REPORT_STALE);
    /* refused for good */
    static const rd_kafka_resp_err_t permanent[] = {
        RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,   RD_KAFKA_RESP_ERR_INVALID_MSG,
        RD_KAFKA_RESP_ERR_INVALID_RECORD,       RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE,
        RD_KAFKA_RESP_ERR_POLICY_VIOLATION,     RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP,
        RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT,
    };
    for (size_t i = 0; i < sizeof permanent / sizeof permanent[0]; i++)
        ck_assert_int_eq(pano_policy_report(permanent[i], false, true), PANO_REPORT_REFUSED);
    /* everything else is tried again */
    static const rd_kafka_resp_err_t transient[] = {
        RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR__TRANSPORT,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
    };
    for (size_t i = 0; i < sizeof transient / sizeof transient[0]; i++)
        ck_assert_int_eq(pano_policy_report(transient[i], false, true), PANO_REPORT_RETRY);
}
END_TEST

START_TEST(acks_due)
{
    ck_assert(pano_policy_ack_due(true, 0, 400, 0));
    ck_assert(!pano_policy_ack_due(false, 0, 400, 0));
    ck_assert(!pano_policy_ack_due(false, 399, 400, ACK_INTERVAL / 2));
    ck_assert(pano_policy_ack_due(false, 400, 400, 0));
    ck_assert(pano_policy_ack_due(false, 1, 400, ACK_INTERVAL));
    ck_assert(pano_policy_ack_due(false, 0, 400, 5));
}
END_TEST

START_TEST(single_acks_behind_a_stuck_head)
{
    ck_assert(pano_policy_single_acks_due(3, 1, SINGLE_ACK_AFTER + 0.1));
    ck_assert(!pano_policy_single_acks_due(3, 1, SINGLE_ACK_AFTER)); /* not yet */
    ck_assert(!pano_policy_single_acks_due(0, 1, 60));               /* nothing finished */
    ck_assert(!pano_policy_single_acks_due(3, 0, 60));               /* nothing stuck */
}
END_TEST

/* A walk through a Kafka outage: nothing pending, messages waiting, the
 * stall, the hand-back. */
START_TEST(stall_and_hand_back)
{
    const double hold = 300;
    /* nothing waits: the clock restarts, no stall */
    pano_stall_decision d = pano_policy_stall(false, 0, 500, hold, true, true);
    ck_assert(d.idle && !d.stalled);
    ck_assert_int_eq(d.change, PANO_STALL_SAME);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_NONE);
    /* a stall that ends because nothing waits any more is reported */
    d = pano_policy_stall(true, 0, 500, hold, true, true);
    ck_assert(d.idle && !d.stalled);
    ck_assert_int_eq(d.change, PANO_STALL_ENDS);

    /* waiting, quiet for less than STALL_AFTER: single expired messages
     * are looked for */
    d = pano_policy_stall(false, 10, STALL_AFTER - 1, hold, true, true);
    ck_assert(!d.idle && !d.stalled);
    ck_assert_int_eq(d.change, PANO_STALL_SAME);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_EXPIRED);
    /* ... but not on a connection that cannot take nacks */
    d = pano_policy_stall(false, 10, STALL_AFTER - 1, hold, true, false);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_NONE);

    /* quiet longer: the stall begins */
    d = pano_policy_stall(false, 10, STALL_AFTER + 1, hold, true, true);
    ck_assert(d.stalled);
    ck_assert_int_eq(d.change, PANO_STALL_BEGINS);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_EXPIRED);
    /* and goes on, said once */
    d = pano_policy_stall(true, 10, hold - 1, hold, true, true);
    ck_assert(d.stalled);
    ck_assert_int_eq(d.change, PANO_STALL_SAME);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_EXPIRED);
    /* past the hold timeout: everything goes back, the stall is over */
    d = pano_policy_stall(true, 10, hold + 1, hold, true, true);
    ck_assert(!d.stalled);
    ck_assert_int_eq(d.change, PANO_STALL_SAME);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_ALL);
    /* ... only with a connection to hand them back on */
    d = pano_policy_stall(true, 10, hold + 1, hold, false, false);
    ck_assert(d.stalled);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_NONE);
    /* a hold timeout shorter than STALL_AFTER: the stall begins and
     * everything goes back in the same look */
    d = pano_policy_stall(false, 10, STALL_AFTER + 1, 5, true, true);
    ck_assert(!d.stalled);
    ck_assert_int_eq(d.change, PANO_STALL_BEGINS);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_ALL);
    /* Kafka confirms again (the quiet clock was restarted) */
    d = pano_policy_stall(true, 10, 1, hold, true, true);
    ck_assert(!d.stalled);
    ck_assert_int_eq(d.change, PANO_STALL_ENDS);
    ck_assert_int_eq(d.hand_back, PANO_HAND_BACK_EXPIRED);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bridge_policy");
    TCase *tc = tcase_create("policy");
    tcase_add_test(tc, may_log_counts_every_call);
    tcase_add_test(tc, topic_of_each_family);
    tcase_add_test(tc, backoff_doubles_up_to_the_cap);
    tcase_add_test(tc, produce_results);
    tcase_add_test(tc, delivery_reports);
    tcase_add_test(tc, acks_due);
    tcase_add_test(tc, single_acks_behind_a_stuck_head);
    tcase_add_test(tc, stall_and_hand_back);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
