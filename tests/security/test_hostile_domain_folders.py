"""A domain folder is hostile input (red-team 2026-12-06 R1, R7, R8, R12): on 7043c43 a policy.md linked to
/proc/self/environ published the machine's HF_TOKEN, a FIFO hung the loader, /dev/urandom and /dev/zero ate
memory, a directory named policy.md ended with rc 1, YAML anchors nested a billion leaves into an error
message, and a key given twice in domain.yaml was taken silently (the last one).

Every domain file is now read only as a regular, capped, UTF-8 file inside its folder (domains/files.py), and
domain.yaml is loaded without aliases of mappings or lists and without duplicate keys: each attack is a
one-line DomainError naming the file, within a second or two, and through the CLI exit code 2.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
from pathlib import Path

import pytest

from toolscale.domains.domain import DomainError, load_domain, parse_spec
from toolscale.flows.digests import source_digest
from toolscale.pipeline.populate import PopulateError, populate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared helpers

from trainer_support import toolscale  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "library"
FILES = ("domain.yaml", "tools.py", "policy.md")
FAST_S = 3.0  # an attack must be refused this fast (the hangs were killed at 40-45 s)


@pytest.fixture
def folder(tmp_path):
    """A private copy of the library domain (short path: a socket's name is at most 108 bytes)."""
    target = tmp_path / "d"
    shutil.copytree(FIXTURE, target)
    return target


def secret_file(folder: Path) -> Path:
    secret = folder.parent / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- hf_SECRETSECRETSECRET\n")
    return secret


def plant_symlink_outside(folder: Path, name: str) -> None:
    os.remove(folder / name)
    os.symlink(secret_file(folder), folder / name)


def plant_relative_symlink_outside(folder: Path, name: str) -> None:
    secret_file(folder)
    os.remove(folder / name)
    os.symlink("../id_rsa", folder / name)


def plant_symlink_inside(folder: Path, name: str) -> None:
    """Even a link to a file inside the folder: a link is refused, whatever it points at (no resolve race)."""
    shutil.copy(folder / name, folder / f"real-{name}")
    os.remove(folder / name)
    os.symlink(f"real-{name}", folder / name)


def plant_link_to(target: str):
    def plant(folder: Path, name: str) -> None:
        os.remove(folder / name)
        os.symlink(target, folder / name)
    return plant


def plant_dangling(folder: Path, name: str) -> None:
    os.remove(folder / name)
    os.symlink(folder / "nowhere", folder / name)


def plant_loop(folder: Path, name: str) -> None:
    os.remove(folder / name)
    os.symlink(name, folder / name)


def plant_fifo(folder: Path, name: str) -> None:
    os.remove(folder / name)
    os.mkfifo(folder / name)


def plant_directory(folder: Path, name: str) -> None:
    os.remove(folder / name)
    (folder / name).mkdir()
    (folder / name / "x").write_text("x")


def plant_socket(folder: Path, name: str) -> None:
    os.remove(folder / name)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / name))
    server.close()  # the socket file stays


def plant_huge(folder: Path, name: str) -> None:
    from toolscale.domains.files import MAX_FILE_BYTES

    with open(folder / name, "ab") as fh:
        fh.write(b"#" + b"x" * MAX_FILE_BYTES[name] + b"\n")


def plant_sparse_huge(folder: Path, name: str) -> None:
    """A 300 MB file that takes no disk: the cap is checked before reading."""
    with open(folder / name, "ab") as fh:
        fh.truncate(300 * 10**6)


def plant_not_utf8(folder: Path, name: str) -> None:
    with open(folder / name, "ab") as fh:
        fh.write(b"\n# \xff\xfe\xfa\n")


PLANTS = {
    "symlink-to-a-secret-outside": (plant_symlink_outside, "symlink"),
    "relative-symlink-up-and-out": (plant_relative_symlink_outside, "symlink"),
    "symlink-to-a-file-inside": (plant_symlink_inside, "symlink"),
    "symlink-to-proc-self-environ": (plant_link_to("/proc/self/environ"), "symlink"),
    "symlink-to-dev-zero": (plant_link_to("/dev/zero"), "symlink"),
    "symlink-to-dev-urandom": (plant_link_to("/dev/urandom"), "symlink"),
    "symlink-to-etc-passwd": (plant_link_to("/etc/passwd"), "symlink"),
    "dangling-symlink": (plant_dangling, "symlink"),
    "symlink-loop": (plant_loop, "symlink"),
    "fifo": (plant_fifo, "FIFO"),
    "directory": (plant_directory, "directory"),
    "unix-socket": (plant_socket, "socket"),
    "one-byte-over-the-cap": (plant_huge, "cap"),
    "sparse-300-mb": (plant_sparse_huge, "cap"),
    "not-utf8": (plant_not_utf8, "UTF-8"),
}


