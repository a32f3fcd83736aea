/*
 * Loading the engine library (engine_library.h).
 */
#include "serve/engine_library.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/dl.h"

static const clef_engine_library_t  expected =
    CLEF_ENGINE_LIBRARY_INIT(NULL);


const clef_engine_library_t *
clef_engine_library_load(char *why, size_t size)
{
    const clef_engine_library_t  *lib;
    char                          path[4096];
    void                         *h;

    h = clef_dlopen_beside((void *) clef_engine_library_load,
                           CLEF_ENGINE_LIBRARY, why, size);
    if (h == NULL) {
        return NULL;
    }
    lib = dlsym(h, CLEF_ENGINE_SYMBOL);
    if (lib == NULL) {
        snprintf(why, size, "%s has no %s: not an engine library of ngx_clef",
                 CLEF_ENGINE_LIBRARY, CLEF_ENGINE_SYMBOL);
        dlclose(h);
        return NULL;
    }
    if (lib->queue_version != expected.queue_version
        || lib->conf_size != expected.conf_size
        || lib->error_size != expected.error_size
        || lib->queue_size != expected.queue_size || lib->run == NULL)
    {
        if (clef_path_beside((void *) clef_engine_library_load,
                             CLEF_ENGINE_LIBRARY, path, sizeof(path)) != 0)
        {
            snprintf(path, sizeof(path), "%s", CLEF_ENGINE_LIBRARY);
        }
        snprintf(why, size, "%s is of another build than the nginx module "
                 "(zone layout %u, this module's %u): install the module and "
                 "the library of one build (make install)", path,
                 lib->queue_version, expected.queue_version);
        dlclose(h);
        return NULL;
    }
    return lib;
}


int
clef_engine_library_check(char *why, size_t size)
{
    char  path[4096];

    if (clef_path_beside((void *) clef_engine_library_check,
                         CLEF_ENGINE_LIBRARY, path, sizeof(path)) != 0)
    {
        /* not a shared object of its own (a static program): the engine
         * will ask the dynamic linker */
        return 0;
    }
    if (access(path, R_OK) != 0) {
        snprintf(why, size, "the engine library %s cannot be read (%s): "
                 "install it beside the module (make install puts both)",
                 path, strerror(errno));
        return -1;
    }
    return 0;
}
