/*
 * libFuzzer target: arbitrary bytes as Globus Transfer documents
 * (pano-transfer globus reads them from files and stdin).
 */
#include "globus.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pano_json *bodies = pano_json_array();
    char err[512];
    pano_globus_parse((const char *)data, size, bodies, err, sizeof err);
    pano_json_free(bodies);
    return 0;
}