def refused(folder: Path, words: str) -> str:
    start = time.monotonic()
    with pytest.raises(DomainError) as caught:
        load_domain(folder)
    assert time.monotonic() - start < FAST_S
    message = str(caught.value)
    assert "\n" not in message and words in message, message
    assert "SECRET" not in message and "BEGIN" not in message
    return message


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("plant", PLANTS)
def test_a_domain_file_that_is_not_a_plain_small_file_inside_the_folder_is_one_line(folder, plant, name):
    how, words = PLANTS[plant]
    how(folder, name)
    message = refused(folder, words)
    assert str(folder / name) in message


def test_a_folder_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    assert "not a folder" in refused(tmp_path / "afile", "not a folder")


def test_what_else_a_folder_holds_is_never_opened_for_its_digest(folder):
    """source_digest keys a --domain-dir run by the loader's files only: a FIFO, a link to /dev/zero or a
    huge file beside them is not read (it hung or ate memory when the whole tree was digested)."""
    os.mkfifo(folder / "notes.fifo")
    os.symlink("/dev/zero", folder / "zero")
    os.symlink("/proc/self/environ", folder / "environ")
    with open(folder / "big.bin", "wb") as fh:
        fh.truncate(2 * 10**9)
    start = time.monotonic()
    digest = source_digest("library", str(folder))
    assert time.monotonic() - start < FAST_S
    for extra in ("notes.fifo", "zero", "environ", "big.bin"):
        os.remove(folder / extra)
    assert source_digest("library", str(folder)) == digest


def test_a_digest_of_a_hostile_folder_is_the_loaders_one_line(folder):
    plant_link_to("/proc/self/environ")(folder, "policy.md")
    with pytest.raises(DomainError, match="policy.md: a symlink"):
        source_digest("library", str(folder))


# ---- domain.yaml: aliases and duplicate keys -----------------------------------------------------------

LIBRARY = (FIXTURE / "domain.yaml").read_text()


def laughs(levels: int = 9) -> str:
    """Nine anchors, each a list of ten aliases of the one before: 10^9 leaves when expanded."""
    lines = ["x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "{" + ", ".join(lines) + "}"


def in_faker_args(text: str) -> str:
    """R8's domain: the anchors in a faker column's args (populate formatted them into its error)."""
    return text.replace("{name: name, type: string, gen: {faker: name}}",
                        f"{{name: name, type: string, gen: {{faker: name, args: {laughs()}}}}}")


ALIASED = {
    "billion-laughs-in-faker-args": in_faker_args,
    "billion-laughs-in-an-enum": lambda t: t.replace("enum: [active, blocked]",
                                                     f"enum: {laughs().replace('{', '[').replace('}', ']')}"),
    "billion-laughs-in-a-choice": lambda t: t.replace("gen: {choice: [true, false]}",
                                                      f"gen: {{choice: [{laughs()}]}}"),
    "billion-laughs-as-an-unknown-key": lambda t: t + f"extra: {laughs()}\n",
    "recursive-list": lambda t: t + "extra: &r [*r]\n",
    "recursive-mapping": lambda t: t + "extra: &m {self: *m}\n",
    "a-reused-table": lambda t: t.replace("  - name: books\n", "  - &books\n    name: books\n", 1).replace(
        "rules:\n", "  - *books\nrules:\n", 1),
    "a-reused-column-list": lambda t: t.replace("    columns:\n      - {name: book_id",
                                                "    columns: &cols\n      - {name: book_id", 1) + "x: *cols\n",
    "scalar-aliases-past-the-cap": lambda t: t.replace("description: A small lending library, for the runtime's tests.",
                                                       "description: &big " + "y" * 200_000) +
    "x: [" + ", ".join(["*big"] * 6) + "]\n",
}


@pytest.mark.parametrize("attack", ALIASED)
def test_yaml_aliases_that_expand_are_refused_fast_with_the_line(attack):
    start = time.monotonic()
    with pytest.raises(DomainError) as caught:
        parse_spec(ALIASED[attack](LIBRARY))
    assert time.monotonic() - start < FAST_S
    message = str(caught.value)
    assert "\n" not in message and message.startswith("domain.yaml:") and "alias" in message, message
    assert len(message) < 300


def test_a_scalar_alias_stays_allowed():
    """medicine's domain.yaml names a long condition once and reuses it: a scalar alias cannot expand."""
    text = LIBRARY.replace('where: "row.status == \'active\'"', 'where: &active "row.status == \'active\'"', 1)
    text = text.replace("where: \"row.copies > 0", "where: \"row.copies > 0", 1)
    assert parse_spec(text).name == "library"
    from toolscale.domains import builtin_domain

    assert builtin_domain("medicine").name == "medicine"


DUPLICATED = {  # (the change, text on the line of the second key, the key)
    "top-level-clock": (lambda t: t.replace('clock: "2026-03-02T09:00:00"\n',
                                            'clock: "2026-03-02T09:00:00"\nclock: "2030-01-01T00:00:00"\n'),
                        'clock: "2030', "'clock'"),
    "top-level-name": (lambda t: t + "name: other\n", "name: other", "'name'"),
    "table-rows": (lambda t: t.replace("    rows: 12\n", "    rows: 12\n    rows: 999\n"), "rows: 999", "'rows'"),
    "column-in-a-flow-mapping": (lambda t: t.replace("{name: copies, type: integer,",
                                                     "{name: copies, type: integer, type: string,"),
                                 "integer, type: string", "'type'"),
    "generator-kind": (lambda t: t.replace("gen: {range: [0, 3]}", "gen: {range: [0, 3], range: [0, 10**9]}"),
                       "range: [0, 10**9]", "'range'"),
    "rule-id": (lambda t: t.replace("{id: copies, rule:", "{id: copies, id: copies2, rule:"), "copies2", "'id'"),
    "intent-template-count": (lambda t: t.replace("      count: 8\n", "      count: 8\n      count: 80000\n"),
                              "count: 80000", "'count'"),
    "action-arguments-key": (lambda t: t.replace('arguments: {email: "{{ member.email }}"}',
                                                 'arguments: {email: "{{ member.email }}", email: "x"}'),
                             'email: "x"', "'email'"),
    "integer-keys": (lambda t: t + "extra: {1: a, 1: b}\n", "1: b", "1"),
    "a-key-written-two-ways": (lambda t: t + "extra: {\"k\": a, k: b}\n", "k: b", "'k'"),
}


@pytest.mark.parametrize("attack", DUPLICATED)
def test_a_key_given_twice_is_refused_with_its_line(attack):
    change, marker, key = DUPLICATED[attack]
    text = change(LIBRARY)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if marker in row)
    with pytest.raises(DomainError) as caught:
        parse_spec(text)
    message = str(caught.value)
    assert "\n" not in message and f"duplicate key {key}" in message, message
    assert message.startswith(f"domain.yaml:{line}:"), message


