/*
 * Video and audio decoding in a process of its own, under a sandbox: how
 * the engine decodes a request's videos and audio clips (media/prepare.c's
 * video and audio rows).
 *
 * Why: FFmpeg's demuxers and decoders are a large body of C with a steady
 * stream of memory-safety fixes.  The allow-lists of video_decode.h shrink
 * what a file can reach, but a bug in the H.264 or HEVC decoder would still
 * run in the process that holds the model, the shared-memory queue and
 * every waiting request.  And FFmpeg's ~150 libraries, linked into
 * libclef_engine.so, added ~0.1 s to every engine start.  So the engine
 * links no FFmpeg at all: build/clef-decoder (decoder/, installed beside
 * the module) alone links it, and every video is decoded by a fresh
 * process of its:
 *
 *   engine  --spawn once, at the first video-->  clef-decoder --serve
 *           (its fd 3: a control socket; it closes every other inherited
 *           descriptor, and dies with the thread that spawned it)
 *   per video: the engine makes a socketpair and hands one end over; the
 *   decoder forks a child for it (cheap: FFmpeg is already loaded), which
 *     - keeps that socket, the sandbox's socket to the decoder and stderr,
 *       closes the rest,
 *     - limits its address space (CLEF_DECODER_MAX_AS), CPU time,
 *       descriptors (8) and file writes (none: RLIMIT_FSIZE 0, SIGXFSZ
 *       ignored, a write to a file fails with EFBIG),
 *     - sets no_new_privs and a seccomp filter: read and write on what it
 *       holds, memory (mmap/mprotect without PROT_EXEC, brk, munmap,
 *       madvise), futex, threads (clone with CLONE_THREAD only, and the
 *       one rt_sigaction glibc's first thread start makes), clocks, exit;
 *       open and stat fail with EACCES, sysinfo with EPERM; anything else
 *       (socket, execve, ptrace, ...) kills it,
 *     - hands the filter's listener to the decoder, which answers each of
 *       its thread creations: 64 go on (FFmpeg makes 2 a video), the rest
 *       fail with EAGAIN, root or not (decoder/sandbox.h; a kernel without
 *       listeners makes the child refuse to decode, saying why),
 *     - then reads the file, decodes, samples and resizes it
 *       (video_process.h) and writes its answer, and exits.
 *   The decoder reports the child's pid, then how it ended, with its CPU
 *   time and peak resident set (decoder_wire.h).
 *
 * The engine trusts the child with pixels only: it recomputes the frames
 * sampled, their times and the grid from the scan the child reports
 * (video_item.h) and takes the frames only at exactly the size that says;
 * a child that crashes, is killed by the filter, runs past its time or
 * answers malformed bytes makes that video's 400 video_invalid naming what
 * happened, and the next video gets a fresh child.  A decoder that is not
 * installed (a build made with FFMPEG=no has none) makes every video 500
 * media_unsupported; one that cannot be run or is of another build, 500
 * internal_error naming its path.
 */
#ifndef CLEF_DECODER_H
#define CLEF_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "media/audio_decode.h"
#include "media/image_decode.h"
#include "media/media.h"
#include "media/video_decode.h"
#include "media/video_sample.h"

#define CLEF_DECODER_NAME    "clef-decoder"
#define CLEF_DECODER_MAX_AS  (UINT64_C(4) << 30)   /* a child's address
                                                      space */
#define CLEF_DECODER_GRACE   15.0    /* seconds past the decode budget
                                        before a child is killed */

/* Where the decoder is: $CLEF_DECODER, else build/clef-decoder beside the
 * object this code is linked into (libclef_engine.so beside the module,
 * build/clef), into path[0..size); -1 when neither names one. */
int  clef_decoder_path(char *path, size_t size);

typedef struct clef_decoder_lane  clef_decoder_lane;   /* decoder_lane.h */

/* What a decode that failed says of its file: a closed list, set from the
 * child's refusal (each type of a kind's list carries one) or from how
 * the child ended, never from reading messages. */
