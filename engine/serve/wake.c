/*
 * Worker wake-up sockets (see wake.h).
 */
#include "serve/wake.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* what travels: the record, not the pid */
typedef struct {
    uint32_t  slot;
    uint32_t  seq;
} wake_msg;


int
clef_wake_addr(void *sockaddr_un, uint64_t zone_id, pid_t pid)
{
    struct sockaddr_un  *sa = sockaddr_un;
    int                  n;

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    /* abstract namespace: sun_path[0] = 0, no file, gone with the socket */
    n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
                 "clef-%016llx-%d", (unsigned long long) zone_id, (int) pid);
    return (int) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) n);
}


int
clef_wake_listen(uint64_t zone_id, pid_t pid)
{
    struct sockaddr_un  sa;
    int                 fd, len, e;

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        return -1;
    }
    len = clef_wake_addr(&sa, zone_id, pid);
    if (bind(fd, (struct sockaddr *) &sa, (socklen_t) len) == -1) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}


int
clef_wake_sender(void)
{
    return socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}


void
clef_wake_send(int fd, uint64_t zone_id, const clef_wake_note *notes, int n,
    _Atomic uint64_t *lost)
{
    struct sockaddr_un  sa;
    wake_msg            m;
    int                 i, len;

    for (i = 0; i < n; i++) {
        if (notes[i].pid <= 0) {
            continue;
        }
        m.slot = notes[i].slot;
        m.seq = notes[i].seq;
        len = clef_wake_addr(&sa, zone_id, notes[i].pid);
        if (sendto(fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL,
                   (struct sockaddr *) &sa, (socklen_t) len) == -1
            && errno == EAGAIN && lost != NULL)
        {
            /* the worker rescans once it sees the counter move */
            atomic_fetch_add(lost, 1);
        }
        /* any other error: the worker is gone (its records get reaped) */
    }
}


int
clef_wake_recv(int fd, clef_wake_note *notes, int max)
{
    wake_msg  m;
    ssize_t   got;
    int       n = 0;

    while (n < max) {
        got = recv(fd, &m, sizeof(m), MSG_DONTWAIT);
        if (got < 0) {
            break;
        }
        if (got != sizeof(m)) {
            continue;
        }
        notes[n].pid = 0;
        notes[n].slot = m.slot;
        notes[n].seq = m.seq;
        n++;
    }
    return n;
}
