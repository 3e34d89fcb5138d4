"""The sandbox an external agent (``--agent-cmd``) runs in: bubblewrap (docs/agent-protocol.md, "Sandbox").

A closed-book agent must not read the hidden instance by other means than the message channel: the harness's
command line or environment (/proc), the bundle, the runs file, split keys, logs. Under bubblewrap the program gets

- its own PID namespace and a fresh /proc (it sees only its own processes; when the episode ends the sandbox's init
  is killed and the kernel kills everything in the namespace, children that called setsid() included), and
  ``--die-with-parent``; bubblewrap itself is started with the sandbox's environment only, so the sandbox's init
  (pid 1, which the agent can see) holds none of the harness's variables;
- its own mount namespace holding only the system directories (/usr, /etc, /opt and the /bin, /lib links), a private
  /tmp of :data:`LIMITS` ``tmp_bytes`` (mounted first), and over it, by their real paths wherever they are (/tmp
  included): the program's own file, the interpreter(s) that run it (the program itself when it is a Python, or the
  ``#!`` line's) with their installation's libraries (a venv's ``pyvenv.cfg`` and ``lib``, its base installation's
  ``lib``), and the existing files named on the agent's command line; all read-only, nothing else of the tree the
  program lies in (a program in ``proj/bin/`` does not get ``proj``);
- no network (its own, empty network namespace) unless the run states ``--agent-network``;
- an environment of PATH, LANG and LC_ALL only, without network (no API key reaches an agent that cannot use it);
- limits of its own per episode (:data:`LIMITS`): tasks (RLIMIT_NPROC: under a root harness the program runs as a uid
  of its own episode, which the limit binds, root being exempt from it), address space per process (RLIMIT_AS), CPU
  time per process (RLIMIT_CPU), the size of a file written (RLIMIT_FSIZE) and the /tmp size; and, where the
  machine lets the harness make control groups (agents/cgroups.py), the memory, tasks and CPU rate of the whole
  process tree together (the record says which held).

``none`` runs the program as before, unisolated: only when the user states ``--sandbox none``; such a run's record
says so (``sandbox: none``) and ``gf01 validate --official`` rejects it.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from gf01_formal.agents.cgroups import TreeLimits
from hoa.errors import Gf01Error, quote

Kind = Literal["bwrap", "none"]
BWRAP = "bwrap"
_SYSTEM = ("/usr", "/etc", "/opt")
_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Variables of the harness's environment the sandbox keeps (without --agent-network).
_KEPT = ("LANG", "LC_ALL", "PYENV_VERSION")
#: First uid of the range a root harness runs its episodes as (one uid per episode, none of a real user's).
_UID_BASE = 1_500_000_000
_UID_SPAN = 500_000_000
_episodes = itertools.count()


@dataclass(frozen=True)
class Limits:
    """What one sandboxed episode may use (docs/agent-protocol.md, "Sandbox"); the run record's
    ``agent_meta.sandbox_limits``."""

    #: Processes and threads at once (RLIMIT_NPROC of the episode's own uid).
    tasks: int = 64
    #: Address space of each process (RLIMIT_AS), bytes.
    memory_bytes: int = 1 << 30
    #: CPU time of each process (RLIMIT_CPU), seconds: SIGXCPU, then SIGKILL a second later.
    cpu_seconds: int = 300
    #: Size of the private, memory-backed /tmp, bytes.
    tmp_bytes: int = 256 << 20
    #: Largest file a process may write (RLIMIT_FSIZE), bytes.
    file_bytes: int = 256 << 20
    #: Memory of the whole process tree together, its /tmp's pages included (a control group, agents/cgroups.py,
    #: where the machine lets the harness make one), bytes.
    tree_memory_bytes: int = 1 << 30
    #: CPU rate of the whole process tree together (a control group's quota), cores.
    tree_cpu_cores: float = 1.0

    def to_json(self) -> dict[str, int | float]:
        """The limits as JSON (the record's ``agent_meta.sandbox_limits``, where :meth:`tree` then says which of
        the tree's held)."""
        return asdict(self)

    def tree(self) -> TreeLimits:
        """The limits of the whole process tree (agents/cgroups.py): its memory, its tasks, its CPU rate."""
        return TreeLimits(memory_bytes=self.tree_memory_bytes, tasks=self.tasks, cpu_cores=self.tree_cpu_cores)


LIMITS = Limits()
#: Size of the sandbox's private /tmp (bytes): memory-backed, so bounded.
TMP_BYTES = LIMITS.tmp_bytes


@functools.cache
def bwrap_problem() -> str | None:
    """Why no bubblewrap sandbox can be made here (None: it can). Probed once per process, with the sandbox
    :func:`wrap` makes (namespaces, the uid switch and the limits)."""
    exe = shutil.which(BWRAP)
    if exe is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    for tool in ("prlimit", *(("setpriv",) if os.geteuid() == 0 else ())):
        if _system_tool(tool) is None:
            return f"{tool} (util-linux) is not installed in /usr/bin"
    true = shutil.which("true", path="/usr/bin:/bin")
    if true is None:
        return "no 'true' program to probe the sandbox with"
    try:
        proc = subprocess.run(wrap([true]), capture_output=True, timeout=20, check=False, env=environment(False))
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


def environment(network: bool) -> dict[str, str]:
    """The environment bubblewrap itself is started with (the sandbox's: its init, pid 1 in the sandbox, is visible
    to the agent, so it holds nothing the agent may not have)."""
    if network:  # an agent that calls a model needs its endpoint's key and proxy settings: it gets them all
        return dict(os.environ)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "TMPDIR": "/tmp"}
    env.update({name: os.environ[name] for name in _KEPT if name in os.environ})
    return env


