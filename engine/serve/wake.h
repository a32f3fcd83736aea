/*
 * Wake-ups from the engine (and the keeper) to nginx workers: one abstract
 * unix datagram socket per worker, named after the zone and the worker's
 * pid, registered in the worker's own event loop (docs/architecture.md §1).  Each
 * datagram names the record that finished (slot and sequence), so a
 * worker finishes exactly that request instead of scanning all of its
 * pending ones.
 *
 * Sending never blocks.  A datagram that the worker's socket cannot take
 * (its queue is full) is counted in the zone's wake_lost counter; a worker
 * that sees the counter move scans all of its pending requests once, so a
 * lost wake-up delays an answer by one scan, never forever.
 */
#ifndef CLEF_WAKE_H
#define CLEF_WAKE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t     pid;       /* the owner to wake; 0: nobody */
    uint32_t  slot;
    uint32_t  seq;
} clef_wake_note;

/* Fills an abstract AF_UNIX address; returns its length. */
int  clef_wake_addr(void *sockaddr_un, uint64_t zone_id, pid_t pid);

/* A socket bound to this process's address (non-blocking, close-on-exec);
 * -1 with errno. */
int  clef_wake_listen(uint64_t zone_id, pid_t pid);

/* A socket to send from (non-blocking, close-on-exec); -1 with errno. */
int  clef_wake_sender(void);

/* Sends each note with a pid to its owner; counts the ones its owner's
 * socket could not take in *lost. */
void clef_wake_send(int fd, uint64_t zone_id, const clef_wake_note *notes,
    int n, _Atomic uint64_t *lost);

/* Reads up to max pending notes (their pid is 0); returns how many. */
int  clef_wake_recv(int fd, clef_wake_note *notes, int max);

#endif
