/*
 * What the engine and its decode process (build/clef-decoder, decoder/)
 * say to each other; see decoder.h for why there is a decode process.
 * Both come from one build (the hello says which), so fixed-size records
 * go as their bytes; everything the decode side sends back is checked by
 * the engine as untrusted input.
 *
 * The control socket (fd 3 of the decode process, a stream):
 *   decoder -> engine  once, at start: clef_dec_hello
 *   engine -> decoder  per item: clef_dec_request, with the item's own
 *                      socket passed as SCM_RIGHTS; its file then goes
 *                      down that socket (request.len bytes)
 *   decoder -> engine  clef_dec_status { CLEF_DEC_FORKED, pid } when the
 *                      item's process exists, { CLEF_DEC_EXITED, pid,
 *                      wait status, CPU time, peak RSS } when it has
 *                      ended
 * The item's socket, read and written by the item's process only:
 *   clef_dec_result, then its payload (result.rgb_len bytes): a video's
 *   resized frames, an audio clip's 16 kHz float samples; a record's
 *   images: one result and payload (its RGB) per image, in order, ending
 *   at the first refused
 */
#ifndef CLEF_DECODER_WIRE_H
#define CLEF_DECODER_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "media/audio_decode.h"
#include "media/video_decode.h"
#include "media/video_sample.h"

#define CLEF_DEC_MAGIC      0x43444c43u      /* "CLDC" */
#define CLEF_DEC_VERSION    4
#define CLEF_DEC_FD         3                /* the control socket */

typedef struct {
    uint32_t  magic;
    uint32_t  version;
    uint32_t  request_size;     /* sizeof(clef_dec_request) of its build */
    uint32_t  result_size;      /* sizeof(clef_dec_result) */
} clef_dec_hello;

/* The most files of one request: a record's images go together. */
#define CLEF_DEC_MAX_FILES  16

typedef struct {
    uint32_t           magic;
    uint32_t           kind;        /* CLEF_MEDIA_VIDEO, _AUDIO, _IMAGE */
    int32_t            index;       /* the (first) item among its kind's,
                                       for refusals */
    uint32_t           n_files;     /* images: the record's, one answer
                                       each, in order, up to the first
                                       refused; else 1 */
    uint64_t           len;         /* the files' bytes, all together */
    uint64_t           lens[CLEF_DEC_MAX_FILES];   /* each file's */
    uint32_t           formats[CLEF_DEC_MAX_FILES];   /* images: PNG,
                                                          JPEG, WebP */
    int64_t            max_pixels;  /* images: per image */
    uint32_t           exif;        /* images: EXIF orientation applied */
    uint32_t           pad;
    clef_video_limits  limits;      /* a video's */
    clef_video_config  video;
    clef_audio_limits  audio;       /* an audio clip's */
} clef_dec_request;

enum {
    CLEF_DEC_FORKED = 1,
    CLEF_DEC_EXITED = 2
};

/* 24 bytes.  cpu_ms and max_rss_kib let the engine tell a child that its
 * own CPU limit ended (the client's file: SIGXCPU once its CPU time
 * reaches twice its decode budget, rounded down, plus 1 s; SIGKILL 5 s
 * later when SIGXCPU did not end it; decoder/clef_decoder.c, sandbox.c)
 * from one that a SIGKILL from outside ended short of it (the OOM killer,
 * an operator: the server's failure). */
typedef struct {
    uint32_t  magic;
    uint32_t  what;             /* CLEF_DEC_FORKED, CLEF_DEC_EXITED */
    int32_t   pid;
    int32_t   wait_status;      /* EXITED: waitpid()'s status; FORKED: 0,
                                   or an errno when no process was made */
    uint32_t  cpu_ms;           /* EXITED: the child's CPU time, user and
                                   system, all its threads (wait4's
                                   rusage), in ms; FORKED: 0 */
    uint32_t  max_rss_kib;      /* EXITED: its peak resident set
                                   (ru_maxrss), KiB; FORKED: 0 */
} clef_dec_status;

typedef struct {
    uint32_t         magic;
    uint32_t         ok;            /* 1: info and frames follow; 0: err */
    clef_error       err;
    clef_video_info  info;          /* a video: the decoder's scan */
    clef_audio_info  audio;         /* an audio clip: what was decoded */
    int32_t          width;         /* an image: its upright size */
    int32_t          height;
    uint64_t         rgb_len;       /* the payload's bytes (a video's
                                       resized frames; an audio clip's
                                       samples x 4; an image's RGB) */
} clef_dec_result;

/* How clef_dec_write_all() and clef_dec_read_all() move a buffer; NULL:
 * send() without SIGPIPE (MSG_NOSIGNAL) or read(), blocking. */
typedef struct {
    /* before each try, when set: 1 to try (fd ready for events, or the
     * caller's poll gave up waiting), else the transfer fails; a
     * descriptor that would block (EAGAIN) is then waited for again, and
     * send() does not block (MSG_DONTWAIT) */
    int   (*wait)(int fd, short events, void *ctx);
    void   *ctx;
    /* write() instead of send(): all a sandboxed child may call
     * (decoder/sandbox.c's filter); SIGPIPE is ignored there */
    int     plain_write;
} clef_dec_io;

/* All of buf[0..len) to / from fd, over short counts and EINTR; -1 on an
 * error or an early end. */
int  clef_dec_write_all(int fd, const void *buf, size_t len,
    const clef_dec_io *io);
int  clef_dec_read_all(int fd, void *buf, size_t len, const clef_dec_io *io);

/* buf[0..len) in one message on sock, with descriptor fd as SCM_RIGHTS,
 * over EINTR, never raising SIGPIPE; -1 unless all of it went. */
int  clef_dec_send_fd(int sock, const void *buf, size_t len, int fd);

/* One message of at most len bytes into buf (recvmsg flags: MSG_WAITALL,
 * MSG_DONTWAIT), with the one descriptor it carries, close-on-exec, into
 * *fd: its bytes, 0 at the end, -1 on an error or a message without
 * exactly one descriptor (*fd -1 then). */
ssize_t  clef_dec_recv_fd(int sock, void *buf, size_t len, int flags,
    int *fd);

/* The most bytes a file may have on its way to the decoder. */
#define CLEF_DEC_MAX_FILE  (64u << 20)

#endif
