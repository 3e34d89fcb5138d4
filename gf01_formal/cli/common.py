"""What every command shares: the option declarations (one spelling and one meaning each), the INSTANCE argument,
and, from :mod:`gf01_formal.cli.plain` (which needs no typer), the time budget of ``--seconds`` and plain-text or
JSON output.

Every command is a few lines: parse options, call one library function, print its result (:func:`emit`). This
module imports only typer: the library behind a command is imported when the command runs, so that help, a usage
error or an ``hoa`` command does not pay for pydantic and the solvers.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
import typer.core

# Re-exported: every command imports them from here.
from gf01_formal.cli.plain import DEFAULT_MEMORY, MAX_MEMORY, MAX_SECONDS, Deadline, emit, rows  # noqa: F401
from gf01_formal.runs.scoring_limit import SCORING_SECONDS, SERVE_SCORING_SECONDS  # noqa: F401
from hoa.errors import Gf01Error, quote

if TYPE_CHECKING:
    from encoders.problem import Problem
    from gf01_formal.instances.model import Instance

# typer prints each argument's Python type after its metavar ("CERT <str>"); our metavars already say what it is.
typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]

#: The names of solvers.api.BACKENDS (tests/test_cli.py checks that they agree).
BackendName = Literal["explicit", "sat", "bdd", "bdd-autoref", "forward"]

# -- the INSTANCE argument and the instance options (HOA files only) -----------------------------------------------

InstanceArg = Annotated[
    str,
    typer.Argument(
        metavar="INSTANCE",
        help="An instance file, a bundle (pick one instance with --id), or an HOA file (a Mealy controller) or an "
        "AIGER circuit with the "
        "instance options --trace/--trace-file and --effect.",
        show_default=False,
    ),
]
IdOpt = Annotated[str | None, typer.Option("--id", metavar="ID", help="The instance to use from a bundle.")]
TraceOpt = Annotated[
    str | None,
    typer.Option("--trace", metavar="TRACE", help="HOA/AIGER: the base trace, a word like 'r0&!r1;!r0&r1' (one letter "
                 "per step, every input named) or a JSON list of {input: 0|1} objects."),
]
TraceFileOpt = Annotated[
    Path | None, typer.Option("--trace-file", metavar="FILE", help="HOA/AIGER: read the base trace from FILE.")
]
EffectOpt = Annotated[
    str | None, typer.Option("--effect", metavar="EXPR", help="HOA/AIGER: the effect, e.g. 'g0 & !busy'.")
]
TStarOpt = Annotated[
    int | None, typer.Option("--t-star", metavar="N", min=0, help="HOA/AIGER: the target step t* (default: T-1).")
]
ModeOpt = Annotated[
    Literal["hard", "normal"] | None,
    typer.Option("--mode", help="HOA/AIGER: hard (the effect at t*) or normal (somewhere in [t*-w, t*]); "
                 "default: hard."),
]
WindowOpt = Annotated[
    int | None,
    typer.Option("--window", metavar="W", min=1, help="HOA/AIGER, normal mode: the window w (default: w(I) of "
                 "DEC-014b, measured from the instance; for an HOA file first, from the hard-mode oracle and count "
                 "only, as fast as the count allows: --seconds bounds the count, and stderr says when it starts and "
                 "what it found)."),
]
BudgetTOpt = Annotated[
    int | None,
    typer.Option("--budget-t", metavar="N", help="HOA/AIGER: B_T, the most distinct timesteps a certificate "
                 "may touch (default: T)."),
]
BudgetAOpt = Annotated[
    int | None,
    typer.Option("--budget-a", metavar="N", min=1, help="HOA/AIGER: B_A, the atom budget of the play protocol "
                 "(default: T x |AP_in|)."),
]
OutputsOpt = Annotated[
    str | None,
    typer.Option("--outputs", metavar="A,B", help="HOA files without controllable-AP: the output APs."),
]
EditOpt = Annotated[
    str | None,
    typer.Option("--edit", metavar="WHICH", help="AIGER: the inputs the player edits: all (default), uncontrollable "
                 "or controllable (SYNTCOMP's controllable_* split), or input names A,B; the others follow the base "
                 "trace inside the circuit."),
]
ResolveOpt = Annotated[
    str | None,
    typer.Option("--resolve", metavar="RULE", help="HOA: read a controller that is not output-deterministic (a game "
                 "arena) by RULE: first-edge (the first enabled edge in file order); without it such a file is "
                 "refused."),
]

# -- shared options ----------------------------------------------------------------------------------------------

#: Bounds on numbers a user gives, far above any real use: past them a number is a typo, and a time or a count that
#: large would overflow the system calls it reaches (poll, semaphores) instead of being refused in one line.
MAX_JOBS = 1024
MAX_COUNT = 10**7

StepTimeoutOpt = Annotated[
    float, typer.Option("--step-timeout", metavar="S", min=0.001, max=MAX_SECONDS,
                        help="External agents: seconds per step.")
]
SecondsOpt = Annotated[
    float | None,
    typer.Option("--seconds", metavar="S", min=0.0, max=MAX_SECONDS,
                 help="Time limit for the whole command; past it the answer is "
                 "'unknown' (exit 3), never a guess."),
]
MemoryOpt = Annotated[
    float,
    typer.Option("--memory", metavar="MIB", min=1.0, max=MAX_MEMORY,
                 help="Memory limit of each exact count, enumeration or best match (resident MiB of its process "
                 "and of its helper process); past it the answer is 'unknown' (exit 3), never a guess."),
]
ScoringMemoryOpt = Annotated[
    float,
    typer.Option("--memory", metavar="MIB", min=1.0, max=MAX_MEMORY,
                 help="Memory limit of each exact query that scores a run (count, gold set, best match; resident MiB "
                 "of its process and of its helper process); past it the run is recorded harness_error and a rerun "
                 "plays it again."),
]
ScoringSecondsOpt = Annotated[
    float,
    typer.Option("--scoring-seconds", metavar="S", min=0.001, max=MAX_SECONDS,
                 help="Time limit of scoring one run (wall seconds, its exact queries together: gold set, best "
                 "match); past it the run is recorded harness_error (not the agent's fault) and a rerun plays it "
                 "again."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON (one object per line).")]

# DEC-055: the declared adaptation of the agents a command plays (agents/adaptation.py; docs/runs.md).
AdaptationCondition = Literal["no_adaptation", "prompt_adaptation", "weight_finetune"]
AdaptConditionOpt = Annotated[AdaptationCondition | None, typer.Option(
    "--adaptation-condition", help="DEC-055: how the model was adapted to GF-01 (default no_adaptation).")]
AdaptBudgetOpt = Annotated[int | None, typer.Option(
    "--adaptation-budget-tokens", metavar="N", min=0, max=10**15,
    help="DEC-055: tokens spent adapting (0 for no_adaptation, > 0 otherwise).")]
AdaptScopeOpt = Annotated[str | None, typer.Option(
    "--adaptation-data-scope", metavar="SCOPE", help="DEC-055: what data the adaptation saw (none for "
    "no_adaptation; e.g. public_dev).")]
AdaptProtocolOpt = Annotated[str | None, typer.Option(
    "--adaptation-protocol-id", metavar="ID", help="DEC-055: the adaptation protocol's id (none for "
    "no_adaptation).")]


@dataclass(frozen=True)
class AdaptationFlags:
    """The four DEC-055 options as given (:func:`with_adaptation_options`), checked when the command declares them."""

    condition: str | None
    budget_tokens: int | None
    data_scope: str | None
    protocol_id: str | None

    def declared(self) -> Any:
        """The checked DEC-055 declaration (an Adaptation), None when none of the options was given."""
        if self.condition is None and self.budget_tokens is None and self.data_scope is None \
                and self.protocol_id is None:
            return None
        from gf01_formal.agents.adaptation import declare

        return declare(self.condition, self.budget_tokens, self.data_scope, self.protocol_id)


#: The adaptation options, in the order --help lists them.
_ADAPTATION_OPTIONS: dict[str, Any] = {"adaptation_condition": AdaptConditionOpt,
                                       "adaptation_budget_tokens": AdaptBudgetOpt,
                                       "adaptation_data_scope": AdaptScopeOpt,
                                       "adaptation_protocol_id": AdaptProtocolOpt}


BackendOpt = Annotated[
    BackendName | None,
    typer.Option("--backend", metavar="NAME", help="Solver backend: explicit, sat, bdd, bdd-autoref or forward "
                 "(default: each query's natural one, docs/solvers.md)."),
]
UnboundedOpt = Annotated[
    bool, typer.Option("--unbounded", help="M(I) rather than M_B(I): certificates may exceed B_T.")
]
GoldSetOpt = Annotated[
    Literal["M", "MB"],
    typer.Option("--gold-set", help="Where the AP/TS best match ranks its gold: M, every valid certificate (section "
                 "7.3, DEC-025), or MB, only those within B_T (budget-feasible gold; not the specification's)."),
]
OutputOpt = Annotated[Path, typer.Option("-o", "--output", metavar="FILE", help="Where to write (atomically).")]


SignKeyOpt = Annotated[
    Path | None,
    typer.Option("--sign-key", metavar="KEYFILE", help="The evaluator's Ed25519 private key (gf01 key new --kind "
                 "signing): each record is signed with it, for gf01 validate --key (docs/runs.md, Signatures)."),
]
SandboxOpt = Annotated[
    Literal["auto", "bwrap", "none"],
    typer.Option("--sandbox", help="Where an --agent-cmd program runs: auto (bubblewrap; refused when none can be "
                 "made), bwrap, or none (unisolated: it can read the hidden instance; never official)."),
]
AgentNetworkOpt = Annotated[
    bool, typer.Option("--agent-network", help="Give the sandboxed --agent-cmd program the network (and the "
                       "environment), for an agent that calls a model; off by default.")
]

LimitOpt = Annotated[
    int | None, typer.Option("--limit", metavar="N", min=1, max=10_000_000, help="Play only the bundle's first N "
                             "instances (a smoke test; a later run without it skips what was played).")
]
AgentNameOpt = Annotated[
    str | None, typer.Option("--agent-name", metavar="NAME", help="The name reports give the --agent-cmd program "
                             "or the --agent llm model (the same on every track; part of the run id).")
]

AgentOutputOpt = Annotated[
    Path | None, typer.Option("--agent-output", metavar="FILE", help="A file the --agent-cmd program may append "
                              "to (its log): opened by the harness, handed over as the descriptor $GF01_OUTPUT_FD; "
                              "nothing else is writable in the sandbox.")
]


def cmd_params(cmd: str, step_timeout: float, sandbox: str, network: bool, output: Path | None = None,
               label: str | None = None) -> dict[str, Any]:
    """The params of an external agent's spec: only what is stated joins (the default sandbox and no network keep
    the run ids of earlier runs; ``--sandbox none`` is another run, never taken for a sandboxed one). The program's
    content hash joins too, so that the run ids hash what runs, not where it lies (agents/base.py, spec_digest);
    ``label`` is ``--agent-name``."""
    from gf01_formal.agents.base import program_sha256

    params: dict[str, Any] = {"cmd": cmd, "step_timeout": step_timeout}
    if output is not None:
        params["output"] = str(output)
    digest = program_sha256(cmd)
    if digest is not None:
        params["program_sha256"] = digest
    if label is not None:
        params["label"] = label
    if sandbox != "auto":
        params["sandbox"] = sandbox
    if network:
        params["network"] = True
    return params


def instance_options(
    trace: str | None,
    trace_file: Path | None,
    effect: str | None,
    t_star: int | None,
    mode: str | None,
    window: int | None,
    budget_t: int | None,
    budget_a: int | None,
    outputs: str | None,
    edit: str | None = None,
    resolve: str | None = None,
) -> Any:
    """The InstanceOptions the flags give, or None when none was given (an instance file needs none)."""
    from gf01_formal.instances.sources import InstanceOptions

    given = [trace, trace_file, effect, t_star, mode, window, budget_t, budget_a, outputs, edit, resolve]
    if all(v is None for v in given):
        return None
    if trace is not None and trace_file is not None:
        raise Gf01Error("give the base trace once: --trace or --trace-file, not both", field="--trace")
    source = None
    if trace_file is not None:
        from hoa.files import read_text

        trace = read_text(trace_file)
        source = quote(str(trace_file), 200, bare=True)
    names = tuple(o.strip() for o in outputs.split(",") if o.strip()) if outputs is not None else None
    return InstanceOptions(trace=trace, effect=effect, t_star=t_star, mode=mode or "hard", window=window,
                           budget_t=budget_t, budget_a=budget_a, outputs=names, trace_source=source,
                           edit=edit or "all", resolve=resolve)


#: The instance options (HOA files only), in the order --help lists them.
_INSTANCE_OPTIONS: dict[str, Any] = {"trace": TraceOpt, "trace_file": TraceFileOpt, "effect": EffectOpt,
                                     "t_star": TStarOpt, "mode": ModeOpt, "window": WindowOpt, "budget_t": BudgetTOpt,
                                     "budget_a": BudgetAOpt, "outputs": OutputsOpt, "edit": EditOpt,
                                     "resolve": ResolveOpt}


def with_option_group(
    command: Callable[..., None], group: dict[str, Any], into: str, combine: Callable[..., Any]
) -> Callable[..., None]:
    """``command`` with the options ``group`` (parameter name -> annotated type, all defaulting to None) in place of
    its parameter ``into``, so typer, which reads the signature, lists them there; the command receives ``combine``
    of their values, in ``group``'s order, as ``into``."""
    own = inspect.signature(command, eval_str=True)
    params: list[inspect.Parameter] = []
    for name, p in own.parameters.items():
        if name != into:
            params.append(p)
            continue
        params += [inspect.Parameter(option, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                     annotation=annotation) for option, annotation in group.items()]

    @functools.wraps(command)
    def run(**kwargs: Any) -> None:
        values = [kwargs.pop(name) for name in group]
        command(**kwargs, **{into: combine(*values)})

    run.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run


