/*
 * A shell command from the C unit tests (making a checkpoint with
 * build/clef mkmodel, removing a scratch directory).
 */
#ifndef CLEF_TEST_SHELL_H
#define CLEF_TEST_SHELL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Runs the formatted command with system(); its exit status, 128 when it
 * did not exit, -1 when it could not start. */
static int __attribute__((format(printf, 1, 2), unused))
sh(const char *fmt, ...)
{
    char     cmd[4096];
    va_list  ap;
    int      st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    return st == -1 ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : 128);
}

#endif
