/*
 * libFuzzer target: arbitrary bytes as a pano-transfer list file (JSON
 * lines and "SRC DST" pairs).
 */
#include "transfer_list.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pano_transfer_list list = {0};
    char err[512];
    pano_transfer_list_parse(&list, (const char *)data, size, "a", "b", err, sizeof err);
    pano_transfer_list_free(&list);
    return 0;
}
