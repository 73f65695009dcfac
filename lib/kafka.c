#include "kafka.h"

#include "event.h"
#include "log.h"
#include "mem.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* librdkafka's syslog levels onto pano's. */
static void log_from_librdkafka(const rd_kafka_t *rk, int level, const char *facility,
                                const char *message)
{
    pano_log_level l = level <= 3 ? PANO_LOG_ERROR
                       : level <= 4 ? PANO_LOG_WARN
                       : level <= 6 ? PANO_LOG_INFO
                                    : PANO_LOG_DEBUG;
    pano_log(l, "kafka %s: %s", facility, message);
}

int pano_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
                        char *err, size_t errlen)
{
    char why[256];
    if (rd_kafka_conf_set(conf, name, value, why, sizeof why) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "librdkafka property %s: %s", name, why);
        return -1;
    }
    return 0;
}

static bool is_own(const char *name, const pano_kafka_property *own, size_t n_own)
{
    for (size_t i = 0; i < n_own; i++)
        if (strcmp(name, own[i].name) == 0)
            return true;
    return false;
}

int pano_kafka_conf_apply(rd_kafka_conf_t *conf, const pano_kafka_property *own, size_t n_own,
                          const pano_config *cfg, const char *key, char *err, size_t errlen)
{
    for (size_t i = 0; i < n_own; i++)
        if (pano_kafka_conf_set(conf, own[i].name, own[i].value, err, errlen) < 0)
            return -1;
    const char *list = pano_config_str(cfg, key);
    if (!list || !*list)
        return 0;
    char *copy = pano_strdup(list), *save = NULL, why[384];
    int rc = 0, item = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        item++;
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) {
            snprintf(err, errlen, "%s: item %d is not name=value", key, item);
            rc = -1;
            continue;
        }
        *eq = '\0';
        if (is_own(tok, own, n_own)) {
            snprintf(err, errlen, "%s: %s is set by the program itself and cannot be changed",
                     key, tok);
            rc = -1;
        } else if (pano_kafka_conf_set(conf, tok, eq + 1, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: %s", key, why);
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

rd_kafka_conf_t *pano_kafka_conf_new(const pano_config *cfg, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, log_from_librdkafka);
    if (pano_kafka_conf_set(conf, "bootstrap.servers",
                            pano_config_str(cfg, "pano.kafka.brokers"), err, errlen) < 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

void pano_kafka_topic(const pano_config *cfg, const char *family, char *out, size_t size)
{
    snprintf(out, size, "%s%s", pano_config_str(cfg, "pano.kafka.topic_prefix"), family);
}

/* The replication factor of new topics: the configured one, or 3 (fewer
 * when the cluster has fewer brokers). 0 with a message when the cluster
 * cannot be asked. */
static int replication_factor(rd_kafka_t *rk, const pano_config *cfg, char *err, size_t errlen)
{
    int wanted = (int)pano_config_int(cfg, "pano.kafka.replication_factor");
    if (wanted > 0)
        return wanted;
    const struct rd_kafka_metadata *md;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, NULL, &md, 30000);
    if (e) {
        snprintf(err, errlen, "cannot read the Kafka cluster's brokers: %s", rd_kafka_err2str(e));
        return 0;
    }
    int brokers = md->broker_cnt;
    rd_kafka_metadata_destroy(md);
    return brokers < 3 ? (brokers > 0 ? brokers : 1) : 3;
}

/* Whether the cluster's metadata shows the topic with a leader for each
 * of its partitions. */
static bool topic_ready(const struct rd_kafka_metadata *md, const char *name)
{
    for (int i = 0; i < md->topic_cnt; i++) {
        const rd_kafka_metadata_topic_t *t = &md->topics[i];
        if (strcmp(t->topic, name) != 0)
            continue;
        if (t->err || t->partition_cnt == 0)
            return false;
        for (int p = 0; p < t->partition_cnt; p++)
            if (t->partitions[p].err || t->partitions[p].leader < 0)
                return false;
        return true;
    }
    return false;
}

/* Wait up to TOPICS_VISIBLE_WAIT seconds until the metadata shows every
 * topic. A topic just created is not known to every broker at once, and a
 * consumer that subscribes while it is not would not look for it again for
 * topic.metadata.refresh.interval.ms (5 minutes): a freshly started
 * pipeline would stand still that long. */
#define TOPICS_VISIBLE_WAIT 30
static void wait_until_visible(rd_kafka_t *rk, char names[][256], size_t n)
{
    double deadline = pano_now() + TOPICS_VISIBLE_WAIT;
    while (pano_now() < deadline) {
        const struct rd_kafka_metadata *md;
        if (rd_kafka_metadata(rk, 1, NULL, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            size_t ready = 0;
            while (ready < n && topic_ready(md, names[ready]))
                ready++;
            rd_kafka_metadata_destroy(md);
            if (ready == n)
                return;
        }
        usleep(200000);
    }
    pano_warn("Kafka topics not all visible in the cluster's metadata after %d s; "
              "going on", TOPICS_VISIBLE_WAIT);
}

int pano_kafka_ensure_topics(rd_kafka_t *rk, const pano_config *cfg, char *err, size_t errlen)
{
    enum { MAX_TOPICS = 16 };
    char names[MAX_TOPICS][256];
    rd_kafka_NewTopic_t *topics[MAX_TOPICS];
    size_t n = 0;
    int partitions = (int)pano_config_int(cfg, "pano.kafka.partitions");
    int replicas = replication_factor(rk, cfg, err, errlen);
    if (replicas == 0)
        return -1;
    char why[256], min_isr[16];
    snprintf(min_isr, sizeof min_isr, "%d", replicas < 3 ? 1 : replicas / 2 + 1);
    for (size_t i = 0; pano_event_families[i] && n + 1 < MAX_TOPICS; i++)
        pano_kafka_topic(cfg, pano_event_families[i], names[n++], sizeof names[0]);
    snprintf(names[n++], sizeof names[0], "%s",
             pano_config_str(cfg, "pano.kafka.dead_letter_topic"));
    for (size_t i = 0; i < n; i++)
        topics[i] = rd_kafka_NewTopic_new(names[i], partitions, replicas, why, sizeof why);
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (!topics[i]) {
            snprintf(err, errlen, "bad topic definition: %s", why);
            rc = -1;
        } else if (rd_kafka_NewTopic_set_config(topics[i], "min.insync.replicas", min_isr)) {
            snprintf(err, errlen, "bad topic definition: min.insync.replicas %s", min_isr);
            rc = -1;
        }
    rd_kafka_queue_t *q = rc == 0 ? rd_kafka_queue_new(rk) : NULL;
    if (q) {
        rd_kafka_CreateTopics(rk, topics, n, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        const rd_kafka_CreateTopics_result_t *res = ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
        if (!res) {
            snprintf(err, errlen, "no answer from Kafka to CreateTopics%s%s",
                     ev ? ": " : "", ev ? rd_kafka_event_error_string(ev) : "");
            rc = -1;
        } else {
            size_t count;
            const rd_kafka_topic_result_t **results = rd_kafka_CreateTopics_result_topics(res, &count);
            for (size_t i = 0; i < count; i++) {
                rd_kafka_resp_err_t e = rd_kafka_topic_result_error(results[i]);
                if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                    pano_info("created Kafka topic %s (replication factor %d, "
                              "min.insync.replicas %s)",
                              rd_kafka_topic_result_name(results[i]), replicas, min_isr);
                else if (e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                    snprintf(err, errlen, "cannot create Kafka topic %s: %s",
                             rd_kafka_topic_result_name(results[i]),
                             rd_kafka_topic_result_error_string(results[i]));
                    rc = -1;
                }
            }
        }
        if (ev)
            rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
    }
    for (size_t i = 0; i < n; i++)
        if (topics[i])
            rd_kafka_NewTopic_destroy(topics[i]);
    if (rc == 0)
        wait_until_visible(rk, names, n);
    return rc;
}

rd_kafka_topic_partition_list_t *pano_kafka_with_offsets(const rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *out = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++)
        if (parts->elems[i].offset >= 0)
            rd_kafka_topic_partition_list_add(out, parts->elems[i].topic, parts->elems[i].partition)
                ->offset = parts->elems[i].offset;
    return out;
}
