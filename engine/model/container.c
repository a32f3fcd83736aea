#include "model/container.h"

/* In the order they are tried; the release directory takes any path the
 * others do not claim, so that its messages ("config.json: cannot open")
 * are what a wrong path gets. */
static const clef_container_kind  *const kinds[] = {
    &clef_container_gguf,
    &clef_container_release,
};

const clef_container_kind *
clef_container_find(const char *path)
{
    size_t  i;

    for (i = 0; i + 1 < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (kinds[i]->probe(path)) {
            return kinds[i];
        }
    }
    return kinds[i];
}
