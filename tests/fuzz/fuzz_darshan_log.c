/*
 * libFuzzer target: arbitrary bytes through the .darshan reader and the
 * event builder. Build with -Dfuzz=true and CC=clang (see docs/darshan.md).
 */
#include "darshan_event.h"
#include "darshan_summarize.h"
#include "darshan_summary.h"
#include "event.h"
#include "json.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pano_config *cfg;
    static pano_source *src;
    if (!cfg) {
        cfg = pano_config_new();
        src = pano_source_new(cfg);
    }
    pano_darshan_summary s;
    char err[512];
    if (pano_darshan_summarize_log(data, size, &s, err, sizeof err) == 0) {
        pano_json *envelope = pano_event_new(src, "darshan.perf");
        pano_buf json = {0};
        pano_darshan_event_write(&json, envelope, &s, NULL);
        /* Whatever the log holds, the event is valid JSON without
         * duplicate keys (the bridge would dead-letter it otherwise). */
        const pano_json_parse_options strict = {.reject_duplicates = true};
        char why[256];
        pano_json *back = pano_json_parse_with(json.data, json.len, &strict, why, sizeof why);
        if (!back)
            abort();
        pano_json_free(back);
        pano_buf_free(&json);
        pano_json_free(envelope);
        pano_darshan_summary_free(&s);
    }
    return 0;
}
