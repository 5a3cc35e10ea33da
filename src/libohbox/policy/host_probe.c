/* host_probe.c: the host's abilities the run policy depends on
 * (run_policy.h). Cheap: two $PATH lookups and, without a runtime, one
 * cgroup detection (with one, its cached detection, which the run uses
 * anyway). */
#include "config.h"
#include "policy/run_policy.h"

#include <string.h>
#include <unistd.h>

#include "network/network.h"
#include "sandbox/sandbox_internal.h"
#include "common/utils.h"

static void
from_cgroup_host (struct ohbox_host_abilities *h, const struct ohbox_cgroup_host *cg)
{
  h->cgroup_mode = cg->mode;
  h->cgroup_limits = !cg->disabled && cg->mode != OHBOX_CGROUP_MODE_NONE;
  h->cgroup_warning = cg->warning ? xstrdup (cg->warning) : NULL;
}

int
ohbox_host_probe (struct ohbox_runtime *rt, struct ohbox_host_abilities *h, ohbox_error_t *err)
{
  memset (h, 0, sizeof *h);
  h->euid = geteuid ();
  h->pasta = ohbox_pasta_available ();
  h->slirp4netns = ohbox_slirp_available ();
  if (rt)
    {
      const struct ohbox_cgroup_host *cg;
      if (ohbox_runtime_cgroup_host (rt, &cg, err) < 0)
        return -1;
      from_cgroup_host (h, cg);
      return 0;
    }
  struct ohbox_cgroup_host cg;
  if (ohbox_cgroup_detect (NULL, &cg, err) < 0)
    return -1;
  from_cgroup_host (h, &cg);
  ohbox_cgroup_host_release (&cg);
  return 0;
}

void
ohbox_host_abilities_clear (struct ohbox_host_abilities *h)
{
  free (h->cgroup_warning);
  memset (h, 0, sizeof *h);
}
