"""``cmd``: any program speaking gf01.agent.v1 on stdin/stdout, one process per episode (docs/agent-protocol.md).

The harness writes one canonical JSON message per line to the program's stdin (start, then one observation per step,
then end) and reads one action per line from its stdout. The program is never trusted:

- a line that is not JSON is fault ``not_json``; JSON that is not an action (not an object, unknown keys, wrong
  types) or a line longer than ``max_line`` bytes is fault ``bad_action``: both non-fatal, the step has no edit.
  A well-formed action goes to the episode engine, the only judge of what it asks for (as for every transport):
  one whose ``"set"`` names something that is not an input or gives a value other than the integers 0 and 1
  (``1.0`` and ``true`` are not) is void there, a ``bad_action`` too (none of its atoms is committed); what it
  refuses of a valid action (budgets, another step's ``"t"``) is its refusal, not a fault;
- no line within ``step_timeout`` seconds is fault ``timeout``, and stdout closing (the program exited or crashed)
  is fault ``crash``; both are fatal: the process group is killed and the rest of the episode has no edits;
- stderr is drained all along (a chatty program never blocks on it) and its last ``STDERR_TAIL`` bytes go into the
  crash message.

The program runs in its own process group (a new session), which :meth:`SubprocessAgent.close` always ends: stdin is
closed (end of input asks it to exit), then SIGTERM and SIGKILL to the whole group after short grace periods, and
the process is reaped. When the harness is stopping (Ctrl-C), play_run calls :meth:`SubprocessAgent.abort`
instead: SIGKILL to the group at once, since a stop must not wait on a program that ignores its end.
Where nothing of the harness runs any more, the kernel ends the program: it is started with the parent-death
signal SIGKILL (:func:`solvers.limits.die_with_parent`, Linux), so kill -9 of the harness, or of a pool worker
that :func:`gf01_formal.workers.kill` stops, takes it along; and its group is held
(:func:`gf01_formal.workers.hold_group`), so a harness or worker stopped by SIGTERM first kills the group, the
program's own children included. (After a kill -9 only the program itself is sure to die: children it started get
end of input, not the signal. A wrapper script should ``exec`` the agent.) The argv is executed directly, never
through a shell.
:func:`check_command` refuses, before any episode is played, a command that cannot be started at all.

Built from a spec (``gf01 evaluate --agent-cmd``, ``gf01 play --agent-cmd``), the program runs in a bubblewrap
sandbox (:mod:`gf01_formal.agents.sandbox`): its own PID, mount and network namespaces, so it can see neither the
harness's processes nor the bundle, and everything it started dies with the sandbox's init when the episode ends.

>>> agent = SubprocessAgent(check_command("python3 examples/agent_example.py"), step_timeout=5.0)
>>> agent.meta
{'cmd': 'python3 examples/agent_example.py'}
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import select
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gf01_formal.agents.base import MAX_COMMAND, Agent, AgentFault
from gf01_formal.agents.cgroups import NOT_STARTED, Tree
from gf01_formal.agents.sandbox import LIMITS, Kind, environment, wrap
from gf01_formal.play.protocol import (
    Action,
    End,
    Observation,
    Start,
    ToolRequest,
    ToolResult,
    parse_action,
    text,
)
from gf01_formal.workers import hold_group, kills, release_group
from hoa.errors import Gf01Error, quote
from solvers.limits import die_with_parent

if TYPE_CHECKING:
    from gf01_formal.agents.tools import TrackTools

#: Longest action line read (bytes, newline excluded); a longer line is a bad action and is skipped to its end.
MAX_LINE = 64 * 1024
#: Bytes of the program's stderr kept for error messages.
STDERR_TAIL = 2000
#: Seconds a program gets to exit after its stdin closes, then after SIGTERM, before SIGKILL.
GRACE = 1.0
DEFAULT_STEP_TIMEOUT = 30.0
#: The most lines read from the program and not yet taken (extra lines are the next steps' answers): past it the
#: harness stops reading its output until one is taken (so at most one read's lines more are kept), and a program
#: that floods it costs the harness little memory.
MAX_BACKLOG = 4096
#: The most bytes one episode adds to its output file (``--agent-output``): the sandbox's file-size limit.
OUTPUT_BYTES = LIMITS.file_bytes
_CHUNK = 65536


def check_command(cmd: Any) -> list[str]:
    """The argv of a command line (POSIX shell words), refused with a Gf01Error when it cannot be started at all:
    empty, unparsable, or a program that is not found or not executable."""
    if not isinstance(cmd, str) or not cmd.strip():
        raise Gf01Error("the agent command is empty (give a command line, e.g. 'python3 my_agent.py')",
                        field="--agent-cmd")
    if len(cmd) > MAX_COMMAND:  # longer than the kernel takes as one argument; and shlex is slow on megabytes
        raise Gf01Error(f"the agent command {quote(cmd, 80)} is longer than {MAX_COMMAND} characters",
                        field="--agent-cmd")
    try:
        argv = shlex.split(cmd)
    except ValueError as ex:
        raise Gf01Error(f"cannot parse the agent command {quote(cmd, 80)}: {ex}", field="--agent-cmd") from None
    program = argv[0]
    found = shutil.which(program)
    if found is None:
        where = "is not an executable file" if os.sep in program else "is not found on PATH"
        raise Gf01Error(f"cannot start the agent command: {quote(program, 80)} {where}", field="--agent-cmd")
    return argv


def open_output(path: str) -> int:
    """A descriptor of ``path`` opened for appending (made when missing): the output file the user names for the
    program. Gf01Error for anything but a regular file (a device, a directory, a FIFO), one that cannot be opened,
    and a runs file a writer holds locked (``evaluate``, ``campaign``: the program would append records to it)."""
    from gf01_formal.artifacts import check_unlocked

    try:
        check_unlocked(Path(path))
    except Gf01Error as ex:
        raise Gf01Error(f"{quote(path, 80)}: {ex.message}", field="--agent-output") from None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY, 0o644)
    except OSError as ex:
        raise Gf01Error(f"cannot open {quote(path, 80)}: {ex.strerror or ex}", field="--agent-output") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Gf01Error(f"{quote(path, 80)} is not a regular file", field="--agent-output")
    os.set_blocking(fd, True)
    return fd


def check_output_file(path: str | os.PathLike[str] | None,
                      inputs: Iterable[str | os.PathLike[str] | None]) -> None:
    """Refuse (Gf01Error) an output file for the program (``--agent-output``) that is one of the command's own files,
    ``inputs`` (the bundle, the runs file, a key): the program could append to it (a forged line in the runs file,
    a line in the bundle). The same file after links, or the same path when it does not exist yet."""
    if path is None:
        return
    real = os.path.realpath(path)
    for source in inputs:
        if source is None:
            continue
        same = os.path.samefile(path, source) if os.path.exists(path) and os.path.exists(source) else \
            real == os.path.realpath(source)
        if same:
            raise Gf01Error(f"{quote(os.fspath(path), 80)} is also a file of this command "
                            f"({quote(os.fspath(source), 80)}): the agent would write into it; give another file",
                            field="--agent-output")


class SubprocessAgent(Agent):
    """An external agent process speaking gf01.agent.v1 (module docstring); one process per episode."""

    def __init__(
        self, argv: list[str], step_timeout: float = DEFAULT_STEP_TIMEOUT, *, max_line: int = MAX_LINE,
        sandbox: Kind = "none", network: bool = False,
        tools: TrackTools | None = None, output: str | None = None,
    ) -> None:
        #: The file the user names as the program's output (``--agent-output``): opened for appending by the
        #: harness, which copies into it what the program writes to the pipe handed over as the descriptor
        #: ``$GF01_OUTPUT_FD`` (the file itself never reaches the program: through /proc/self/fd a descriptor of
        #: it could be opened again for reading, and its size read, a state kept from one episode to the next).
        self.output = output
        self._output_file: int | None = None  # the harness's descriptor of the output file, during an episode
        self._output_pipe: int | None = None  # the read end of the program's output pipe
        self._output_left = 0  # bytes the episode may still add to its output file
        self.tools = tools  # what the track allows during a turn (agents/tools.py); None: nothing (EVAL-CB)
        self.argv = list(argv)
        #: How the program is isolated (:mod:`gf01_formal.agents.sandbox`); the run record carries it.
        self.sandbox: Kind = sandbox
        self.network = network
        self.step_timeout = step_timeout
        self.max_line = max_line
        self.meta: dict[str, Any] = {"cmd": shlex.join(self.argv)}
        if sandbox == "bwrap":  # the record states what the episode could use (each episode's start, what held)
            self.meta["sandbox_limits"] = {**LIMITS.to_json(), **NOT_STARTED}
        self._tree: Tree | None = None  # the episode's control groups (agents/cgroups.py)
        self._proc: subprocess.Popen[bytes] | None = None
        self._selector: selectors.BaseSelector | None = None
        self._out = bytearray()  # stdout read but not yet taken as lines
        self._lines: deque[bytes | None] = deque()  # complete lines; None marks a line cut for being too long
        self._skipping = False  # inside a too-long line: drop bytes up to its newline
        self._stdout_open = False
        self._stderr = bytearray()
        self._pending = b""  # bytes still to write to stdin
        self._dead: AgentFault | None = None  # a fatal fault met outside act(), raised at the next act()

    # -- the Agent interface ---------------------------------------------------------------------------------------

    def start(self, message: Start) -> None:
        """Start the program and send it the start message (its clock for the first action starts now)."""
        self.close()
        self._out, self._lines, self._skipping, self._stderr = bytearray(), deque(), False, bytearray()
        self._dead = None
        since = kills()
        try:
            # preexec_fn runs Python between fork and exec, which the subprocess docs call unsafe with threads:
            # die_with_parent only calls a function loaded at import and os.getppid, taking no lock another thread
            # could hold. The parent-death signal is the one thing that ends the program after a kill -9 of ours.
            fds = () if self.output is None else (self._open_output(self.output),)
        except Gf01Error as ex:
            self._dead = AgentFault("crash", f"cannot open its output file: {ex.message}", fatal=True)
            return
        sandboxed = self.sandbox == "bwrap"
        tree = self._tree = Tree.make(LIMITS.tree()) if sandboxed else None
        try:
            extra = {"GF01_OUTPUT_FD": str(fds[0])} if fds else {}
            argv = wrap(self.argv, network=self.network, setenv=extra) if sandboxed else self.argv
            if tree is not None:
                tree.open()
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, start_new_session=True, bufsize=0,
                                          env=environment(self.network) if sandboxed else
                                          {**os.environ, **extra} if extra else None, pass_fds=fds,
                                          preexec_fn=functools.partial(_in_child, os.getpid(), tree))
        except OSError as ex:  # e.g. not executable after all: the agent's failure, seen at its first action
            self._dead = AgentFault("crash", f"cannot start {quote(self.argv[0], 80)}: {ex.strerror or ex}",
                                    fatal=True)
            self._close_output()
            return
        finally:
            for fd in fds:  # the program holds its own copy
                os.close(fd)
            if tree is not None:
                tree.closed()
        if tree is not None:  # what held for this episode, never more: the record says it
            tree.confirm(self._proc.pid)
            self.meta["sandbox_limits"] = {**LIMITS.to_json(), **tree.held()}
        hold_group(self._proc.pid, since=since)
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            os.set_blocking(stream.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._proc.stdout, selectors.EVENT_READ, "out")
        self._selector.register(self._proc.stderr, selectors.EVENT_READ, "err")
        if self._output_pipe is not None:
            self._selector.register(self._output_pipe, selectors.EVENT_READ, "file")
        self._stdout_open = True
        self._deadline = time.monotonic() + self.step_timeout
        try:
            self._queue(text(message))
        except AgentFault as fault:  # the harness's start() has no fault path: report it with the first action
            self._dead = fault

    def act(self, observation: Observation | None) -> Action:
        """Send the last observation (none before step 0) and read the program's action for this step."""
        if self._dead is not None:
            raise self._dead
        try:
            if observation is not None:
                self._deadline = time.monotonic() + self.step_timeout
                self._queue(text(observation))
            line = self._read_line()
            while line is not None and is_tool_line(line):
                # A tool request before the action: answered by one result line, the step's clock restarted
                # (the harness's answering time is not the agent's). Denied on a track without that tool.
                self._queue(text(self._tool_result(line)))
                self._deadline = time.monotonic() + self.step_timeout
                line = self._read_line()
        except AgentFault as fault:  # timeout, crash or a denied tool: fatal, nothing more is sent to the program
            self._dead = fault
            if fault.kind == "tool_denied":
                self._kill()
            raise
        if line is None:
            raise AgentFault("bad_action", f"an action line is longer than {self.max_line} bytes")
        return action_of_line(line)

    def _tool_result(self, line: bytes) -> ToolResult:
        return tool_result_of_line(line, self.tools)

    # -- raw lines, for a relay that judges them elsewhere (gf01 evaluate --remote) ---------------------------------

    def send_line(self, line: str) -> None:
        """Write one message line to the program as it is (the relay forwards what the server sent); the clock
        for its next line starts now."""
        if self._dead is not None:
            raise self._dead
        self._deadline = time.monotonic() + self.step_timeout
        try:
            self._queue(line)
        except AgentFault as fault:
            self._dead = fault
            raise

    def next_line(self) -> bytes | None:
        """The program's next line, unjudged (None: a line cut for being longer than ``max_line``); AgentFault
        ``timeout`` or ``crash`` (fatal) as for :meth:`act`."""
        if self._dead is not None:
            raise self._dead
        try:
            return self._read_line()
        except AgentFault as fault:
            self._dead = fault
            raise

    @property
    def tool_log(self) -> list[dict[str, Any]]:
        """The oracle search's log entries, header first (the runner takes EVAL-TA's from the planner itself)."""
        if self.tools is None or self.tools.oracle is None:
            return []
        return [json.loads(x) for x in self.tools.oracle.log_text().splitlines()]

    def observe(self, observation: Observation) -> None:
        """Send the episode's last observation (``done`` is true: no action is expected)."""
        self._deliver(text(observation))

    def end(self, message: End) -> None:
        """Send the end message with the scored result."""
        self._deliver(text(message))

    def close(self) -> None:
        """End the program and its process group, whatever state it is in, and reap it (idempotent): end of input,
        then SIGTERM and SIGKILL after ``GRACE`` seconds each, for a program that takes its time to exit."""
        self._end(polite=True)

    def abort(self) -> None:
        """End the program's process group at once (SIGKILL) and reap it (idempotent): the harness is stopping
        (Ctrl-C), and the stop must not wait on a program that ignores its end."""
        self._end(polite=False)

    def _end(self, *, polite: bool) -> None:
        proc, self._proc = self._proc, None
        tree, self._tree = self._tree, None
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        if proc is None:
            self._close_output()
            if tree is not None:
                tree.remove()
            return
        try:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            if polite and not self._wait_copying(proc, GRACE):
                _signal_group(proc.pid, signal.SIGTERM)
                self._wait_copying(proc, GRACE)
        finally:
            # Always: the group may hold children of the program even after the program itself has exited.
            _signal_group(proc.pid, signal.SIGKILL)
            release_group(proc.pid)  # before the reap, after which the id could name another group
            proc.wait()
            self._close_output()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            if tree is not None:  # its sandbox is gone, and with it every process of the tree: the groups go too
                tree.remove()

    # -- I/O -------------------------------------------------------------------------------------------------------

    def _queue(self, line: str) -> None:
        """Queue one message line for stdin and write it (within the step's deadline)."""
        self._pending += line.encode("utf-8") + b"\n"
        self._pump(until_line=False)

    def _deliver(self, line: str) -> None:
        """Best-effort write of a message no answer is expected to (the program may already have exited)."""
        if self._proc is None or self._dead is not None:
            return
        self._deadline = time.monotonic() + min(self.step_timeout, GRACE)
        with contextlib.suppress(AgentFault):
            self._queue(line)

    def _read_line(self) -> bytes | None:
        """The next line of stdout (None: a line cut for being too long); AgentFault on timeout or exit."""
        self._pump(until_line=True)
        line = self._lines.popleft()
        proc, selector = self._proc, self._selector
        if (self._stdout_open and len(self._lines) < MAX_BACKLOG and proc is not None and proc.stdout is not None
                and selector is not None and proc.stdout.fileno() not in _registered(selector)):
            selector.register(proc.stdout, selectors.EVENT_READ, "out")  # read again: the backlog went down
        return line

    def _pump(self, *, until_line: bool) -> None:
        """Move bytes until stdin's pending bytes are written and, with ``until_line``, a line is read; stderr is
        drained meanwhile. Faults: ``timeout`` past the deadline, ``crash`` when the program is gone."""
        proc, selector = self._proc, self._selector
        assert proc is not None and selector is not None and proc.stdin is not None
        while True:
            if self._pending and proc.stdin.fileno() not in _registered(selector):
                selector.register(proc.stdin, selectors.EVENT_WRITE, "in")
            if not self._pending and proc.stdin.fileno() in _registered(selector):
                selector.unregister(proc.stdin)
            if not self._pending and (not until_line or self._lines):
                return
            if until_line and not self._stdout_open and not self._pending:
                raise self._crash("closed its output")
            left = self._deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise AgentFault("timeout", f"no action within {self.step_timeout:g} s", fatal=True)
            self._serve(proc, left)

    def _serve(self, proc: subprocess.Popen[bytes], wait: float) -> None:
        """One round of I/O: wait up to ``wait`` seconds for the program's pipes, then write and read what is ready
        (``crash`` when the program stopped reading its input)."""
        assert self._selector is not None
        for key, _ in self._selector.select(wait):
            if key.data == "in":
                self._write(proc)
            elif key.data == "out":
                self._read_out(proc)
            elif key.data == "file":
                self._copy_output()
            else:
                self._read_err(proc)

    def _write(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None
        try:
            n = os.write(proc.stdin.fileno(), self._pending[:_CHUNK])
        except BlockingIOError:
            return
        except (BrokenPipeError, OSError):
            self._pending = b""
            raise self._crash("stopped reading its input") from None
        self._pending = self._pending[n:]

    def _read_chunk(self, stream: IO[bytes]) -> bytes | None:
        """What ``stream`` has ready: None when nothing yet, ``b""`` at its end (it is then unregistered)."""
        assert self._selector is not None
        try:
            data = os.read(stream.fileno(), _CHUNK)
        except BlockingIOError:
            return None
        if not data:
            self._selector.unregister(stream)
        return data

    def _read_out(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        data = self._read_chunk(proc.stdout)
        if data == b"":
            self._stdout_open = False
        if not data:
            return
        self._out += data
        start = 0  # cut once per chunk, not once per line (a chunk of short lines would be split quadratically)
        while True:
            cut = self._out.find(b"\n", start)
            if cut < 0:
                break
            line, start = bytes(self._out[start:cut]), cut + 1
            if self._skipping:
                self._skipping = False
            elif len(line) > self.max_line:
                self._lines.append(None)
            elif line.strip():  # blank lines are ignored
                self._lines.append(line)
        del self._out[:start]
        if len(self._out) > self.max_line:  # bound what is kept: the rest of this line is dropped
            if not self._skipping:
                self._lines.append(None)
            self._skipping = True
            self._out.clear()
        if len(self._lines) >= MAX_BACKLOG and self._selector is not None:
            self._selector.unregister(proc.stdout)  # read again when a line is taken (_read_line)

    def _read_err(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        data = self._read_chunk(proc.stderr)
        if not data:
            return
        self._stderr += data
        del self._stderr[:-STDERR_TAIL]

    def _crash(self, what: str) -> AgentFault:
        """The fatal fault of a program that is gone (``what`` it did, when it has not exited), with its exit status
        and the tail of its stderr."""
        proc = self._proc
        if proc is not None:
            try:
                what = f"exited with status {proc.wait(GRACE)}"
            except subprocess.TimeoutExpired:
                self._kill()
            self._drain_err(proc)
        tail = _redacted(self._stderr.decode("utf-8", "replace").strip())
        message = f"the agent {what}"
        if tail:
            message += f"; its stderr ends: {quote(tail[-500:], 520, bare=True)}"
        return AgentFault("crash", message, fatal=True)

    def _drain_err(self, proc: subprocess.Popen[bytes]) -> None:
        """Read what is left on stderr without waiting (the program has exited)."""
        if proc.stderr is None or proc.stderr.closed:
            return
        while True:
            try:
                data = os.read(proc.stderr.fileno(), _CHUNK)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            self._stderr += data
            del self._stderr[:-STDERR_TAIL]

    # -- the output file (--agent-output) ---------------------------------------------------------------------------

    def _open_output(self, path: str) -> int:
        """Open the output file for the harness and make the program's pipe; the pipe's write end, for the
        program."""
        self._output_file = open_output(path)
        self._output_pipe, write_end = os.pipe()
        os.set_blocking(self._output_pipe, False)
        self._output_left = OUTPUT_BYTES
        return write_end

    def _copy_output(self) -> bool:
        """Copy what the program's output pipe holds into the output file, up to the episode's bound (the rest is
        read and dropped); whether the pipe may still bring more (False: empty for now, or at its end)."""
        if self._output_pipe is None or self._output_file is None:
            return False
        try:
            data = os.read(self._output_pipe, _CHUNK)
        except BlockingIOError:
            return False
        if not data:
            if self._selector is not None and self._output_pipe in _registered(self._selector):
                self._selector.unregister(self._output_pipe)
            return False
        kept = data[:self._output_left]
        self._output_left -= len(kept)
        while kept:
            kept = kept[os.write(self._output_file, kept):]
        return True

    def _wait_copying(self, proc: subprocess.Popen[bytes], seconds: float) -> bool:
        """Wait up to ``seconds`` for the program to exit, copying its output meanwhile (a program blocked on a
        full output pipe could not exit); whether it exited."""
        deadline = time.monotonic() + seconds
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self._output_pipe is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(left)
                continue
            ready, _, _ = select.select([self._output_pipe], [], [], min(left, 0.1))
            if ready and not self._copy_output():
                with contextlib.suppress(subprocess.TimeoutExpired):  # at its end: nothing more to copy
                    proc.wait(max(0.0, deadline - time.monotonic()))
        return True

    def _close_output(self) -> None:
        """Copy what is left in the output pipe (the program is gone) and close the pipe and the file."""
        if self._output_pipe is not None:
            # Bounded: under --sandbox none a child that left the program's session may still hold the pipe.
            for _ in range(64):
                if not self._copy_output():
                    break
            os.close(self._output_pipe)
            self._output_pipe = None
        if self._output_file is not None:
            os.close(self._output_file)
            self._output_file = None

    def _kill(self) -> None:
        if self._proc is not None:
            _signal_group(self._proc.pid, signal.SIGKILL)


def _in_child(parent: int, tree: Tree | None) -> None:
    """Between fork and exec of the program: die with the harness (``parent``), and enter the episode's control
    groups, so that everything the program starts is in them from its first instruction."""
    die_with_parent(parent)
    if tree is not None:
        tree.enter()


def is_tool_line(line: bytes | str) -> bool:
    """Whether a line is a tool request (an object whose ``type`` is ``tool``), not an action."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and obj.get("type") == "tool"



def action_of_line(line: bytes) -> Action:
    """The action of one line an agent wrote; AgentFault ``not_json`` or ``bad_action`` (both non-fatal) otherwise.
    What the action asks for is the episode's to judge (an unknown input voids it: docs/agent-protocol.md). Every
    transport of agent lines judges them here: this adapter, and the remote evaluation server (gf01_formal/remote/)."""
    try:
        json.loads(line)
    except (ValueError, RecursionError) as ex:
        raise AgentFault("not_json",
                         f"not JSON ({quote(str(ex), 80, bare=True)}): {quote(_shown(line), 120)}") from None
    try:
        return parse_action(line)
    except Gf01Error as ex:
        raise AgentFault("bad_action", f"{ex.message}: {quote(_shown(line), 120)}") from None


def tool_result_of_line(line: bytes, tools: TrackTools | None) -> ToolResult:
    """The answer to a tool line; AgentFault ``tool_denied`` (fatal) when the track allows no such tool (``tools``
    None: EVAL-CB) or the line is not a well-formed request (one whose atoms hold NaN or an infinite number included:
    the tool log could not carry it)."""
    try:
        request = ToolRequest.model_validate_json(line)
    except ValueError as ex:
        raise AgentFault("tool_denied", f"a malformed tool request ({quote(str(ex), 120, bare=True)}): "
                         f"{quote(_shown(line), 120)}", fatal=True) from None
    try:  # what is answered is logged as canonical JSON: NaN, Infinity (1e400) cannot be
        json.dumps(request.atoms, allow_nan=False)
    except (ValueError, RecursionError) as ex:
        raise AgentFault("tool_denied", f"a tool request that cannot be logged ({quote(str(ex), 80, bare=True)}: "
                         f"NaN, Infinity or a number past a double's range): {quote(_shown(line), 120)}",
                         fatal=True) from None
    if tools is None:
        raise AgentFault("tool_denied", f"asked for tool {request.tool!r}: EVAL-CB allows no tool", fatal=True)
    return ToolResult(tool=request.tool, result=tools.call(request.tool, request.atoms))


#: Parts of the names of environment variables that hold credentials (an API key, a token).
_SECRET_NAMES = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def _redacted(text: str) -> str:
    """``text`` with the values of the harness's credential variables (8 characters or more) replaced by their
    names: an agent given the environment (``--agent-network``) must not carry a key into the run record."""
    for name, value in sorted(os.environ.items()):
        if len(value) >= 8 and _SECRET_NAMES.search(name):
            text = text.replace(value, f"[${name}]")
    return text


def _registered(selector: selectors.BaseSelector) -> set[int]:
    return {key.fd for key in selector.get_map().values()}


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the process group led by ``pid`` (the agent's own session); gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _shown(line: bytes) -> str:
    """A line of the program's, as quoted in a fault's message (credentials of the harness's redacted)."""
    return _redacted(line.decode("utf-8", "replace"))