def wrap(argv: list[str], *, network: bool = False, limits: Limits = LIMITS,
         setenv: dict[str, str] | None = None) -> list[str]:
    """The command line that runs ``argv`` inside a fresh bubblewrap sandbox (module docstring), with the variables
    ``setenv`` added to its environment. Start it with :func:`environment`'s variables only."""
    exe = shutil.which(BWRAP)
    if exe is None:
        raise Gf01Error("bubblewrap (bwrap) is not installed", field="--sandbox")
    program = os.path.abspath(shutil.which(argv[0]) or argv[0])
    root = os.geteuid() == 0
    if root:
        # No user namespace: the program is switched to a uid of its own below, which RLIMIT_NPROC binds (root is
        # exempt from it, and a user namespace made by root maps its users to root).
        args = [exe, "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
                *(() if network else ("--unshare-net",)), "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args = [exe, "--unshare-all", *(("--share-net",) if network else ()), "--die-with-parent", "--new-session",
                "--cap-drop", "ALL"]
    for d in _SYSTEM:
        if os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for link in _LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    # The private /tmp first, then the binds over it: an interpreter under /tmp stays visible.
    # /dev read-only: bubblewrap's /dev is a tmpfs of half the machine's memory, and its /dev/shm is writable by a
    # program that owns it (an unprivileged harness's user namespace): files there escaped the /tmp limit (ninth
    # red-team round, tests/test_sandbox_attacks.py). Its devices (/dev/null, ...) stay writable.
    args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--perms", "01777", "--size",
             str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    binds = _Binds()
    for interpreter in _interpreters(program):
        binds.installation(interpreter)
    binds.executable(program)
    inner = [_seen_as(program)]
    named = dict(_named_files(argv))
    for word in argv[1:]:
        path = named.get(word)
        if path is not None and os.path.realpath(path) == path:
            binds.file(path)  # read-only: the agent can neither rewrite it nor keep state in it
            inner.append(path)
        else:  # not a file; or one reached through a link, never bound (check_named_files refuses it)
            inner.append(word)
    args += binds.args
    args += ["--chdir", "/tmp"]
    if network:
        # The whole environment, inherited from bubblewrap's (started with it): never on a command line, which
        # every user of the machine can read in /proc.
        shown = {"HOME": "/tmp", "TMPDIR": "/tmp", **(setenv or {})}
    else:
        args.append("--clearenv")
        shown = {**environment(network), **(setenv or {})}
    for name, value in sorted(shown.items()):
        args += ["--setenv", name, value]
    return [*args, "--", *_confined(limits, root), *inner]


