/*
 * Whether a process still exists: the queue asks it of a record's owner
 * worker, the engine of its predecessor, the keeper of its engine.
 */
#ifndef CLEF_PID_H
#define CLEF_PID_H

#include <errno.h>
#include <signal.h>
#include <sys/types.h>

static inline int
clef_pid_alive(pid_t pid)
{
    /* EPERM: it exists but runs as another user */
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

#endif
