/*  libFuzzer entry of the npz target (tests/fuzz/targets.h); `make fuzz`. */
#include "tests/fuzz/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return spm_fuzz_npz(data, size);
}
