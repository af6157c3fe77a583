/* spill_probe.h: generated from probe/src/lib.rs (C_DECLARATIONS); do not edit.
* Records on-chip memory events as the spillscope JSONL stream, off the
* hot path: each call copies one record into the calling thread's
* lock-free ring; a background thread writes whole lines. Thread-safe.
* Link: libspill_probe.a (or .so) and -lpthread -ldl -lm. */
#ifndef SPILL_PROBE_H
#define SPILL_PROBE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Open PATH for appending; 0 on success, -1 on error (said on stderr).
 * Flushed at exit, and on SIGSEGV/SIGBUS/SIGABRT/SIGILL/SIGFPE (then the
 * handler that was installed before this call runs). Rings live in a ring
 * file (/dev/shm or SPILL_PROBE_RING_DIR): after SIGKILL or the OOM killer,
 * the next open of PATH (or `spillscope import PATH`) recovers their events.
 * Ring per thread: SPILL_PROBE_RING_RECORDS (default 65536). */
int spill_probe_open(const char *path);

/* Declare POOL's on-chip capacity and alignment (else: the most it held). */
void spill_probe_pool(const char *pool, uint64_t capacity_bytes, uint64_t alignment);

/* TENSOR placed on chip; OFFSET < 0 if unknown. */
void spill_probe_alloc(const char *tensor, uint64_t bytes, const char *pool, int64_t offset);

/* TENSOR left the chip for good. */
void spill_probe_free(const char *tensor, const char *pool);

/* TENSOR pushed out to DRAM (needed again later). */
void spill_probe_evict(const char *tensor, uint64_t bytes, const char *pool, int64_t offset);

/* An evicted TENSOR came back. */
void spill_probe_reload(const char *tensor, uint64_t bytes, const char *pool, int64_t offset);

/* An evicted TENSOR was recomputed instead of reloaded. */
void spill_probe_recompute(const char *tensor, uint64_t bytes, const char *pool, int64_t offset);

/* An operator starts on this thread. */
void spill_probe_op_begin(const char *name);

/* The innermost open operator of this thread ends. */
void spill_probe_op_end(void);

/* Drain, flush, close; returns the dropped count (-1 on I/O error). */
int64_t spill_probe_close(void);

#ifdef __cplusplus
}
#endif

#endif /* SPILL_PROBE_H */
