/*
 * The closed error codes (base/error.h): every error of the protocol gets
 * the code its type and status say, every failure of the server the
 * status and type of its code, and a request the engine could not parse
 * keeps its wire type whatever its code.
 */
#include <string.h>

#include "base/error.h"
#include "check.h"
#include "protocol/request.h"

static void
classify(int status, const char *type, clef_errc want)
{
    clef_error  err;

    clef_error_set(&err, status, type, NULL, "m");
    CHECK(err.code == want, "%d %s: %s (got %s)", status, type,
          clef_errc_name(want), clef_errc_name(err.code));
}

static void
fail(clef_errc code, int status, const char *type)
{
    clef_error  err;

    memset(&err, 0x55, sizeof(err));
    CHECK_INT(clef_error_fail(&err, code, "out of %s", "luck"), -1,
              "%s: returns -1", clef_errc_name(code));
    CHECK(err.code == code && err.status == status
          && strcmp(err.type, type) == 0 && err.loc[0] == '\0'
          && strcmp(err.message, "out of luck") == 0,
          "%s: %d %s, no loc, the message", clef_errc_name(code), status, type);
}

int
main(void)
{
    clef_error   err;
    clef_request req;
    int          rc;

    classify(400, "too_many_choices", CLEF_E_BAD_REQUEST);
    classify(422, "missing", CLEF_E_BAD_REQUEST);
    classify(400, "max_tokens_exceeded", CLEF_E_TOO_LARGE);
    classify(413, "max_tokens_exceeded", CLEF_E_TOO_LARGE);
    classify(413, "image_too_large", CLEF_E_TOO_LARGE);
    classify(400, "images_unsupported", CLEF_E_UNSUPPORTED);
    classify(400, "assets_unsupported", CLEF_E_UNSUPPORTED);
    classify(500, "media_unsupported", CLEF_E_UNSUPPORTED);
    classify(501, "not_a_decision_model", CLEF_E_MODEL);
    classify(500, "tokenizer_invalid", CLEF_E_MODEL);
    classify(503, "device_fault", CLEF_E_DEVICE_FAULT);
    classify(503, "engine_unavailable", CLEF_E_UNAVAILABLE);
    classify(504, "timeout_error", CLEF_E_UNAVAILABLE);
    classify(429, "rate_limit_error", CLEF_E_UNAVAILABLE);
    classify(500, "plan_invalid", CLEF_E_INTERNAL);
    classify(500, "internal_error", CLEF_E_INTERNAL);

    fail(CLEF_E_NO_MEMORY, 500, "out_of_memory");
    fail(CLEF_E_MODEL, 500, "model_invalid");
    fail(CLEF_E_DEVICE_FAULT, 503, "device_fault");
    fail(CLEF_E_INTERNAL, 500, "internal_error");
    fail(CLEF_E_UNSUPPORTED, 500, "media_unsupported");

    clef_error_fail(&err, (clef_errc) 99, "x");
    CHECK(err.code == CLEF_E_INTERNAL && strcmp(err.type, "internal_error") == 0,
          "a code out of range is internal");
    clef_error_clear(&err);
    CHECK(err.code == CLEF_E_NONE && err.status == 0, "clear: no error");

    /* a refusal of the parser: the protocol's type, with its code */
    clef_error_clear(&err);
    rc = clef_request_parse(&req, "{\"questions\":{}}", 16, NULL, &err);
    CHECK(rc != 0 && err.status == 422 && strcmp(err.type, "missing") == 0
          && err.code == CLEF_E_BAD_REQUEST,
          "a request without state: 422 missing, bad_request (%s %s)",
          err.type, clef_errc_name(err.code));
    return check_done();
}
