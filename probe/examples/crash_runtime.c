/* A runtime that dies mid-run, to test that the probe's events survive it.
 *
 *   crash_runtime STREAM COUNTDIR MODE THREADS EVENTS CRASH_AT
 *
 * THREADS threads each record EVENTS allocs named "tI/K" (K = 0, 1, ...)
 * with bytes = K. Before recording event K, thread I writes K + 1 to
 * COUNTDIR/countI (so after any death, event K was recorded only if the
 * count says at least K + 1, and was certainly recorded if it says K + 2).
 * When thread 0 reaches event CRASH_AT, MODE decides:
 *   kill     raise SIGKILL (nothing in the process runs after it)
 *   segv     write through a null pointer (the default SIGSEGV action)
 *   handler  the same, with the runtime's own SIGSEGV handler installed
 *            before spill_probe_open: it writes COUNTDIR/handler and exits 42
 *   abort    abort()
 *   exit     no crash: every thread finishes, then exit(0) without
 *            spill_probe_close (the probe flushes at exit)
 * PACE_US=N in the environment sleeps N microseconds every 1,000 events
 * (to watch a run live).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spill_probe.h"

static const char *countdir;
static const char *mode;
static long events, crash_at, pace_us;

static void runtime_handler(int sig) {
    (void)sig;
    char path[4096];
    snprintf(path, sizeof path, "%s/handler", countdir); /* test only */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        (void)write(fd, "ran\n", 4);
        close(fd);
    }
    _exit(42);
}

static void crash(void) {
    if (strcmp(mode, "kill") == 0) {
        raise(SIGKILL);
    } else if (strcmp(mode, "segv") == 0 || strcmp(mode, "handler") == 0) {
        volatile int *p = NULL;
        *p = 1;
    } else if (strcmp(mode, "abort") == 0) {
        abort();
    }
}

static void *run(void *arg) {
    long me = (long)(intptr_t)arg;
    char path[4096], name[64];
    snprintf(path, sizeof path, "%s/count%ld", countdir, me);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
    for (long k = 0; k < events; k++) {
        if (me == 0 && k == crash_at) {
            crash();
        }
        char num[32];
        int n = snprintf(num, sizeof num, "%020ld\n", k + 1);
        if (pwrite(fd, num, (size_t)n, 0) != n) {
            perror("pwrite");
            exit(2);
        }
        if (pace_us > 0 && k % 1000 == 999) {
            usleep((useconds_t)pace_us);
        }
        snprintf(name, sizeof name, "t%ld/%ld", me, k);
        spill_probe_alloc(name, (uint64_t)k, "sram", (int64_t)(k % 4096) * 64);
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s STREAM COUNTDIR MODE THREADS EVENTS CRASH_AT\n", argv[0]);
        return 2;
    }
    countdir = argv[2];
    mode = argv[3];
    long threads = atol(argv[4]);
    events = atol(argv[5]);
    crash_at = atol(argv[6]);
    pace_us = getenv("PACE_US") ? atol(getenv("PACE_US")) : 0;
    if (strcmp(mode, "handler") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = runtime_handler;
        sigaction(SIGSEGV, &sa, NULL);
    }
    if (spill_probe_open(argv[1]) != 0) {
        return 1;
    }
    spill_probe_pool("sram", 1 << 20, 64);
    pthread_t t[64];
    if (threads < 1 || threads > 64) {
        return 2;
    }
    for (long i = 0; i < threads; i++) {
        pthread_create(&t[i], NULL, run, (void *)(intptr_t)i);
    }
    for (long i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
    }
    return 0; /* exit without spill_probe_close: flushed at exit */
}
