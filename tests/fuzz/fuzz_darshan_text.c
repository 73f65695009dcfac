/*
 * libFuzzer target: arbitrary bytes through the darshan-parser text
 * converter (wrapper mode and --text read text from another program).
 */
#include "darshan_summary.h"
#include "darshan_text.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pano_darshan_summary s;
    char err[512];
    if (pano_darshan_text_parse((const char *)data, size, &s, err, sizeof err) == 0)
        pano_darshan_summary_free(&s);
    return 0;
}
