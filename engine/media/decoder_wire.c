/*
 * The decode process's wire (see decoder_wire.h).
 */
#include "media/decoder_wire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef union {
    char            buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr  align;
} one_fd;


/* m for buf[0..len) and room for one descriptor in u */
static void
message(struct msghdr *m, struct iovec *iov, one_fd *u, void *buf,
    size_t len)
{
    memset(m, 0, sizeof(*m));
    memset(u, 0, sizeof(*u));
    iov->iov_base = buf;
    iov->iov_len = len;
    m->msg_iov = iov;
    m->msg_iovlen = 1;
    m->msg_control = u->buf;
    m->msg_controllen = sizeof(u->buf);
}


int
clef_dec_write_all(int fd, const void *buf, size_t len, const clef_dec_io *io)
{
    const char  *p = buf;
    ssize_t      n;
    int          waits = io != NULL && io->wait != NULL;

    while (len > 0) {
        if (waits && io->wait(fd, POLLOUT, io->ctx) != 1) {
            return -1;
        }
        /* no SIGPIPE when the other side is gone */
        n = io != NULL && io->plain_write
            ? write(fd, p, len)
            : send(fd, p, len, MSG_NOSIGNAL | (waits ? MSG_DONTWAIT : 0));
        if (n < 0 && (errno == EINTR || (waits && errno == EAGAIN))) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }
    return 0;
}


int
clef_dec_read_all(int fd, void *buf, size_t len, const clef_dec_io *io)
{
    char     *p = buf;
    ssize_t   n;
    int       waits = io != NULL && io->wait != NULL;

    while (len > 0) {
        if (waits && io->wait(fd, POLLIN, io->ctx) != 1) {
            return -1;
        }
        n = read(fd, p, len);
        if (n < 0 && (errno == EINTR || (waits && errno == EAGAIN))) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }
    return 0;
}


int
clef_dec_send_fd(int sock, const void *buf, size_t len, int fd)
{
    struct msghdr    m;
    struct iovec     iov;
    struct cmsghdr  *c;
    one_fd           u;
    ssize_t          n;

    message(&m, &iov, &u, (void *) buf, len);
    c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    do {
        n = sendmsg(sock, &m, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t) len ? 0 : -1;
}


ssize_t
clef_dec_recv_fd(int sock, void *buf, size_t len, int flags, int *fd)
{
    struct msghdr    m;
    struct iovec     iov;
    struct cmsghdr  *c;
    one_fd           u;
    ssize_t          n;

    *fd = -1;
    message(&m, &iov, &u, buf, len);
    do {
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | flags);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        return n;
    }
    c = CMSG_FIRSTHDR(&m);
    if (c == NULL || c->cmsg_level != SOL_SOCKET
        || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
    {
        return -1;
    }
    memcpy(fd, CMSG_DATA(c), sizeof(int));
    return n;
}
