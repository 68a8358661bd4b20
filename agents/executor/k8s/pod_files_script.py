# The file operations the app runs in a sandbox pod (sent as `python3 -I -S -c <this file's text>`): Kubernetes
# has no file API, only exec, so each operation is one exec of this script with the workspace folder, the
# operation and its arguments. Standard library only (the pod has nothing else the app may rely on); every path
# is walked folder by folder without following links (O_NOFOLLOW), like the local backend's files.
# The last argument is the user id to run as (-1: stay). Exit codes: 0 done, 2 not found, 3 refused (a link,
# not a regular file, outside), 4 over the cap, 5 exists.
import json
import os
import stat
import sys
from typing import NoReturn


def fail(code: int, message: str) -> NoReturn:
    sys.stderr.write(message[:300])
    sys.exit(code)


def parent_fd(root: str, rel: str, make: bool = False) -> tuple[int, str]:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        fail(3, "not a path inside the workspace")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for part in parts[:-1]:
        try:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            if not make:
                fail(2, "no such file")
            os.mkdir(part, 0o775, dir_fd=fd)
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except (NotADirectoryError, OSError):
            fail(3, "a folder on the way is a link or not a folder")
        os.close(fd)
        fd = nxt
    return fd, parts[-1]


def main() -> None:
    root, op, owner = sys.argv[1], sys.argv[2], int(sys.argv[-1])
    if owner >= 0 and os.geteuid() == 0:
        # As the worker's own user: what the app puts is the worker's to change, and the workspace (the worker's,
        # mode 0700) is reached with no capability beyond setuid (the exec starts as the container's root).
        os.setgroups([])
        os.setgid(owner)
        os.setuid(owner)
    if op == "list":
        limit = int(sys.argv[3]) + 1  # one more than the app takes: it then knows the listing is incomplete
        found: dict[str, list[int]] = {}
        todo = [""]
        while todo and len(found) < limit:
            rel = todo.pop()
            try:
                entries = list(os.scandir(os.path.join(root, rel) if rel else root))
            except OSError:
                continue
            for entry in entries:
                path = rel + "/" + entry.name if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    todo.append(path)
                elif entry.is_file(follow_symlinks=False) and len(found) < limit:
                    info = entry.stat(follow_symlinks=False)
                    found[path] = [info.st_size, info.st_mtime_ns]
        sys.stdout.write(json.dumps(found))
        return
    fd, name = parent_fd(root, sys.argv[3], make=(op == "put"))
    if op == "get":
        cap = int(sys.argv[4])
        try:
            f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        except FileNotFoundError:
            fail(2, "no such file")
        except OSError:
            fail(3, "a link or not a regular file")
        info = os.fstat(f)
        if not stat.S_ISREG(info.st_mode):
            fail(3, "not a regular file")
        if info.st_size > cap:
            fail(4, "over the cap")
        out, left = sys.stdout.buffer, cap + 1
        while left > 0 and (chunk := os.read(f, min(65536, left))):
            out.write(chunk)
            left -= len(chunk)
        out.flush()
    elif op == "put":
        cap, exclusive = int(sys.argv[4]), sys.argv[5] == "1"
        data = sys.stdin.buffer.read(cap + 1)
        if len(data) > cap:
            fail(4, "over the cap")
        tmp = ".agentdeck-put-" + os.urandom(6).hex()
        f = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o664, dir_fd=fd)
        os.write(f, data)
        os.close(f)
        try:
            if exclusive:
                os.link(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            else:
                try:
                    old: os.stat_result | None = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    old = None
                if old is not None and not stat.S_ISREG(old.st_mode):
                    fail(3, "a link or not a regular file")
                os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except FileExistsError:
            fail(5, "exists")
        finally:
            try:
                os.unlink(tmp, dir_fd=fd)
            except FileNotFoundError:
                pass
    elif op == "remove":
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            fail(2, "no such file")
        if stat.S_ISDIR(info.st_mode):
            fail(3, "a folder")
        os.unlink(name, dir_fd=fd)
    else:
        fail(3, "unknown operation")


main()
