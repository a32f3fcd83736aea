/* The png decoder entry point (fuzz_image.h). */
#include "fuzz_image.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_image(CLEF_IMAGE_PNG, data, size);
}
