/* pool.h: a fixed pool of worker threads fed by a bounded queue.  The
 * threads are created once, at startup: serving a request never creates a
 * task, so a fork bomb holding every task the sandbox's pids limit allows
 * cannot stop the executor from answering (issue 8). */
#ifndef OHBOX_EXECUTOR_POOL_H
#define OHBOX_EXECUTOR_POOL_H

#include <stddef.h>

#include "common/error.h"

struct pool;

/* RUN (JOB, ARG) runs a job on a worker; CANCEL (JOB, ARG) is called for
 * the jobs still queued when the pool stops. */
typedef void (*pool_fn) (void *job, void *arg);

int pool_start (unsigned int workers, unsigned int capacity, size_t stack_size, pool_fn run, pool_fn cancel, void *arg,
                struct pool **out, ohbox_error_t *err);
/* Queues JOB.  ACCEPTED (JOB), if given, is called under the queue's lock
 * once the job is accepted and before any worker can take it.  Returns 0,
 * or -1 when the queue is full or the pool is stopping (nothing called). */
int pool_submit (struct pool *p, void *job, void (*accepted) (void *job));
/* Cancels the queued jobs, waits for the running ones, joins the workers. */
void pool_stop (struct pool *p);

#endif
