/*
 * libFuzzer target: arbitrary bytes through the .darshan reader and the
 * event builder. Build with -Dfuzz=true and CC=clang (see docs/darshan.md).
 */
#include "darshan_event.h"
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
    darshan_summary s;
    char err[512];
    if (darshan_summarize_log(data, size, &s, err, sizeof err) == 0) {
        pano_json *ev = pano_event_new(src, "darshan.perf");
        darshan_event_fill(ev, &s, NULL);
        char *json = pano_json_serialize(ev, NULL);
        free(json);
        pano_json_free(ev);
        darshan_summary_free(&s);
    }
    return 0;
}
