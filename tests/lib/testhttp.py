"""tests/lib/testhttp.py: what the suite's small HTTP servers share
(fault_proxy.py, token_server.py, static_registry.py).

They bind port 0 (or the port given) and tell the shell which port they got
through a file written atomically: the test waits for the file, never for a
port it guessed.
"""

import json
import os


def write_port_file(path, port):
    """PATH holds PORT and a newline once it exists (renamed into place)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, path)


def answer(handler, status, body=b"", headers=()):
    """Sends HANDLER's response: STATUS, HEADERS ((name, value) pairs), the
    Content-Length of BODY and BODY itself (not to a HEAD request)."""
    handler.send_response(status)
    for k, v in headers:
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


def answer_json(handler, status, obj, headers=()):
    """answer() with OBJ as the (JSON) body; returns the body's length."""
    body = json.dumps(obj).encode()
    answer(handler, status, body, (("Content-Type", "application/json"),) + tuple(headers))
    return len(body)


def serve(srv, port_file=None):
    """Announces SRV's port in PORT_FILE (when given) and serves until
    interrupted; returns the exit status for main()."""
    if port_file:
        write_port_file(port_file, srv.server_address[1])
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
