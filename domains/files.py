"""Reading a domain folder's files as hostile input.

A domain folder may come from anyone (a git repository, an archive), and what it holds is published:
its policy goes into the dataset as-is. So a file is read only when it is a regular file inside the
folder, opened without following a symlink (a `policy.md` linked to /proc/self/environ or ~/.ssh/id_rsa
would publish the secret), never a FIFO or a device (a FIFO blocks the reader for ever, /dev/urandom
never ends), and never more than its cap.

The check and the read are one: the file is opened with O_NOFOLLOW | O_NONBLOCK relative to the
folder, then fstat-ed, so nothing can swap the file between a check and the open. The folder itself
is the user's choice (`--domain-dir` may be a link to a checkout); only what is inside it is hostile.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# Caps, each far above what a real domain needs and far below what hurts: the largest built-in
# domain.yaml is ~60 KB and tools.py ~30 KB, a policy a few KB. A policy is text read by an agent in
# every prompt (200 KB is ~50k tokens, already more than a context can spare); a 300 MB policy was
# copied into OUT before anything noticed, and a 200 MB domain.yaml crashed the YAML parser.
MAX_FILE_BYTES = {"domain.yaml": 1_000_000, "tools.py": 1_000_000, "policy.md": 200_000}
DEFAULT_MAX_BYTES = 1_000_000
DOMAIN_FILES = tuple(MAX_FILE_BYTES)  # what a domain folder is made of, and all the loader reads of it


class DomainFileError(ValueError):
    """A domain file that is not a regular, small enough, UTF-8 file inside its folder."""


def file_kind(mode: int) -> str:
    """What an lstat mode says a path is, in words ("a symlink", "a FIFO"...)."""
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_domain_file(folder: str | Path, name: str, max_bytes: int | None = None) -> str:
    """The UTF-8 text of `folder/name`. FileNotFoundError when it is missing; DomainFileError, whose
    one-line message names the path, when it is a symlink, not a regular file, over its cap or not UTF-8."""
    path = Path(folder) / name
    cap = max_bytes if max_bytes is not None else MAX_FILE_BYTES.get(name, DEFAULT_MAX_BYTES)
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:  # lstat first: a device is refused without being opened (opening one can act on it)
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except NotADirectoryError:
            raise FileNotFoundError(errno.ENOENT, "missing", str(path)) from None
        if not stat.S_ISREG(mode):
            raise DomainFileError(f"{path}: {file_kind(mode)}, not a regular file: a domain file must be a plain file "
                                  "inside the folder")
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # swapped for a symlink since the lstat
                raise DomainFileError(f"{path}: a symlink, not a regular file") from None
            raise
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise DomainFileError(f"{path}: {file_kind(info.st_mode)}, not a regular file")
        if info.st_size > cap:
            raise DomainFileError(f"{path}: {info.st_size:,} bytes, over the {cap:,}-byte cap for {name}")
        data = fh.read(cap + 1)  # the size can lie (a file that grows): read at most one byte past the cap
    if len(data) > cap:
        raise DomainFileError(f"{path}: over the {cap:,}-byte cap for {name}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DomainFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
