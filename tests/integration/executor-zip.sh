#!/bin/bash
# executor-zip.sh: hostile zips through ohbox-executor's real POST
# /upload_file (issue 14 item 17), the executor a plain process on a free
# loopback port, the zips made and sent by tests/executor/zip_attack.py: an
# upload swapped for another zip after it was written (the executor must
# never read it again by its name), `..` and absolute names, a symlink or
# file entry with entries beneath it, a symlink planted in the destination,
# zip bombs (within the old 4x limit, beyond it, and entries sharing one
# entry's data), entry-count budgets, a corrupt entry; each refused with an
# error naming the entry, nothing written outside the destination, nothing
# left in it, files already there untouched.
set -u
. "$(dirname "$0")/../lib/executor_script.sh"

PE_EXE=$exe
. "$src/tests/lib/plain_executor.sh"
pe_scratch
mkdir "$PE_TMP/work/dest"
rc=0

# An upload limit of 1 MiB (so the unpacked budget is 1 MiB) and a small
# entry budget, so that the bombs are quick to make.
entries=3000
OHBOX_EXECUTOR_MAX_UPLOAD=1048576 OHBOX_EXECUTOR_MAX_ZIP_ENTRIES=$entries pe_launch "$PE_TMP/executor.log" "$PE_TMP/work"
/usr/bin/python3 "$src/tests/executor/zip_attack.py" "$PE_PORT" "$PE_KEY" "$PE_TMP/work" "$entries" attacks || rc=1
pe_survived "$name/server_survived" || rc=1
pe_stop

if [ $rc -ne 0 ]; then
  echo "---- executor log"
  tail -n 30 "$PE_TMP/executor.log"
fi
exit $rc