def with_instance_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with the instance options (--trace ... --outputs) in place of its parameter ``options``, which
    receives :func:`instance_options` of their values.

    >>> @with_instance_options
    ... def oracle_cmd(instance: InstanceArg, options: Any = None) -> None: ...
    >>> "trace" in inspect.signature(oracle_cmd).parameters
    True
    """
    return with_option_group(command, _INSTANCE_OPTIONS, "options", instance_options)


def with_lazy_instance_options(command: Callable[..., None]) -> Callable[..., None]:
    """As :func:`with_instance_options`, but in place of ``make_options``, which receives a function making the
    InstanceOptions: the command calls it after its own checks, whose errors then come first."""
    return with_option_group(command, _INSTANCE_OPTIONS, "make_options",
                             lambda *values: functools.partial(instance_options, *values))


def with_adaptation_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with the DEC-055 adaptation options in place of its parameter ``adaptation_flags``, which
    receives them as one :class:`AdaptationFlags`."""
    return with_option_group(command, _ADAPTATION_OPTIONS, "adaptation_flags", AdaptationFlags)


def open_instance(path: str, instance_id: str | None, options: Any, deadline: Deadline) -> tuple[Instance, Problem]:
    """The INSTANCE argument's instance and Problem (:func:`gf01_formal.instances.sources.open_instance`)."""
    from gf01_formal.instances.sources import open_instance as open_

    def progress(line: str) -> None:
        print(f"gf01: {line}", file=sys.stderr, flush=True)

    # Reading, checking and measuring the instance are held to --seconds and --memory as its queries are.
    with deadline.guard("loading and measuring the instance"):
        inst, problem = open_(path, instance_id, options, count_limits=deadline.limits(), progress=progress)
    if options is not None and options.needs_measurement:
        from gf01_formal.instances.measure import base_shows_effect

        if base_shows_effect(problem):
            warn_trivial(path)
    return inst, problem


