/*
 * The decode process's sandbox (decoder/sandbox.h) whatever the
 * environment: build/clef-decoder --sandbox-check prints the same lines in
 * a plain environment, with OMP_NUM_THREADS=1 or OPENBLAS_NUM_THREADS=1
 * (OpenBLAS then starts no thread when the decoder loads it, so a decode
 * child's first thread is the process's first: glibc's thread start must
 * pass the filter) and on one CPU; and a video and an audio clip decode
 * through the decode process under the same conditions.  The decode
 * process's report of a child's end carries its CPU time and peak RSS.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "slurp.h"
#include "media/decoder.h"
#include "media/decoder_wire.h"

#define DECODER  "build/clef-decoder"
#define VIDEO    "t/fixtures/video/clips/h264_160x120_30fps.mp4"
#define AUDIO    "t/fixtures/audio/clips/chirp16k.mp3"
#define LONG     "t/fixtures/audio/clips/omni_len_75s.mp3"

/* every probe's line: what the filter lets through, fails and kills;
 * 64 is CLEF_SANDBOX_THREADS */
static const char  expected[] =
    "thread: allowed\n"
    "memory: allowed\n"
    "open: failed with EACCES\n"
    "socket: killed by SIGSYS\n"
    "execve: killed by SIGSYS\n"
    "fork: killed by SIGSYS\n"
    "kill: killed by SIGSYS\n"
    "mmap-exec: killed by SIGSYS\n"
    "threads: 64 of 500 created, 436 failed with EAGAIN\n"
    "sigaction: killed by SIGSYS\n"
    "write-file: failed with EFBIG\n"
    "sendmsg-item: killed by SIGSYS\n"
    "sendmsg-sandbox: failed with EBADF\n";

/* the environments, the one CPU being the affinity one_cpu() sets */
static const char  *const  envs[] = {
    "", "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1",
    "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1"
};


/* This process (and what it starts) on the first CPU it may use; 0 when
 * it is, -1 when it cannot be. */
static int
one_cpu(cpu_set_t *was)
{
    cpu_set_t  one;
    int        i;

    if (sched_getaffinity(0, sizeof(*was), was) != 0) {
        return -1;
    }
    for (i = 0; i < CPU_SETSIZE && !CPU_ISSET(i, was); i++) {
    }
    CPU_ZERO(&one);
    CPU_SET(i, &one);
    return i < CPU_SETSIZE ? sched_setaffinity(0, sizeof(one), &one) : -1;
}


/* --sandbox-check's output in env (NAME=VALUE words, the rest of the
 * threads variables unset), into out[0..size). */
static void
sandbox_check(const char *env, char *out, size_t size)
{
    char    cmd[512];
    FILE   *p;
    size_t  n;

    snprintf(cmd, sizeof(cmd), "env -u OMP_NUM_THREADS -u "
             "OPENBLAS_NUM_THREADS %s " DECODER " --sandbox-check 2>&1",
             env);
    p = popen(cmd, "r");
    n = p != NULL ? fread(out, 1, size - 1, p) : 0;
    out[n] = '\0';
    if (p != NULL) {
        pclose(p);
    }
}


static void
test_check(const char *env, const char *cpus)
{
    char  out[4096];

    sandbox_check(env, out, sizeof(out));
    CHECK_STR(out, expected, "--sandbox-check%s%s%s: every probe as "
              "expected", env[0] ? " with " : "", env, cpus);
}


/* A video and an audio clip through a fresh decode process started in
 * this environment. */
static void
test_decodes(const char *how)
{
    clef_video_limits   lim;
    clef_video_config   vc;
    clef_audio_limits   al;
    clef_media_item     it;
    clef_error          err;
    float              *samples = NULL;
    int64_t             n = 0;
    char               *data;
    size_t              len;
    int                 rc;

    clef_decoder_stop();
    data = slurp(VIDEO, &len);
    clef_video_limits_default(&lim);
    clef_video_config_default(&vc);
    rc = data == NULL ? -1
         : clef_decoder_video((const uint8_t *) data, len, 0, &lim, &vc,
                              NULL, NULL, &it, &err);
    CHECK(rc == 0 && it.frames > 0, "%s: a video decodes in the sandbox "
          "(%s)", how, data == NULL ? "no fixture"
                       : rc == 0 ? "ok" : err.message);
    if (rc == 0) {
        clef_media_item_free(&it);
    }
    free(data);

    data = slurp(AUDIO, &len);
    clef_audio_limits_default(&al);
    rc = data == NULL ? -1
         : clef_decoder_audio((const uint8_t *) data, len, 0, &al, NULL,
                              NULL, &samples, &n, &err);
    CHECK(rc == 0 && n > 0, "%s: an audio clip decodes in the sandbox (%s)",
          how, data == NULL ? "no fixture" : rc == 0 ? "ok" : err.message);
    free(samples);
    free(data);
}


/* clef-decoder --serve with its control socket on fd 3, as the engine
 * starts it; *ctl is this side's end. */
