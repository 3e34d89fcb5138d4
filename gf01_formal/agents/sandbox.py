"""The sandbox an external agent (``--agent-cmd``) runs in: bubblewrap (docs/agent-protocol.md, "Sandbox").

A closed-book agent must not read the hidden instance by other means than the message channel: the harness's
command line (/proc), the bundle, the runs file, split keys, logs. Under bubblewrap the program gets

- its own PID namespace (it sees only its own processes; when the episode ends the sandbox's init is killed and the
  kernel kills everything in the namespace, children that called setsid() included), and ``--die-with-parent``;
- its own mount namespace holding only the system directories (/usr, /etc and the /bin, /lib links), the Python
  installation the harness runs on, the install prefix of the agent's program, and the files named on the agent's
  command line, at their own paths (read-write: the user gave them to the agent); all read-only but those files;
- a private, empty /tmp (its working directory and HOME, the only other writable place, gone with the sandbox);
- no network (its own, empty network namespace) unless the run states ``--agent-network``;
- an environment of PATH, LANG and LC_ALL only, without network (no API key reaches an agent that cannot use it).

``none`` runs the program as before, unisolated: only when the user states ``--sandbox none``; such a run's record
says so (``sandbox: none``) and ``gf01 validate --official`` rejects it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

from hoa.errors import Gf01Error

Kind = Literal["bwrap", "none"]
BWRAP = "bwrap"
#: Size of the sandbox's private /tmp (bytes): memory-backed, so bounded.
TMP_BYTES = 256 << 20
_SYSTEM = ("/usr", "/etc", "/opt")
_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@functools.cache
def bwrap_problem() -> str | None:
    """Why no bubblewrap sandbox can be made here (None: it can). Probed once per process."""
    exe = shutil.which(BWRAP)
    if exe is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    try:
        proc = subprocess.run([exe, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
                              capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"bubblewrap cannot run: {ex}"
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap cannot make namespaces here ({why[-1] if why else f'status {proc.returncode}'})"
    return None


def resolve(requested: str) -> Kind:
    """The sandbox to run external agents in: ``auto`` (bubblewrap, refused in one line when none can be made),
    ``bwrap`` or ``none`` (stated by the user: unisolated, never official)."""
    if requested == "none":
        return "none"
    if requested not in ("auto", "bwrap"):
        raise Gf01Error(f"unknown sandbox {requested!r}: auto, bwrap or none", field="--sandbox")
    problem = bwrap_problem()
    if problem is not None:
        raise Gf01Error(f"no sandbox for the external agent: {problem}; an unsandboxed agent can read the hidden "
                        "instance, so its runs are not official: to run it anyway, state --sandbox none",
                        field="--sandbox")
    return "bwrap"


def wrap(argv: list[str], *, network: bool = False) -> list[str]:
    """The command line that runs ``argv`` inside a fresh bubblewrap sandbox (module docstring)."""
    exe = shutil.which(BWRAP)
    if exe is None:
        raise Gf01Error("bubblewrap (bwrap) is not installed", field="--sandbox")
    program = shutil.which(argv[0]) or argv[0]
    args = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if network:
        args.append("--share-net")
    for d in _SYSTEM:
        if os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for link in _LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    ro = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    ro |= _prefixes(program)
    for d in sorted(_outermost(ro)):
        if d not in _SYSTEM and not any(d.startswith(s + os.sep) for s in _SYSTEM):
            args += ["--ro-bind", d, d]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--chdir", "/tmp",
             "--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
             "--setenv", "PATH", os.environ.get("PATH", "/usr/bin:/bin")]
    for name in ("LANG", "LC_ALL", "PYENV_VERSION"):
        if name in os.environ:
            args += ["--setenv", name, os.environ[name]]
    if network:  # an agent that calls a model needs its endpoint's key and proxy settings
        for name, value in sorted(os.environ.items()):
            if name not in ("PATH", "HOME", "TMPDIR"):
                args += ["--setenv", name, value]
    bound = (*ro, *_SYSTEM)
    inner = [program]
    for word in argv[1:]:
        path = Path(word)
        if word and not word.startswith("-") and path.exists() and not path.is_dir():
            real = os.path.realpath(word)
            # The agent's own files, named by the user; one inside a read-only directory stays read-only (a
            # writable bind there would let the agent change the system or the interpreter).
            if not any(real.startswith(d + os.sep) for d in bound):
                args += ["--bind", real, real]
            inner.append(real)
        else:
            inner.append(word)
    if not any(program.startswith(d + os.sep) for d in bound):
        real = os.path.realpath(program)
        args += ["--ro-bind", real, real]
        inner[0] = real
    return [*args, "--", *inner]


def _prefixes(program: str) -> set[str]:
    """The install prefix of the program (``<prefix>/bin/x`` or a pyenv-style ``<root>/shims/x``): its interpreter
    and libraries live there. A program elsewhere is bound as a file, not its directory."""
    out = set()
    for path in {program, os.path.realpath(program)}:
        parent = os.path.dirname(path)
        if os.path.basename(parent) in ("bin", "shims"):
            out.add(os.path.dirname(parent))
    return {p for p in out if p not in ("", "/")}


def _outermost(dirs: set[str]) -> set[str]:
    """``dirs`` without those inside another of them (a bind of the outer one covers them)."""
    return {d for d in dirs if not any(d != o and d.startswith(o + os.sep) for o in dirs)}
