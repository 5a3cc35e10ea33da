/* check.h: `ohbox check`, a consistency check of a store and of the state
 * of its sandboxes, which repairs what it can.
 *
 * Store (checked with locks/store held exclusively, as GC does, so nothing
 * it finds half-done belongs to a live ohbox process):
 *   corrupt-blob         a blob whose content does not hash to its name
 *   stray-file           a file under blobs/ that is not a blob
 *   partial-download     ingest/<hex>.partial of an interrupted pull
 *   temporary            tmp/ leftovers: half-unpacked layers (layer-*)
 *   build-temporary      build/closures/tmp-PID of a dead build
 *   stale-lock           a per-object lock file whose object never came
 *   corrupt-image-record images/<hex>.json that is not a valid record
 *   missing-layer        an image's layer not unpacked while its blob is there
 *   incomplete-image     an image missing a blob (not repairable: pull again)
 *   dangling-name        a name in refs.json for an image that does not exist
 *   unreferenced-blob    a blob no image uses (a killed pull or build)
 *   unreferenced-layer   an unpacked layer no image and no sandbox uses
 *   orphan-sandbox-layer ROOT/sandboxes/<id> whose sandbox state is gone
 *   orphan-cgroup        the cgroup of such a sandbox (its processes are killed)
 *
 * State (STATE_ROOT, see sandbox.h):
 *   half-created-sandbox STATE/.new-* whose creator died
 *   dead-sandbox         a sandbox whose monitor died before it finished
 *   leftover-cgroup      the cgroup of an exited sandbox
 *   leftover-network     leases, nft elements, veth of an exited sandbox
 *   leftover-veth        the host veth of an exited or removed sandbox
 *   dangling-sandbox-name STATE/names/<name> for a sandbox that is gone
 *   stale-lease          an address or port lease whose sandbox (in STATE) is gone
 *   stale-id-lease       root's id range leased to a sandbox (in STATE) that is gone
 *   leftover-mount       a mount below the store or the state directory
 *
 * Cgroups and veths are host-wide and shared by every store: only those of
 * sandboxes of this state directory are looked at, never another's.
 *
 * Repairs use the code the other commands use: GC's removals for the store,
 * ohbox_state_reconcile() (what ps, rm and wait do) for dead sandboxes. */
#ifndef OHBOX_CHECK_H
#define OHBOX_CHECK_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"
#include "store/store.h"

struct ohbox_runtime;

/* Checks the store S and (when RT is not NULL) the sandboxes of RT; with
 * REPAIR fixes what can be fixed. *RET gets
 *   {"findings": [{"kind", "where", "what", "repairable", "repaired",
 *                  "repair_error" (when a repair failed), "hint" (optional)}],
 *    "checked": {"blobs", "layers", "images", "names", "sandboxes"},
 *    "found": N, "repaired": N, "remaining": N}
 * "remaining" counts the findings not repaired (all of them without REPAIR).
 * Returns -1 only when the check itself could not run. */
int ohbox_check (struct ohbox_store *s, struct ohbox_runtime *rt, bool repair, json_t **ret, ohbox_error_t *err);

/* ---- shared by check.c and check_state.c ---- */
struct ohbox_check_ctx
{
  struct ohbox_store *s;
  struct ohbox_runtime *rt;
  bool repair;
  json_t *findings;
  json_t *checked; /* counts of what was looked at */
};

/* Records a finding; returns it (borrowed) for ohbox_check_repaired(). */
json_t *ohbox_check_add (struct ohbox_check_ctx *c, const char *kind, const char *where, bool repairable,
                         const char *fmt, ...) __attribute__ ((format (printf, 5, 6)));
/* Records the result of a repair of F (R < 0: *ERR says why; released). */
void ohbox_check_repaired (json_t *f, int r, ohbox_error_t *err);
int ohbox_check_state (struct ohbox_check_ctx *c, ohbox_error_t *err);
/* The cgroup (its processes) and host veth of sandbox ID, whose state is
 * gone (its writable layer says so): reported, removed with repair. */
void ohbox_check_sandbox_gone (struct ohbox_check_ctx *c, const char *id);

#endif
