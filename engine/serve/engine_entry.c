/*
 * The one symbol libclef_engine.so exports (engine/exports.map): its
 * engine, with the sizes it was built with (engine_library.h).
 */
#include "serve/engine.h"
#include "serve/engine_library.h"

const clef_engine_library_t  clef_engine_library =
    CLEF_ENGINE_LIBRARY_INIT(clef_engine_run);
