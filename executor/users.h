/* users.h: the sandbox user, read from and added to /etc/passwd and
 * /etc/group directly (no NSS; users.c says why). */
#ifndef OHBOX_EXECUTOR_USERS_H
#define OHBOX_EXECUTOR_USERS_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

struct user_info
{
  char *name;
  uid_t uid;
  gid_t gid;
  char *home;
};

/* 1 and *OUT filled when /etc/passwd has the user, 0 otherwise. */
int users_by_name (const char *name, struct user_info *out);
int users_by_uid (uid_t uid, struct user_info *out);
void user_info_release (struct user_info *u);
/* The supplementary groups of NAME from /etc/group, GID first; at most MAX.
 * Returns how many. */
int users_groups (const char *name, gid_t gid, gid_t *groups, int max);
/* In a child the executor forked to run a program (async-signal-safe calls
 * only: the server is multi-threaded): nothing blocked, every signal at its
 * default, a session of its own. */
void users_child_new_session (void);
/* Then, in that child, its descriptors below KEEP_FDS in place: the others
 * closed, the user's identity (GROUPS, GID, UID) when SWITCH_USER, and DIR as
 * working directory (/ when DIR is gone); -1 when a step fails. */
int users_child_become (unsigned int keep_fds, bool switch_user, const gid_t *groups, int ngroups, gid_t gid, uid_t uid,
                        const char *dir);
/* Appends NAME with UID (group 0, home /home/NAME, shell /bin/bash) to
 * /etc/passwd (and /etc/shadow when it exists), adds it to group `sudo`
 * and creates the home, as `useradd -rm -d /home/NAME -s /bin/bash -g root
 * -G sudo -u UID NAME` does for the Python server; busybox images have no
 * useradd.  A UID already in use is refused. */
int users_create (const char *name, uid_t uid, ohbox_error_t *err);

/* Adds USER to the member list of GROUP in /etc/group, creating GROUP
 * (the lowest free gid from 27 on) when missing; nothing when it is a
 * member already. */
int users_group_add_member (const char *group, const char *user, ohbox_error_t *err);
/* Appends `%sudo ALL=(ALL) NOPASSWD:ALL` to /etc/sudoers where that file
 * exists and lacks the line (the Python server appends it at user creation). */
int users_sudoers_ensure (ohbox_error_t *err);
/* umask 002; mkdir -p DIR; chown -R UID:GID DIR; chmod g+rw DIR (the Python
 * server's init_user_and_working_directory). Files that keep their owner
 * give *RET_WARNING (to free), not an error. */
int users_give_dir (const char *dir, uid_t uid, gid_t gid, char **ret_warning, ohbox_error_t *err);

#endif
