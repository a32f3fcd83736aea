/*
 * Media items (see media.h).
 */
#include "media/media.h"

#include <stdlib.h>
#include <string.h>


void
clef_media_item_free(clef_media_item *it)
{
    free(it->bytes);
    free(it->values);
    free(it->timestamps);
    memset(it, 0, sizeof(*it));
}
