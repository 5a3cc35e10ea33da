#!/usr/bin/python3
"""Writes the seed inputs of the fuzz targets into fuzz/corpus/NAME/.

Run with Debian's interpreter (/usr/bin/python3 fuzz/gen-corpus.py) after
changing a seed; the output is committed so that `make fuzz` and
tests/integration/fuzz.sh need no Python.  Seeds are small on purpose:
libFuzzer's default maximum input length follows the largest seed.
"""
import gzip
import io
import json
import os
import shutil
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
D1 = "sha256:" + "a" * 64
D2 = "sha256:" + "b" * 64


def put(name, file, data):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, file), "wb") as f:
        f.write(data)


def js(o):
    return json.dumps(o, separators=(",", ":"))


def references():
    for i, s in enumerate([
            "busybox", "library/busybox:1.36", "docker.io/x/y@" + D1,
            "127.0.0.1:5000/ns/img:tag", "localhost/a/b:c@" + D2,
            "[::1]:5000/x:y", "index.docker.io/library/alpine", "a.b-c_d__e/f.g:TAG-1.0"]):
        put("reference", "ref-%d" % i, s)


def oci():
    # First byte: the Content-Type index (see fuzz-oci.c).
    layer = {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": D2, "size": 10}
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": D1, "size": 7},
                "layers": [layer], "annotations": {"a": "b"}}
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": D1, "size": 7,
                            "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
                           {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": D2, "size": 9,
                            "platform": {"os": "linux", "architecture": "amd64"}}]}
    config = {"architecture": "amd64", "os": "linux", "created": "2024-01-01T00:00:00Z",
              "config": {"Env": ["PATH=/bin"], "Cmd": ["sh"], "User": "1000", "ExposedPorts": {"80/tcp": {}}},
              "rootfs": {"type": "layers", "diff_ids": [D1, D2]}}
    docker = dict(manifest, mediaType="application/vnd.docker.distribution.manifest.v2+json")
    docker["config"] = dict(manifest["config"], mediaType="application/vnd.docker.container.image.v1+json")
    docker["layers"] = [dict(layer, mediaType="application/vnd.docker.image.rootfs.diff.tar.gzip")]
    put("oci", "manifest", b"\x02" + js(manifest).encode())
    put("oci", "index", b"\x03" + js(index).encode())
    put("oci", "config", b"\x00" + js(config).encode())
    put("oci", "docker-manifest", b"\x04" + js(docker).encode())
    put("oci", "schema1", b"\x06" + js({"schemaVersion": 1, "name": "x", "fsLayers": []}).encode())
    put("oci", "shape-index", b"\x01" + js({"schemaVersion": 2, "manifests": []}).encode())
    put("oci", "platform", b"\x00linux/arm/7")


def auth_challenges():
    for i, s in enumerate([
            'Bearer realm="https://auth.example/token",service="reg",scope="repository:x:pull"',
            'Basic realm="R"',
            'Basic realm="a", Bearer realm="https://t/\\"q\\"",service=s',
            'Negotiate, bearer Realm=https://x/token',
            'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
            'scope="repository:library/busybox:pull,push"']):
        put("auth-challenge", "challenge-%d" % i, s)


def authfiles():
    put("authfile", "podman", js({"auths": {"docker.io": {"auth": "dXNlcjpwYXNz"},
                                            "localhost:5000/ns": {"auth": "YTpiOmM="}}}))
    put("authfile", "docker", js({"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"},
                                            "quay.io": {"auth": "", "identitytoken": "x"}},
                                  "credHelpers": {"gcr.io": "gcloud"}, "credsStore": "desktop"}))
    put("authfile", "helper-only", js({"auths": {}, "credHelpers": {"quay.io": "secretservice"}}))
    put("authfile", "bad-base64", '{"auths":{"docker.io":{"auth":"@@@"}}}\n')


def registries_conf():
    put("registries-conf", "v2", """unqualified-search-registries = ["registry.fedoraproject.org", "docker.io"]
short-name-mode = "enforcing"

[[registry]]
prefix = "docker.io/library"
location = "registry.example:5000/library"
insecure = true
mirror-by-digest-only = false

[[registry.mirror]]
location = "mirror.example/lib" # comment
pull-from-mirror = "digest-only"

[[registry]]
prefix = "*.example.com"
blocked = true

[aliases]
"fedora" = "registry.fedoraproject.org/fedora"
"alpine" = 'docker.io/library/alpine'
""")
    put("registries-conf", "v1", """[registries.search]
registries = ['docker.io', "quay.io"]
[registries.insecure]
registries = ["localhost:5000"]
[registries.block]
registries = []
""")