def _named_files(argv: list[str]) -> list[tuple[str, str]]:
    """The words of ``argv`` after the program that name existing regular files (not directories, devices or FIFOs:
    a named disk would be shown raw; not ``-options``), each with its absolute path: the files the sandbox shows the
    program."""
    out = []
    for word in argv[1:]:
        path = Path(word)
        if word and not word.startswith("-") and path.is_file():
            out.append((word, os.path.abspath(word)))
    return out


def check_named_files(argv: list[str]) -> None:
    """Refuse (Gf01Error) a file named on the command line that is a symbolic link or lies under one: the sandbox
    shows a named file by its real path only, since a link in a participant's package (``weights.bin ->
    ../bundle.json``) would show the program whatever it points at, the bundle beside it included."""
    for word, path in _named_files(argv):
        real = os.path.realpath(path)
        if real != path:
            raise Gf01Error(f"{quote(word, 80)} is a symbolic link (or lies under one) to {quote(real, 120)}: the "
                            "sandbox shows a file the command names by its real path only, so that what the "
                            "program reads is what the command says; name that file itself", field="--agent-cmd")


def shown(argv: list[str], *, network: bool = False) -> list[str]:
    """The host paths the sandbox of ``argv`` shows the program (read-only): the system directories, the
    interpreter's installation, the program and the files its command names."""
    args = wrap(argv, network=network)
    args = args[:args.index("--")]
    return [args[k + 1] for k, word in enumerate(args) if word == "--ro-bind"]


def check_hidden(argv: list[str], files: list[str | os.PathLike[str] | None], *, network: bool = False) -> None:
    """Refuse (Gf01Error) a run whose own files (the bundle, the runs file, a key, the agent's output) the sandbox
    of ``argv`` would show the program: a bundle kept under /opt, /etc or /usr, in the interpreter's installation,
    or named on the agent's command line could be read, and its oracle certificates played."""
    dirs = shown(argv, network=network)
    for f in files:
        if f is None:
            continue
        real = os.path.realpath(f)
        for d in dirs:
            if real == d or real.startswith(d.rstrip(os.sep) + os.sep):
                raise Gf01Error(f"{quote(os.fspath(f), 120)} lies in {quote(d, 120)}, which the agent's sandbox shows "
                                "it (read-only): the program could read it; keep the bundle, the runs file, keys "
                                "and the agent's output outside /usr, /etc, /opt, the interpreter's installation "
                                "and the files the agent's command names", field="--agent-cmd")


def _confined(limits: Limits, root: bool) -> list[str]:
    """The programs that put the agent under its limits, before it is executed: under a root harness ``setpriv``
    to the episode's own uid (no groups, no capabilities, no new privileges), then ``prlimit``."""
    prlimit = _system_tool("prlimit") or "/usr/bin/prlimit"
    if root:
        uid = str(_UID_BASE + (os.getpid() * 4099 + next(_episodes)) % _UID_SPAN)
        tasks = limits.tasks
        head = [_system_tool("setpriv") or "/usr/bin/setpriv", "--reuid", uid, "--regid", uid, "--clear-groups",
                "--inh-caps=-all", "--no-new-privs", "--"]
    else:  # the harness's user is the agent's (mapped in its user namespace): its processes count as well
        tasks = _user_tasks(os.getuid()) + limits.tasks
        head = []
    return [*head, prlimit, f"--nproc={tasks}", f"--as={limits.memory_bytes}",
            f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}", f"--fsize={limits.file_bytes}", "--"]


def _system_tool(name: str) -> str | None:
    """A program of the system directories (bound in every sandbox), never one of PATH's other directories."""
    return shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")


def _user_tasks(uid: int) -> int:
    """Processes and threads whose real uid is ``uid`` (Linux /proc)."""
    n = 0
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            n += int(fields.get("Threads", "1").strip() or 1)
    return n