static pid_t
start_serve(int *ctl)
{
    char   parent[32];
    pid_t  pid;
    int    sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        return -1;
    }
    snprintf(parent, sizeof(parent), "%d", (int) getpid());
    pid = fork();
    if (pid == 0) {
        if (dup2(sv[1], CLEF_DEC_FD) < 0) {
            _exit(127);
        }
        execl(DECODER, DECODER, "--serve", parent, (char *) NULL);
        _exit(127);
    }
    close(sv[1]);
    *ctl = sv[0];
    return pid;
}


/* The audio clip file through a child of the serve process on ctl; the
 * decoder's report of the child's end into *end.  0 when every step
 * went as the wire says. */
static int
serve_clip(int ctl, const char *file, clef_dec_status *end)
{
    clef_dec_request  rq;
    clef_dec_status   st;
    char             *data, buf[65536];
    size_t            len;
    int               ip[2], rc;

    data = slurp(file, &len);
    if (data == NULL || socketpair(AF_UNIX, SOCK_STREAM, 0, ip) != 0) {
        free(data);
        return -1;
    }
    memset(&rq, 0, sizeof(rq));
    rq.magic = CLEF_DEC_MAGIC;
    rq.kind = CLEF_MEDIA_AUDIO;
    rq.len = len;
    rq.n_files = 1;
    rq.lens[0] = len;
    clef_video_limits_default(&rq.limits);
    clef_video_config_default(&rq.video);
    clef_audio_limits_default(&rq.audio);
    rc = clef_dec_send_fd(ctl, &rq, sizeof(rq), ip[1]);
    close(ip[1]);
    if (rc == 0) {
        rc = clef_dec_read_all(ctl, &st, sizeof(st), NULL) != 0
             || st.what != CLEF_DEC_FORKED || st.pid <= 0
             || clef_dec_write_all(ip[0], data, len, NULL) != 0
             || shutdown(ip[0], SHUT_WR) != 0 ? -1 : 0;
    }
    /* its answer, to the end */
    while (rc == 0 && read(ip[0], buf, sizeof(buf)) > 0) {
    }
    close(ip[0]);
    free(data);
    if (rc != 0 || clef_dec_read_all(ctl, end, sizeof(*end), NULL) != 0) {
        return -1;
    }
    return end->magic == CLEF_DEC_MAGIC && end->what == CLEF_DEC_EXITED
           && end->pid == st.pid ? 0 : -1;
}


static void
test_wire(void)
{
    clef_dec_hello   h;
    clef_dec_status  end;
    pid_t            pid;
    int              ctl = -1, rc;

    CHECK(sizeof(clef_dec_status) == 24 && CLEF_DEC_VERSION == 4,
          "clef_dec_status: 24 bytes, with the child's CPU time and peak "
          "RSS (wire version 4: a record's images in one request)");
    pid = start_serve(&ctl);
    rc = pid > 0 && clef_dec_read_all(ctl, &h, sizeof(h), NULL) == 0
         && h.version == CLEF_DEC_VERSION ? 0 : -1;
    CHECK(rc == 0, "clef-decoder --serve says hello, version %d",
          CLEF_DEC_VERSION);
    rc = rc == 0 ? serve_clip(ctl, LONG, &end) : -1;
    CHECK(rc == 0 && WIFEXITED(end.wait_status)
          && WEXITSTATUS(end.wait_status) == 0,
          "a 75 s clip through the serve process: forked, answered, exited "
          "0");
    CHECK(rc == 0 && end.cpu_ms > 0 && end.cpu_ms < 60000
          && end.max_rss_kib > 1024 && end.max_rss_kib < (4u << 20),
          "its end reports its CPU time (%u ms) and peak RSS (%u KiB)",
          rc == 0 ? end.cpu_ms : 0, rc == 0 ? end.max_rss_kib : 0);
    if (ctl >= 0) {
        close(ctl);
    }
    if (pid > 0) {
        waitpid(pid, NULL, 0);
    }
}


int
main(void)
{
    cpu_set_t  was;
    char       path[4096];
    size_t     i;
    int        one;

    if (access(DECODER, X_OK) != 0) {
        printf("1..0 # SKIP no %s (a build made with FFMPEG=no)\n",
               DECODER);
        return 0;
    }
    if (realpath(DECODER, path) != NULL) {
        setenv("CLEF_DECODER", path, 1);
    }
    test_wire();
    for (i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
        test_check(envs[i], "");
    }
    one = one_cpu(&was);
    CHECK(one == 0, "this test runs on one CPU");
    test_check("", ", on one CPU");
    test_check("OMP_NUM_THREADS=1", ", on one CPU");
    if (one == 0) {
        sched_setaffinity(0, sizeof(was), &was);
    }

    /* the decode process inherits this process's environment and CPUs */
    unsetenv("OPENBLAS_NUM_THREADS");
    setenv("OMP_NUM_THREADS", "1", 1);
    test_decodes("OMP_NUM_THREADS=1");
    unsetenv("OMP_NUM_THREADS");
    if (one_cpu(&was) == 0) {
        test_decodes("one CPU");
        sched_setaffinity(0, sizeof(was), &was);
    }
    test_decodes("a plain environment");
    clef_decoder_stop();
    return check_done();
}
