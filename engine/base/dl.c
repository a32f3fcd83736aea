#include "base/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int
clef_path_beside(const void *anchor, const char *file, char *path,
    size_t size)
{
    Dl_info      info;
    const char  *slash;
    int          n;

    if (dladdr(anchor, &info) == 0 || info.dli_fname == NULL
        || (slash = strrchr(info.dli_fname, '/')) == NULL)
    {
        return -1;
    }
    n = snprintf(path, size, "%.*s/%s", (int) (slash - info.dli_fname),
                 info.dli_fname, file);
    return n > 0 && (size_t) n < size ? 0 : -1;
}

void *
clef_dlopen_beside(const void *anchor, const char *file, char *why,
    size_t size)
{
    char   path[4096], first[512] = "";
    void  *h = NULL;

    if (clef_path_beside(anchor, file, path, sizeof(path)) == 0) {
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            snprintf(first, sizeof(first), "%s", dlerror());
        }
    }
    if (h == NULL) {
        h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    }
    if (h == NULL) {
        /* the search by name failed too: say why the nearby file, if there
         * was one, did not load */
        const char  *by_name = dlerror();

        snprintf(why, size, "%s",
                 first[0] != '\0' && strstr(first, "No such file") == NULL
                 ? first : by_name);
    }
    return h;
}
