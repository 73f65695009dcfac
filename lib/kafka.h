/*
 * kafka.h - librdkafka configuration from pano's configuration.
 *
 * The bridge (producer) and the indexer (consumer) build their librdkafka
 * configuration here, so both read pano.kafka.brokers the same way and both
 * send librdkafka's own log lines through pano's log. Topic names follow the
 * event family: <pano.kafka.topic_prefix><family>.
 */
#ifndef PANO_KAFKA_H
#define PANO_KAFKA_H

#include "config.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>

/* A new librdkafka configuration with bootstrap.servers and logging set.
 * Returns NULL with a message in err. */
rd_kafka_conf_t *pano_kafka_conf_new(const pano_config *cfg, char *err, size_t errlen);

/* Set one librdkafka property; on failure err names the property. */
int pano_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
                        char *err, size_t errlen);

/* A librdkafka property a program sets itself: name and value. */
typedef struct {
    const char *name, *value;
} pano_kafka_property;

/* Set the program's own properties, then the ones the user lists in the
 * configuration key `key` as "name=value[,name=value...]" (unset or empty:
 * none). The user may not name one of the program's own: its guarantees
 * and bounds depend on them (properties set before this call are mere
 * defaults). Errors name the key and the property, never the value (it may
 * be a password). */
int pano_kafka_conf_apply(rd_kafka_conf_t *conf, const pano_kafka_property *own, size_t n_own,
                          const pano_config *cfg, const char *key, char *err, size_t errlen);

/* The topic of an event family: prefix + family. */
void pano_kafka_topic(const pano_config *cfg, const char *family, char *out, size_t size);

/* A new list of the partitions of parts whose offset is a real one (>= 0),
 * with those offsets; the caller destroys it. */
rd_kafka_topic_partition_list_t *pano_kafka_with_offsets(const rd_kafka_topic_partition_list_t *parts);

/* Create the family topics and the dead-letter topic if they do not exist
 * yet, so that consumers can subscribe before the first event. Replication
 * comes from pano.kafka.replication_factor (0: 3, or every broker when the
 * cluster has fewer), with min.insync.replicas a majority of it (1 below
 * 3 replicas), so that with acks=all an acknowledged event is on two
 * brokers of three and one broker may fail. Then waits (up to 30 s) until
 * the cluster's metadata shows every topic with its partitions' leaders,
 * so that a consumer subscribing next finds them at once. */
int pano_kafka_ensure_topics(rd_kafka_t *rk, const pano_config *cfg, char *err,
                             size_t errlen);

#endif
