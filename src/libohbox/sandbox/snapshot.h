/* snapshot.h: an image's layers composed into a sandbox's root filesystem.
 *
 * Layout: the read-only layers are the store's unpacked layer directories
 * (ROOT/layers/sha256/<hex>, in overlayfs lower-dir form); each sandbox gets
 * ROOT/sandboxes/<id>/{upper,work}, ROOT/sandboxes/<id>/layers, the list
 * of DiffIDs it uses, which the store's GC reads (ohbox_snapshot_layers_in_use)
 * so that a layer is never removed under a sandbox, even after `ohbox rmi`,
 * and ROOT/sandboxes/<id>/state, a link to the sandbox's state directory
 * (for `ohbox check`: the layer of a sandbox whose state is gone leaked).
 *
 * Mounting uses the new mount API only (fsopen/fsconfig/fsmount): the result
 * is a detached mount (an fd) that the sandbox's child attaches in its own
 * mount namespace, so nothing ever appears in the host's mount table.
 * Layers are passed one by one with "lowerdir+" (Linux >= 6.8), which has
 * no limit on their number (the legacy "lowerdir=a:b:c" option is bounded by
 * one page for mount(2) and 256 bytes for fsconfig); on older kernels the
 * layers go as "/proc/self/fd/N" paths in one "lowerdir" string, which holds
 * about 15 layers: more is an OHBOX_ERR_UNSUPPORTED error naming the kernel.
 *
 * User namespaces: with USERNS_FD >= 0 the caller (host root) clones each
 * layer as a detached mount idmapped through that user namespace
 * (open_tree OPEN_TREE_CLONE + mount_setattr MOUNT_ATTR_IDMAP), so files
 * owned by host uid 0 in the store show up as owned by the sandbox's root;
 * the upper dir is created owned by the sandbox's mapped root. The layers on
 * disk stay owned by 0 and are shared by every sandbox, whatever its range.
 * Rootless callers mount from inside the sandbox's user namespace instead
 * (OHBOX_SNAPSHOT_USERXATTR: overlay's "userxattr", whiteouts and opaque
 * dirs as an unprivileged store writes them).
 *
 * Fallback where overlayfs cannot be mounted (no overlay module, or a
 * filesystem overlay refuses as upper): a single-layer image runs from a
 * read-only bind mount of its layer (*RET_READ_ONLY is set: the sandbox gets
 * a read-only rootfs; use --tmpfs for writable paths); an image with more
 * layers fails with OHBOX_ERR_UNSUPPORTED. The layers are never copied. */
#ifndef OHBOX_SNAPSHOT_H
#define OHBOX_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "store/store.h"

/* Bounds what an image may ask for (the manifest parser bounds it too). */
#define OHBOX_SNAPSHOT_MAX_LAYERS 500

#define OHBOX_SNAPSHOT_USERXATTR (1u << 0) /* rootless: mount inside the user namespace */
#define OHBOX_SNAPSHOT_READ_ONLY (1u << 1) /* mount the rootfs read-only (--read-only) */

/* --storage-size: the smallest writable layer (ext4's own needs). */
#define OHBOX_SNAPSHOT_MIN_SIZE (16 << 20)

struct ohbox_snapshot
{
  char *id;
  char *dir;        /* ROOT/sandboxes/<id> */
  char *upper;      /* ROOT/sandboxes/<id>/upper (bounded: /proc/self/fd/N/upper) */
  char *work;       /* ROOT/sandboxes/<id>/work (bounded: /proc/self/fd/N/work) */
  int upper_mnt_fd; /* bounded: the detached mount holding upper and work, else -1 */
  char **lowers;    /* layer dirs, top-most first (overlay order) */
  size_t n_lowers;
};

/* Creates ROOT/sandboxes/ID/{upper,work,layers} for the layers DIFF_IDS
 * (base first, as in the image config), the upper dir owned by UID:GID,
 * and ROOT/sandboxes/ID/state, a symbolic link to OWNER, the absolute path
 * of the sandbox's state directory (the layer's sandbox is gone when that
 * is: ohbox_snapshot_sandbox_gone). Every layer must be present in the
 * store. UPPER_SIZE > 0: the writable layer holds at most that many bytes
 * (snapshot_size.c; root only). */
int ohbox_snapshot_prepare (struct ohbox_store *s, const char *id, const char *owner, char *const *diff_ids,
                            size_t n_diff_ids, uid_t uid, gid_t gid, uint64_t upper_size, struct ohbox_snapshot **ret,
                            ohbox_error_t *err);
/* Whether the sandbox whose writable layer is ROOT/sandboxes/ID is gone:
 * 1 when the state directory the layer names no longer exists, 0 when it
 * does, -1 when the layer names none (made by an older ohbox, or not a
 * sandbox's layer). *RET_OWNER (may be NULL) gets that directory's path
 * (for 0 and 1). The state root of the caller plays no part: a sandbox
 * started with another OHBOX_RUNROOT or XDG_RUNTIME_DIR is not taken for
 * gone. */
int ohbox_snapshot_sandbox_gone (struct ohbox_store *s, const char *id, char **ret_owner);
/* snapshot_size.c: SNAP's upper and work on a filesystem of SIZE bytes of
 * their own, in DIRFD (SNAP->dir), the upper owned by UID:GID. */
int ohbox_snapshot_bound_upper (struct ohbox_snapshot *snap, int dirfd, uint64_t size, uid_t uid, gid_t gid,
                                ohbox_error_t *err);
void ohbox_snapshot_free (struct ohbox_snapshot *snap);

/* Builds the root filesystem as a detached mount and returns its fd in
 * *RET_FD (O_CLOEXEC). USERNS_FD: see above (-1: no idmapping). FLAGS:
 * OHBOX_SNAPSHOT_*. *RET_READ_ONLY (may be NULL) tells whether the fallback
 * made it read-only. */
int ohbox_snapshot_mount (const struct ohbox_snapshot *snap, int userns_fd, unsigned flags, int *ret_fd,
                          bool *ret_read_only, ohbox_error_t *err);

/* Removes ROOT/sandboxes/ID (missing is fine). */
int ohbox_snapshot_remove (struct ohbox_store *s, const char *id, ohbox_error_t *err);

/* For the store's GC: calls FN with every DiffID a sandbox of this store
 * uses (a sandbox being prepared included: its list is written first).
 * FN returning < 0 stops the walk and is returned. */
int ohbox_snapshot_layers_in_use (struct ohbox_store *s, int (*fn) (const char *diff_id, void *data), void *data,
                                  ohbox_error_t *err);

#endif
