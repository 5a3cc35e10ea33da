/* frontend.h: the library as its front doors see it: the ohbox CLI (src/cli)
 * and the commands beside it. One include instead of one per module, so
 * that what a front door may call is listed in one place; embedders use the
 * public ohbox.h instead. Each line says what the front doors take from
 * the module. Policy (how a sandbox runs) is decided by policy/ only;
 * front doors parse arguments, call these, and print. Errors: common/error.h
 * (the kinds are the CLI's exit codes). */
#ifndef OHBOX_FRONTEND_H
#define OHBOX_FRONTEND_H

#include "common/error.h"             /* ohbox_error_t, the kinds */
#include "common/utils.h"             /* cleanup_*, xasprintf, ohbox_format_size, ohbox_signal_parse */
#include "common/digest.h"            /* digests given on the command line */
#include "common/strv.h"              /* string vectors of repeated options */
#include "registry/reference.h"       /* image references */
#include "registry/registry.h"        /* registry options (TLS, credentials) */
#include "registry/registries_conf.h" /* --registries-conf */
#include "registry/authfile.h"        /* login, logout, --authfile, --creds */
#include "registry/registry_push.h"   /* push */
#include "image/image.h"              /* image records */
#include "image/pull.h"               /* pull */
#include "image/oci_layout.h"         /* load, save */
#include "store/store.h"              /* the store: open, list, remove, prune */
#include "store/check.h"              /* check, --repair */
#include "build/build.h"              /* runtime images */
#include "policy/run_policy.h"        /* the run request and its plan: run, ci gitlab, serve */
#include "sandbox/sandbox.h"          /* sandboxes: start, list, stop, kill, rm, pause, logs, stats */
#include "sandbox/exec.h"             /* exec, attach */
#include "network/network.h"          /* named networks: ohbox network */
#include "network/egress.h"           /* --egress */
#include "cgroup/cgroup.h"            /* limits given as options, statistics */
#include "devices/devices.h"          /* --device, --gpus, --cdi-spec-dir */
#include "api/action.h"               /* actions to a runtime sandbox's executor */

#endif
