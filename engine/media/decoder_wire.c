/*
 * The decode process's wire (see decoder_wire.h).
 */
#include "media/decoder_wire.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>


int
clef_dec_write_all(int fd, const void *buf, size_t len)
{
    const char  *p = buf;
    ssize_t      n;

    while (len > 0) {
        /* no SIGPIPE when the other side is gone */
        n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
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
clef_dec_read_all(int fd, void *buf, size_t len)
{
    char     *p = buf;
    ssize_t   n;

    while (len > 0) {
        n = read(fd, p, len);
        if (n < 0 && errno == EINTR) {
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