# ---- populate never formats a user value unbounded (R8) ------------------------------------------------

def test_a_failing_faker_with_huge_shared_args_fails_fast_with_a_short_message():
    """What the YAML anchors built, built here in Python (the loader no longer lets YAML build it): a value
    that nests 10^9 leaves by reference. Its error message shows a bounded summary of it."""
    spec = parse_spec(LIBRARY.replace("{name: name, type: string, gen: {faker: name}}",
                                      "{name: name, type: string, gen: {faker: name, args: {x: 1}}}"))
    leaves: list = ["lol"] * 10
    for _ in range(8):
        leaves = [leaves] * 10
    spec.table("members").column("name").gen.args["x"] = leaves
    start = time.monotonic()
    with pytest.raises(PopulateError) as caught:
        populate(spec, seed=0)
    assert time.monotonic() - start < FAST_S
    assert len(str(caught.value)) < 1000 and "members.name" in str(caught.value)


# ---- through the real CLI: exit 2, one line, before anything runs --------------------------------------

CLI_ATTACKS = {
    "policy-symlink-to-proc-self-environ": (lambda f: plant_link_to("/proc/self/environ")(f, "policy.md"),
                                            "policy.md: a symlink"),
    "policy-a-directory": (lambda f: plant_directory(f, "policy.md"), "policy.md: a directory"),
    "policy-a-fifo": (lambda f: plant_fifo(f, "policy.md"), "policy.md: a FIFO"),
    "tools-symlink-to-dev-urandom": (lambda f: plant_link_to("/dev/urandom")(f, "tools.py"), "tools.py: a symlink"),
    "yaml-billion-laughs": (lambda f: (f / "domain.yaml").write_text(in_faker_args(LIBRARY)), "aliases"),
    "yaml-clock-twice": (lambda f: (f / "domain.yaml").write_text(DUPLICATED["top-level-clock"][0](LIBRARY)),
                         "duplicate key 'clock'"),
}


@pytest.mark.parametrize("attack", CLI_ATTACKS)
def test_a_hostile_domain_folder_through_the_cli_is_one_line_with_exit_2(folder, tmp_path, attack):
    plant, words = CLI_ATTACKS[attack]
    plant(folder)
    env_secret = {"HF_TOKEN": "hf_SECRETTOKEN123"}
    os.environ.update(env_secret)
    try:
        proc = toolscale("generate", "--domain-dir", str(folder), "--out", str(tmp_path / "out"), cwd=tmp_path,
                         timeout=60)
    finally:
        os.environ.pop("HF_TOKEN")
    text = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert words in text and "Traceback" not in proc.stderr and "SECRETTOKEN" not in proc.stderr + proc.stdout
    assert len([line for line in proc.stderr.splitlines() if line.strip()]) == 1, proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("policy.md"))