def seccomp():
    # First byte: capability set and kernel release (see fuzz-seccomp.c).
    prof = {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
            "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}],
            "syscalls": [
                {"names": ["read", "write", "exit_group", "no_such_call"], "action": "SCMP_ACT_ALLOW"},
                {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
                 "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]},
                {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                 "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
                 "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
                {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
                {"name": "ptrace", "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "4.8"}},
                {"names": ["kexec_load"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38,
                 "includes": {"arches": ["amd64"]}, "comment": "x"}]}
    put("seccomp", "small", b"\x01" + js(prof).encode())
    put("seccomp", "allow", b"\x02" + js({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
                                          "flags": ["SECCOMP_FILTER_FLAG_LOG"],
                                          "syscalls": [{"names": ["bpf"], "action": "SCMP_ACT_KILL_PROCESS"}]}).encode())
    with open(os.path.join(HERE, "..", "seccomp-profiles", "default.json"), "rb") as f:
        put("seccomp", "default", b"\x01" + f.read())


def tar_bytes(entries, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for e in entries:
            name, kind = e[0], e[1]
            ti = tarfile.TarInfo(name)
            ti.mtime = 1700000000
            data = b""
            if kind == "file":
                data = e[2]
                ti.size = len(data)
                ti.mode = 0o644
            elif kind == "dir":
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
            elif kind == "symlink":
                ti.type = tarfile.SYMTYPE
                ti.linkname = e[2]
            elif kind == "hardlink":
                ti.type = tarfile.LNKTYPE
                ti.linkname = e[2]
            elif kind == "fifo":
                ti.type = tarfile.FIFOTYPE
            elif kind == "xattr":
                ti.size = 1
                data = b"x"
                ti.pax_headers = {"SCHILY.xattr.user.k": "v"}
            t.addfile(ti, io.BytesIO(data) if data else None)
    # Drop the padding to a 10 KiB record: keep the two zero end blocks.
    raw = buf.getvalue().rstrip(b"\0")
    return raw + b"\0" * (-len(raw) % 512 + 1024)


def layers():
    normal = tar_bytes([("etc", "dir"), ("etc/passwd", "file", b"root:x:0:0::/root:/bin/sh\n"),
                        ("bin", "dir"), ("bin/sh", "symlink", "busybox"), ("bin/busybox", "file", b"\x7fELF"),
                        ("bin/ash", "hardlink", "bin/busybox"), ("run", "dir"), ("run/fifo", "fifo"),
                        ("attr", "xattr")])
    put("layer", "normal.tar", normal)
    put("layer", "normal.tar.gz", gzip.compress(normal, mtime=0))
    put("layer", "whiteouts.tar", tar_bytes([("a", "dir"), ("a/.wh..wh..opq", "file", b""),
                                             ("a/.wh.gone", "file", b""), ("b", "dir")], tarfile.GNU_FORMAT))
    put("layer", "traversal.tar", tar_bytes([("../up", "file", b"x"), ("/abs", "file", b"y"),
                                             ("a/../../up2", "file", b"z")], tarfile.USTAR_FORMAT))
    put("layer", "symlink-parent.tar", tar_bytes([("link", "symlink", "../.."), ("link/x", "file", b"escaped"),
                                                  ("hl", "hardlink", "../../etc/passwd")]))
    put("layer", "replace-root.tar", tar_bytes([(".", "symlink", "/"), ("./x", "file", b"x")]))


def zips():
    def z(entries):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in entries:
                zf.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), data)
        return buf.getvalue()
    put("zip", "normal.zip", z([("dir/", b""), ("dir/a.txt", b"hello\n"), ("b.txt", b"x" * 100)]))
    put("zip", "slip.zip", z([("../evil", b"x"), ("ok", b"y")]))
    put("zip", "abs.zip", z([("/tmp/evil", b"x")]))
    put("zip", "dotdir.zip", z([("./a/./b/", b""), ("a/b/c", b"z")]))
    # A symlink entry (unix mode 0120777) followed by a file through it.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zi = zipfile.ZipInfo("ln", (2024, 1, 1, 0, 0, 0))
        zi.external_attr = 0o120777 << 16
        zi.create_system = 3
        zf.writestr(zi, "..")
        zf.writestr("ln/x", b"escaped")
    put("zip", "symlink.zip", buf.getvalue())


def cmdsplit():
    for i, s in enumerate([
            "ls -la; echo hi && cat <<EOF\nbody\nEOF\n",
            "for i in 1 2; do echo $i; done | wc -l",
            "echo \"a;b\" 'c|d' $(date; true) `x` # c\npwd",
            "(cd /tmp && ls) || echo no &\n\n# only a comment",
            "cat <<-'E' > out\n\tx\n\tE\necho done",
            "case $x in a) echo a;; *) echo b;; esac"]):
        put("cmdsplit", "cmd-%d" % i, s)


def upstream():
    """Answers of a sandbox's server (fuzz-upstream.c)."""
    for i, s in enumerate([
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"status\":\"ok\"}",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nz",
            "HTTP/1.0 200 OK\r\n\r\nuntil the end",
            "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"]):
        put("upstream", "answer-%d" % i, s)


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    references(); oci(); auth_challenges(); authfiles(); registries_conf(); seccomp(); layers(); zips(); cmdsplit()
    upstream()
    return 0


if __name__ == "__main__":
    sys.exit(main())
