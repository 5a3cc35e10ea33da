/* pool.c: see pool.h. */
#include "config.h"
#include "pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/utils.h"

struct pool
{
  pthread_mutex_t lock;
  pthread_cond_t cond;
  void **ring; /* CAPACITY slots: the bound on queued work */
  unsigned int capacity, head, len;
  bool stopping;
  pool_fn run, cancel;
  void *arg;
  unsigned int n_threads;
  pthread_t *threads;
};

static void *
worker_main (void *arg)
{
  struct pool *p = arg;
  pthread_mutex_lock (&p->lock);
  for (;;)
    {
      while (p->len == 0 && !p->stopping)
        pthread_cond_wait (&p->cond, &p->lock);
      if (p->stopping)
        break;
      void *job = p->ring[p->head];
      p->head = (p->head + 1) % p->capacity;
      p->len--;
      pthread_mutex_unlock (&p->lock);
      p->run (job, p->arg);
      pthread_mutex_lock (&p->lock);
    }
  pthread_mutex_unlock (&p->lock);
  return NULL;
}

int
pool_start (unsigned int workers, unsigned int capacity, size_t stack_size, pool_fn run, pool_fn cancel, void *arg,
            struct pool **out, ohbox_error_t *err)
{
  struct pool *p = xcalloc (1, sizeof (*p));
  pthread_mutex_init (&p->lock, NULL);
  pthread_cond_init (&p->cond, NULL);
  p->capacity = capacity ? capacity : 1;
  p->ring = xcalloc (p->capacity, sizeof (*p->ring));
  p->run = run;
  p->cancel = cancel;
  p->arg = arg;
  p->threads = xcalloc (workers ? workers : 1, sizeof (*p->threads));
  pthread_attr_t attr;
  pthread_attr_init (&attr);
  if (stack_size)
    pthread_attr_setstacksize (&attr, stack_size);
  int ret = 0;
  for (unsigned int i = 0; i < (workers ? workers : 1); i++)
    {
      ret = pthread_create (&p->threads[i], &attr, worker_main, p);
      if (ret != 0)
        break;
      p->n_threads++;
    }
  pthread_attr_destroy (&attr);
  if (ret != 0)
    {
      pool_stop (p);
      return ohbox_error (err, OHBOX_ERR_GENERIC, ret, "start the %u worker threads", workers);
    }
  *out = p;
  return 0;
}

int
pool_submit (struct pool *p, void *job, void (*accepted) (void *job))
{
  pthread_mutex_lock (&p->lock);
  if (p->stopping || p->len == p->capacity)
    {
      pthread_mutex_unlock (&p->lock);
      return -1;
    }
  if (accepted)
    accepted (job);
  p->ring[(p->head + p->len) % p->capacity] = job;
  p->len++;
  pthread_cond_signal (&p->cond);
  pthread_mutex_unlock (&p->lock);
  return 0;
}

void
pool_stop (struct pool *p)
{
  if (p == NULL)
    return;
  pthread_mutex_lock (&p->lock);
  p->stopping = true;
  pthread_cond_broadcast (&p->cond);
  while (p->len)
    {
      void *job = p->ring[p->head];
      p->head = (p->head + 1) % p->capacity;
      p->len--;
      if (p->cancel)
        p->cancel (job, p->arg);
    }
  pthread_mutex_unlock (&p->lock);
  for (unsigned int i = 0; i < p->n_threads; i++)
    pthread_join (p->threads[i], NULL);
  pthread_cond_destroy (&p->cond);
  pthread_mutex_destroy (&p->lock);
  free (p->ring);
  free (p->threads);
  free (p);
}