def _seen_as(path: str) -> str:
    """``path`` with its directories resolved (the sandbox holds them at their real paths), its last part kept (a
    venv's ``bin/python`` is a link whose name tells Python where the venv is)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _in_system(path: str) -> bool:
    """Whether ``path`` is in the system directories every sandbox holds (bound, or a link to them)."""
    return any(path == d or path.startswith(d + os.sep) for d in (*_SYSTEM, *_LINKS))


def _interpreters(program: str, depth: int = 4) -> list[str]:
    """The interpreters that run ``program``: itself when it is a Python, and the ``#!`` line's (``/usr/bin/env
    NAME`` looked up on PATH), recursively."""
    found = [program] if os.path.basename(program).startswith("python") else []
    path = program
    for _ in range(depth):
        try:
            with open(path, "rb") as fh:
                head = fh.read(256)
        except OSError:
            break
        if not head.startswith(b"#!"):
            break
        words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
        if not words:
            break
        nxt = words[0]
        if os.path.basename(nxt) == "env":
            names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
            nxt = shutil.which(names[0]) if names else None
        if not nxt:
            break
        path = os.path.abspath(nxt)
        found.append(path)
    return found


class _Binds:
    """The bwrap arguments that show chosen host paths in the sandbox, read-only, at their real paths: directories
    made on the way (mode 0755: the agent's uid must pass them), each path once."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self._bound: set[str] = set()  # bound paths and links made
        self._made: set[str] = set()  # directories made on the way to them

    def _covered(self, dest: str) -> bool:
        return _in_system(dest) or any(dest == b or dest.startswith(b + os.sep) for b in self._bound)

    def _parents(self, dest: str) -> None:
        parts = Path(dest).parts
        for k in range(2, len(parts)):
            d = os.path.join(*parts[:k])
            if d == "/tmp" or d in self._made or self._covered(d):
                continue
            self._made.add(d)
            self.args += ["--perms", "0755", "--dir", d]

    def _bind(self, src: str, dest: str) -> None:
        if self._covered(dest):
            return
        self._parents(dest)
        self._bound.add(dest)
        self.args += ["--ro-bind", src, dest]

    def file(self, path: str) -> None:
        """A file (or directory) at ``path`` and, when it is a symbolic link, each link on the way to its target."""
        for _ in range(40):
            dest = _seen_as(path)
            if os.path.islink(dest):
                target = os.readlink(dest)
                if not self._covered(dest):
                    self._parents(dest)
                    self._bound.add(dest)
                    self.args += ["--symlink", target, dest]
                path = os.path.normpath(os.path.join(os.path.dirname(dest), target))
                continue
            if os.path.exists(dest):
                self._bind(dest, dest)
            return

    def executable(self, program: str) -> None:
        """The program's own file; a pyenv shim brings its pyenv root (the shim runs ``pyenv exec``)."""
        parent = os.path.dirname(program)
        if os.path.basename(parent) == "shims" and os.path.isdir(os.path.join(os.path.dirname(parent), "libexec")):
            self._bind(os.path.realpath(os.path.dirname(parent)), os.path.realpath(os.path.dirname(parent)))
        self.file(program)

    def installation(self, interpreter: str) -> None:
        """An interpreter, each link on its way, and the libraries of each installation those lie in: a venv's
        ``pyvenv.cfg`` and ``lib`` (``lib64``) and its base's (``home``), an installation's ``lib``."""
        self.executable(interpreter)
        hops, path = [], interpreter
        for _ in range(40):
            dest = _seen_as(path)
            hops.append(dest)
            if not os.path.islink(dest):
                break
            path = os.path.normpath(os.path.join(os.path.dirname(dest), os.readlink(dest)))
        for hop in hops:
            bindir = os.path.dirname(hop)
            if os.path.basename(bindir) != "bin":
                continue
            prefix = os.path.dirname(bindir)
            cfg = os.path.join(prefix, "pyvenv.cfg")
            if os.path.isfile(cfg):
                self.file(cfg)
                home = _venv_home(cfg)
                if home is not None:
                    self._libraries(os.path.dirname(os.path.realpath(home)))
            self._libraries(prefix)

    def _libraries(self, prefix: str) -> None:
        for name in ("lib", "lib64"):
            lib = os.path.join(prefix, name)
            if os.path.isdir(lib):
                self.file(lib)


def _venv_home(cfg: str) -> str | None:
    """The ``home`` of a venv's ``pyvenv.cfg``: its base interpreter's directory."""
    try:
        text = Path(cfg).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return value.strip()
    return None
