/*
 * config_keys.c - every configuration key pano knows, in one table.
 *
 * The environment name of a key is derived (pano.amqp.url -> PANO_AMQP_URL);
 * env_aliases lists other names, in priority order after the derived one.
 * deploy/pano.properties documents this table; tests/unit keeps them in step.
 */
#include "config.h"

#define NOLIMIT 0, 0

const pano_config_key pano_config_keys[] = {
    /* ---- general ---- */
    {"pano.log.level", PANO_CFG_STR, "info", NOLIMIT, false, {0}, {0},
     "Log level on stderr: error, warn, info or debug."},

    /* ---- workflow context (Pegasus sets these in every job) ---- */
    {"pano.wf_uuid", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_WF_UUID"}, {0},
     "Workflow UUID; the key every index and alias is built from."},
    {"pano.wf_label", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_WF_LABEL"}, {0},
     "Workflow label."},
    {"pano.dag_job_id", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_DAG_JOB_ID"}, {0},
     "DAG node name of the job (e.g. preprocess_ID0000001)."},
    {"pano.condor_job_id", PANO_CFG_STR, NULL, NOLIMIT, false, {"CONDOR_JOBID"}, {0},
     "HTCondor job id (cluster.proc)."},
    {"pano.xformation", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_XFORMATION"}, {0},
     "Transformation name."},
    {"pano.task_id", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_TASK_ID"}, {0},
     "Task id (the derivation)."},
    {"pano.site", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_SITE"}, {0},
     "Execution site label."},
    {"pano.rank", PANO_CFG_INT, "-1", -1, 1e9, false,
     {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_ID", "SLURM_PROCID", "ALPS_APP_PE",
      "MPIRUN_RANK"},
     {0},
     "MPI rank of the process (-1: not an MPI rank); read from the launcher's variables."},
    {"pano.hostname", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Host name put in events (default: gethostname())."},

    /* ---- AMQP publishing ---- */
    {"pano.amqp.url", PANO_CFG_STR, NULL, NOLIMIT, true,
     {"PEGASUS_AMQP_URL"}, {"pegasus.catalog.workflow.amqp.url"},
     "Broker URL: amqp[s]://user:pass@host:port/vhost/exchange, or Panorama's "
     "rabbitmq[s]://user:pass@host:port/api/exchanges/VHOST/EXCHANGE/publish. "
     "Unset: events are written as JSON lines (see pano.output)."},
    {"pano.amqp.password_file", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "File holding the broker password (first line); overrides a password in the "
     "URL and keeps it out of URLs, environments and ps output."},
    {"pano.amqp.tls_verify", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Verify the broker's TLS certificate and host name (amqps)."},
    {"pano.amqp.cacert", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "CA bundle for amqps (default: the system store)."},
    {"pano.amqp.heartbeat", PANO_CFG_INT, "30", 0, 3600, false, {0}, {0},
     "AMQP heartbeat in seconds (0 disables)."},
    {"pano.amqp.timeout", PANO_CFG_DOUBLE, "10", 0.1, 3600, false, {0}, {0},
     "Seconds to wait for a connection or a publisher confirm."},

    /* ---- output without a broker ---- */
    {"pano.output", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Without a broker URL: file to append events to as JSON lines (- for stdout)."},

    /* ---- Kafka (pano-bridge, pano-indexer) ---- */
    {"pano.kafka.brokers", PANO_CFG_STR, "127.0.0.1:9092", NOLIMIT, false, {0}, {0},
     "Kafka bootstrap servers, host:port[,host:port...]."},
    {"pano.kafka.partitions", PANO_CFG_INT, "-1", -1, 10000, false, {0}, {0},
     "Partitions of the topics pano creates when they are missing (-1: the broker's "
     "default)."},
    {"pano.kafka.topic_prefix", PANO_CFG_STR, "pano.", NOLIMIT, false, {0}, {0},
     "Prefix of the Kafka topics: <prefix>kickstart, <prefix>darshan, <prefix>transfer, "
     "<prefix>stampede, <prefix>custom, <prefix>other."},
    {"pano.kafka.dead_letter_topic", PANO_CFG_STR, "pano.dead-letter", NOLIMIT, false, {0},
     {0}, "Kafka topic for messages the bridge rejects, with the reason in headers."},

    /* ---- pano-bridge ---- */
    {"pano.bridge.queue", PANO_CFG_STR, "pano.events", NOLIMIT, false, {0}, {0},
     "Durable AMQP queue the bridge consumes."},
    {"pano.bridge.bindings", PANO_CFG_STR, "#", NOLIMIT, false, {0}, {0},
     "Comma-separated binding keys of the queue on the exchange (# = every event; "
     "Panorama's kickstart.#,stampede.#,transfer.# also work)."},
    {"pano.bridge.dead_letter_exchange", PANO_CFG_STR, "pano.dlx", NOLIMIT, false, {0}, {0},
     "Dead-letter exchange declared for the queue (messages that cannot even be "
     "dead-lettered to Kafka end up there)."},
    {"pano.bridge.declare", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Declare the queue, exchanges and bindings; false: use what the broker has (passive)."},
    {"pano.bridge.prefetch", PANO_CFG_INT, "4000", 1, 65535, false, {0}, {0},
     "Unacknowledged AMQP messages in flight (bounds the bridge's memory; while Kafka "
     "is down the bridge takes no more than this)."},
    {"pano.bridge.max_message_size", PANO_CFG_SIZE, "1000k", 1024, 1e9, false, {0}, {0},
     "Larger messages are dead-lettered (their first bytes up to this size). Keep it "
     "below the Kafka broker's message.max.bytes (1 MB by default)."},
    {"pano.bridge.schema_dir", PANO_CFG_STR, PANO_SCHEMA_DIR, NOLIMIT, false, {0}, {0},
     "Directory of the event JSON Schemas (envelope.schema.json, events/NAME.schema.json) "
     "that messages are checked against."},
    {"pano.bridge.linger", PANO_CFG_DOUBLE, "0.02", 0, 10, false, {0}, {0},
     "Seconds the Kafka producer waits to fill a batch (librdkafka linger.ms)."},
    {"pano.bridge.delivery_timeout", PANO_CFG_DOUBLE, "0", 0, 86400, false, {0}, {0},
     "Seconds librdkafka keeps trying to deliver a message before reporting a failure, "
     "after which the bridge produces it again (0: librdkafka retries until Kafka takes "
     "it)."},
    {"pano.bridge.hold_timeout", PANO_CFG_DOUBLE, "300", 1, 86400, false, {0}, {0},
     "Seconds the bridge keeps unacknowledged messages while Kafka confirms nothing; "
     "then it hands them back to RabbitMQ and consumes again once Kafka answers. Keep it "
     "well below RabbitMQ's consumer_timeout (30 minutes by default)."},
    {"pano.bridge.drain_timeout", PANO_CFG_DOUBLE, "30", 0, 3600, false, {0}, {0},
     "On SIGTERM, seconds to wait for Kafka to confirm what is in flight; the rest is "
     "left to RabbitMQ to deliver again."},
    {"pano.bridge.stats_interval", PANO_CFG_DOUBLE, "30", 0.1, 86400, false, {0}, {0},
     "Seconds between statistics lines in the log (and rewrites of the status file)."},
    {"pano.bridge.status_file", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "File the bridge rewrites with its metrics in Prometheus text format (for "
     "node_exporter's textfile collector, e.g. /var/lib/node_exporter/pano-bridge.prom)."},
    {"pano.bridge.status_port", PANO_CFG_INT, "0", 0, 65535, false, {0}, {0},
     "Port on 127.0.0.1 that serves the metrics at /metrics (0: no endpoint)."},

    /* ---- Elasticsearch (pano-indexer) ---- */
    {"pano.es.url", PANO_CFG_STR, "http://127.0.0.1:9200", NOLIMIT, true, {0}, {0},
     "Elasticsearch URL (user:password@ allowed; see pano.es.password_file)."},
    {"pano.es.password_file", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "File holding the Elasticsearch password (first line)."},
    {"pano.es.timeout", PANO_CFG_DOUBLE, "30", 0.1, 3600, false, {0}, {0},
     "Seconds to wait for an Elasticsearch request."},
    {"pano.es.tls_verify", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Verify Elasticsearch's TLS certificate."},
    {"pano.es.cacert", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "CA bundle for Elasticsearch over https."},

    /* ---- pano-indexer ---- */
    {"pano.indexer.group", PANO_CFG_STR, "pano-indexer", NOLIMIT, false, {0}, {0},
     "Kafka consumer group; indexers in one group share the partitions."},
    {"pano.indexer.index_prefix", PANO_CFG_STR, "pano-", NOLIMIT, false, {0}, {0},
     "Prefix of the Elasticsearch indices (<prefix>kickstart, ...)."},
    {"pano.indexer.batch_docs", PANO_CFG_INT, "1000", 1, 100000, false, {0}, {0},
     "Most documents in one bulk request."},
    {"pano.indexer.batch_bytes", PANO_CFG_SIZE, "5M", 1024, 1e9, false, {0}, {0},
     "Most bytes in one bulk request."},
    {"pano.indexer.linger", PANO_CFG_DOUBLE, "0.2", 0, 60, false, {0}, {0},
     "Seconds to wait for a batch to fill before sending it."},

    {0},
};