typedef enum {
    CLEF_DECODE_OK = 0,
    CLEF_DECODE_UNDECODABLE,    /* the file cannot be decoded: invalid,
                                   damaged, the decoder crashed on it */
    CLEF_DECODE_NO_STREAM,      /* it has no stream of the kind */
    CLEF_DECODE_OVER_LIMIT,     /* over this server's limits: length,
                                   size, codec, decode budget */
    CLEF_DECODE_SERVER          /* the server's failure (5xx), or the
                                   request went away */
} clef_decode_verdict;

/* How an item goes through the decode process. */
typedef struct clef_decoder_run  clef_decoder_run;

struct clef_decoder_run {
    clef_decoder_lane  *lane;       /* NULL: the process's default lane */
    /* called about once a second while a child works (may be NULL): the
     * engine's watchdog must not take a long video for a hung forward */
    void              (*progress)(void *ctx);
    /* polled as often (may be NULL): 1 when the request is gone, and the
     * child is then killed and the item fails with 499 cancelled */
    int               (*cancelled)(void *ctx);
    void               *ctx;
    const char         *what;       /* the request, in log lines (may be
                                       NULL) */
};

/*
 * Decodes the video data[0..len) in a child of the decode process into
 * out (a media item of the video kind, media.h), as clef_video_load()
 * would; index names it in refusals.  One item at a time per lane (the
 * lane's lock).  run may be NULL (the default lane, no progress).
 *
 * Who is blamed: a refusal the child makes from the closed list of its
 * kind's 400s, a child killed by the seccomp filter, crashed, over its CPU
 * time or address space, or past its wall-clock budget, is the file's
 * (400 <kind>_invalid or <kind>_decode_budget); a child or decode process
 * killed by a signal this engine did not send (the OOM killer, an
 * operator), or a decode process that died, is the server's: 503
 * service_unavailable, which the client may retry (Retry-After).
 */
int  clef_decoder_video_run(const clef_decoder_run *run, const uint8_t *data,
    size_t len, int index, const clef_video_limits *lim,
    const clef_video_config *vc, clef_media_item *out, clef_error *err);

/*
 * Decodes the audio clip data[0..len) in a child of the decode process to
 * 16 kHz mono samples (*samples malloc'ed, *n of them), as
 * clef_audio_decode() would; refusals name clip index (audio_decode.h),
 * or video index's sound when lim->track is set.  The engine checks the
 * count against lim before it reads them.  verdict (may be NULL): what a
 * failure says of the file.
 */
int  clef_decoder_audio_run(const clef_decoder_run *run, const uint8_t *data,
    size_t len, int index, const clef_audio_limits *lim, float **samples,
    int64_t *n, clef_decode_verdict *verdict, clef_error *err);

/*
 * Decodes a record's n images in[0..n) (image index and on, in order) in
 * one child of the decode process: one round trip a record.  out[k]: the
 * upright RGB of image index + k, as clef_image_decode_exif() makes it
 * (EXIF applied when exif); *decoded of them come back decoded.  -1 with
 * err when fewer than n did: the refusal of image index + *decoded (the
 * child stops there), or the server's failure; the caller frees
 * out[0..*decoded) either way (clef_rgb_image_free).
 */
int  clef_decoder_images_run(const clef_decoder_run *run,
    const clef_media_input *in, int n, int index, int64_t max_pixels,
    int exif, clef_rgb_image *out, int *decoded, clef_error *err);

/* The same on the default lane, progress (may be NULL) about once a
 * second. */
int  clef_decoder_video(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc,
    void (*progress)(void *ctx), void *ctx, clef_media_item *out,
    clef_error *err);
int  clef_decoder_audio(const uint8_t *data, size_t len, int index,
    const clef_audio_limits *lim, void (*progress)(void *ctx), void *ctx,
    float **samples, int64_t *n, clef_error *err);

/* Ends the default lane's decode process, if one runs (tests; an engine's
 * exit ends it by itself). */
void clef_decoder_stop(void);

#endif
