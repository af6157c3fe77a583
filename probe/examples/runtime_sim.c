/* A toy runtime's allocator loop instrumented with spill-probe: a chain of
 * ops over a 1 MiB scratchpad. Each op reads the previous output and every
 * 4th op also a skip input from 5 ops back; when the scratchpad is full the
 * oldest resident tensor that the op does not need is evicted, and an
 * evicted tensor is reloaded when an op needs it again.
 * Usage: runtime_sim OUT.jsonl [OPS] [exit]
 * With "exit", the program calls exit() without spill_probe_close(): the
 * probe flushes the stream at process exit. PACE_US=N in the environment
 * sleeps N microseconds after each op, to watch the stream grow live
 * (spillscope view OUT.jsonl --watch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "spill_probe.h"

#define CAP (1u << 20)
#define MAXT 4096
#define TBYTES (256u << 10)

typedef struct { char name[32]; int resident, live; } tensor;
static tensor t[MAXT];
static int n;

static uint64_t used(void) {
    uint64_t u = 0;
    for (int j = 0; j < n; j++) if (t[j].resident) u += TBYTES;
    return u;
}

/* Evict the oldest resident tensors other than a and b until BYTES fit. */
static void make_room(uint64_t bytes, int a, int b) {
    uint64_t u = used();
    for (int j = 0; j < n && u + bytes > CAP; j++) {
        if (!t[j].resident || j == a || j == b) continue;
        spill_probe_evict(t[j].name, TBYTES, "sram", -1);
        t[j].resident = 0;
        u -= TBYTES;
    }
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s OUT.jsonl [OPS] [exit]\n", argv[0]); return 2; }
    int ops = argc > 2 ? atoi(argv[2]) : 40;
    const char *pace_env = getenv("PACE_US");
    int pace_us = pace_env ? atoi(pace_env) : 0;
    if (ops > MAXT) ops = MAXT;
    if (spill_probe_open(argv[1]) != 0) return 1; /* the probe said why */
    spill_probe_pool("sram", CAP, 256);
    for (int i = 0; i < ops; i++) {
        char op[32];
        snprintf(op, sizeof op, "op%d", i);
        spill_probe_op_begin(op);
        int a = n - 1, b = (i % 4 == 3) ? n - 5 : -1;
        int need[2] = { a, b };
        for (int k = 0; k < 2; k++) {
            int j = need[k];
            if (j < 0 || !t[j].live || t[j].resident) continue;
            make_room(TBYTES, a, b);
            spill_probe_reload(t[j].name, TBYTES, "sram", -1);
            t[j].resident = 1;
        }
        make_room(TBYTES, a, b);
        snprintf(t[n].name, sizeof t[n].name, "t%d", n);
        spill_probe_alloc(t[n].name, TBYTES, "sram", -1);
        t[n].resident = t[n].live = 1;
        n++;
        /* Tensors no later op reads (older than 5 back) are freed. */
        for (int j = 0; j < n - 5; j++) {
            if (!t[j].live) continue;
            if (t[j].resident) spill_probe_free(t[j].name, "sram");
            t[j].live = t[j].resident = 0;
        }
        spill_probe_op_end();
        if (pace_us > 0) usleep((useconds_t)pace_us);
    }
    if (argc > 3 && strcmp(argv[3], "exit") == 0) exit(0);
    int64_t dropped = spill_probe_close();
    printf("ops %d dropped %lld\n", ops, (long long)dropped);
    return dropped == 0 ? 0 : 1;
}