def warn_trivial(source: str | Path) -> None:
    """Warn on stderr, in one line, that the instance just measured from ``source`` is trivial (the work goes on)."""
    print(f"gf01: warning: {source}: the base run already shows the effect (the oracle's Eff_t is 0: the empty "
          "certificate is valid), so the instance asks for no edit; choose another trace, effect or t*",
          file=sys.stderr, flush=True)


def check_output(path: Path | str, *, inputs: Iterable[Path | str | None] = (), reread: bool = False) -> Path:
    """Refuse an unwritable output, or one that is one of the command's ``inputs``, before any work is done
    (:func:`gf01_formal.artifacts.check_output`)."""
    from gf01_formal.artifacts import check_output as check

    return check(path, inputs=inputs, reread=reread)


# -- output ------------------------------------------------------------------------------------------------------


def may_be_terminal() -> bool:
    """False where rich's ``Console(stderr=True).is_terminal`` is surely False: stderr is no terminal and neither
    ``TTY_COMPATIBLE`` nor ``FORCE_COLOR`` (which rich reads) is set. A command whose stderr is a pipe or a file (every
    process a test, a campaign or a script starts) then skips rich's import, about 0.08 s of CPU a process
    (docs/performance.md); elsewhere rich decides, as before."""
    import os

    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr, or a closed one: rich says no terminal too
        return False


@contextlib.contextmanager
def progress_bar(label: str, total: int | None = None) -> Iterator[Callable[..., None]]:
    """A progress bar with ETA on stderr when it is a terminal (rich, imported only here), silent otherwise; yields
    ``update(done, total=None)``, a progress callback for the library."""
    if not may_be_terminal():
        yield lambda done, new_total=None: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console,
                  disable=not console.is_terminal, transient=True) as bar:
        task = bar.add_task(label, total=total)

        def update(done: int, new_total: int | None = None) -> None:
            if new_total is None:
                bar.update(task, completed=done)
            else:
                bar.update(task, completed=done, total=new_total)

        yield update
