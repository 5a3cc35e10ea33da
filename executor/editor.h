/* editor.h: the file editor behind `read` (impl_source oh_aci) and `edit`:
 * OHEditor from openhands-aci 0.3.2 (view, create, str_replace, insert,
 * undo_edit) with its output and error texts, an edit history of 10
 * versions per file, and unified diffs with zero context. */
#ifndef OHBOX_EXECUTOR_EDITOR_H
#define OHBOX_EXECUTOR_EDITOR_H

#include <jansson.h>
#include <stdbool.h>

struct editor;

struct editor *editor_new (const char *workspace_root);
void editor_free (struct editor *ed);
/* `view` of PATH with an optional [start, end] VIEW_RANGE: the editor text
 * or "ERROR:\n<reason>".  Caller frees. */
char *editor_view (struct editor *ed, const char *path, json_t *view_range);
/* binaryornot-like check of the first KiB (missing file: false). */
bool file_is_binary (const char *path);
/* .pdf .docx .xlsx .pptx .mp3 .wav .m4a .flac */
bool editor_supported_binary (const char *path);
/* Zero-context unified diff as the server reports it ("" when equal). */
char *unified_diff (const char *old_text, const char *new_text, const char *path);

#endif
