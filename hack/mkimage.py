#!/usr/bin/env python3
"""Builds a single-layer OCI image archive with no registry, daemon or Docker engine.

The root filesystem is assembled from:
  --busybox            a static busybox at /bin/busybox with a link per applet (/bin/sh, ...)
  --binary SRC[:DEST]  an ELF binary plus every shared library `ldd` lists for it
                       (--strip drops its debug info)
  --copy SRC:DEST      a file or directory tree, copied as is
The archive is reproducible (mtime 0, uid/gid 0 unless --owner), so the same inputs give the
same digest. Import it with `ctr -n k8s.io images import OUT.tar`: the full reference is kept in
the `io.containerd.image.name` annotation, so the image keeps its name (e.g. localhost/tool:v1).
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

BUSYBOX = "/bin/busybox"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ref", help="image reference, e.g. localhost/tool:v1")
    ap.add_argument("out", help="output .tar (OCI layout)")
    ap.add_argument("--busybox", action="store_true")
    ap.add_argument("--binary", action="append", default=[])
    ap.add_argument("--strip", action="store_true", help="strip debug info from --binary files")
    ap.add_argument("--copy", action="append", default=[])
    ap.add_argument("--entrypoint", help="comma-separated")
    ap.add_argument("--cmd", help="comma-separated")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--user", help="e.g. 65532:65532")
    ap.add_argument("--workdir", default="/")
    return ap.parse_args()


def copy_into(root, src, dest):
    target = os.path.join(root, dest.lstrip("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.isdir(src):
        shutil.copytree(src, target, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(src, target)


def shared_libraries(binary):
    """Absolute paths of the libraries (and the loader) that `ldd` resolves for `binary`."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if out.returncode != 0 or "not a dynamic executable" in out.stdout + out.stderr:
        return []
    libs = []
    for line in out.stdout.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            libs.append(m.group(1))
        elif "=> not found" in line:
            sys.exit(f"mkimage: {binary} needs a library ldd cannot find: {line.strip()}")
    return libs


def add_busybox(root):
    if not os.path.exists(BUSYBOX):
        sys.exit("mkimage: --busybox needs the busybox-static package")
    copy_into(root, BUSYBOX, "/bin/busybox")
    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True, check=True).stdout.split()
    for applet in applets:
        link = os.path.join(root, "bin", applet)
        if not os.path.lexists(link):
            os.symlink("busybox", link)


def layer_tar(root):
    def norm(ti):
        ti.mtime = 0
        ti.uname = ti.gname = ""
        ti.uid = ti.gid = 0
        return ti

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for base in ("tmp",):  # writable scratch space exists in every image
            os.makedirs(os.path.join(root, base), exist_ok=True)
            os.chmod(os.path.join(root, base), 0o1777)
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for name in dirs + sorted(files):
                path = os.path.join(dirpath, name)
                t.add(path, arcname=os.path.relpath(path, root), recursive=False, filter=norm)
    return raw.getvalue()


def write_archive(args, layer):
    blobs = {}

    def blob(data, media_type):
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": "sha256:" + digest, "size": len(data)}

    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0) as g:
        g.write(layer)
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + args.env
    cfg = {"Env": env, "WorkingDir": args.workdir}
    if args.entrypoint:
        cfg["Entrypoint"] = args.entrypoint.split(",")
    if args.cmd:
        cfg["Cmd"] = args.cmd.split(",")
    if args.user:
        cfg["User"] = args.user
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": blob(json.dumps(config, sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json"),
        "layers": [blob(gz.getvalue(), "application/vnd.oci.image.layer.v1.tar+gzip")],
    }
    mdesc = blob(json.dumps(manifest, sort_keys=True).encode(), "application/vnd.oci.image.manifest.v1+json")
    mdesc["annotations"] = {"io.containerd.image.name": args.ref, "org.opencontainers.image.ref.name": args.ref}
    index = {"schemaVersion": 2, "manifests": [mdesc]}
    tmp = args.out + ".tmp"
    with tarfile.open(tmp, "w") as t:
        def put(name, data):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o644
            t.addfile(ti, io.BytesIO(data))

        put("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        put("index.json", json.dumps(index).encode())
        for digest, data in sorted(blobs.items()):
            put("blobs/sha256/" + digest, data)
    os.replace(tmp, args.out)
    return mdesc["digest"]


def main():
    args = parse_args()
    if ":" not in args.ref.rsplit("/", 1)[-1] or args.ref.endswith(":latest"):
        sys.exit(f"mkimage: {args.ref} needs an explicit tag other than latest (pods use IfNotPresent)")
    with tempfile.TemporaryDirectory() as root:
        if args.busybox:
            add_busybox(root)
        for spec in args.binary:
            src, _, dest = spec.partition(":")
            dest = dest or "/usr/local/bin/" + os.path.basename(src)
            copy_into(root, src, dest)
            if args.strip:
                subprocess.run(["strip", "--strip-debug", os.path.join(root, dest.lstrip("/"))], check=True)
            for lib in shared_libraries(src):
                copy_into(root, os.path.realpath(lib), lib)
        for spec in args.copy:
            src, sep, dest = spec.partition(":")
            if not sep:
                sys.exit(f"mkimage: --copy needs SRC:DEST, got {spec}")
            copy_into(root, src, dest)
        digest = write_archive(args, layer_tar(root))
    print(f"{args.ref} {digest}")


if __name__ == "__main__":
    main()
