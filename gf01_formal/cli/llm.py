"""The CLI's LLM parts: the ``--agent llm`` options of ``gf01 evaluate``, its progress bar with token counts, and
``gf01 import inspect`` (an inspect_ai eval log as run records). Nothing heavy is imported here: the ``openai``
client and inspect_ai are imported by the commands that use them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from gf01_formal.cli.common import MAX_COUNT, MAX_SECONDS, GoldSetOpt, JsonOpt, OutputOpt, check_output, emit

ModelOpt = Annotated[
    str | None, typer.Option("--model", metavar="M", help="--agent llm: the model the endpoint serves.")
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", metavar="URL", help="--agent llm: an OpenAI-compatible endpoint, e.g. "
                 "http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL, else OpenAI's)."),
]
ApiKeyEnvOpt = Annotated[
    str, typer.Option("--api-key-env", metavar="NAME", help="--agent llm: the environment variable holding the API "
                      "key (never recorded).")
]
TemperatureOpt = Annotated[
    float | None, typer.Option("--temperature", metavar="X", min=0.0, max=2.0,
                               help="--agent llm: sampling temperature (default: the endpoint's).")
]
MaxTokensOpt = Annotated[
    int | None, typer.Option("--max-tokens", metavar="N", min=1, max=MAX_COUNT,
                             help="--agent llm: the most tokens per reply "
                             "(default: the endpoint's).")
]
RequestTimeoutOpt = Annotated[
    float, typer.Option("--request-timeout", metavar="S", min=0.001, max=MAX_SECONDS,
                        help="--agent llm: seconds per request before "
                        "it is retried.")
]

#: Runs in a row ended ``provider_error`` after which ``gf01 evaluate`` stops (docs/llm.md, "When the service fails").
DEFAULT_MAX_PROVIDER_FAILURES = 2
MaxProviderFailuresOpt = Annotated[
    int, typer.Option("--max-provider-failures", metavar="N", min=1, max=MAX_COUNT,
                      help="Stop after N runs in a row ended provider_error (the model's service failing past its "
                      "retries); the runs not played are left for the same command to resume.")
]


def with_llm_options(
    specs: list[Any],
    *,
    model: str | None,
    base_url: str | None,
    api_key_env: str,
    temperature: float | None,
    max_tokens: int | None,
    request_timeout: float,
    label: str | None = None,
) -> list[Any]:
    """``specs`` with the ``llm`` spec (from ``--agent llm``) given its options; the options without ``--agent llm``,
    or ``--agent llm`` without a model, a key or a usable base URL, are a Gf01Error (exit 2)."""
    from gf01_formal.agents.base import AgentSpec
    from gf01_formal.agents.llm import DEFAULT_KEY_ENV, DEFAULT_TIMEOUT, llm_spec
    from hoa.errors import Gf01Error

    if not any(s.name == "llm" for s in specs):
        given = [name for name, value, default in (
            ("--model", model, None), ("--base-url", base_url, None), ("--api-key-env", api_key_env, DEFAULT_KEY_ENV),
            ("--temperature", temperature, None), ("--max-tokens", max_tokens, None),
            ("--request-timeout", request_timeout, DEFAULT_TIMEOUT)) if value != default]
        if given:
            raise Gf01Error(f"{', '.join(given)} apply to --agent llm only", field=given[0])
        return specs
    if model is None:
        raise Gf01Error("--agent llm needs a model name (--model M)", field="--model")
    from gf01_formal.extras import require

    require("llm", "--agent llm")
    llm = llm_spec(model, base_url=base_url, api_key_env=api_key_env, temperature=temperature,
                   max_tokens=max_tokens, request_timeout=request_timeout, label=label)
    return [AgentSpec(llm.name, s.track, llm.params) if s.name == "llm" else s for s in specs]


class TokenProgress:
    """A progress bar on stderr (when it is a terminal) showing runs done and the tokens their records report."""

    def __init__(self) -> None:
        self.tokens: Counter[str] = Counter()

    def __enter__(self) -> TokenProgress:
        from gf01_formal.cli.common import may_be_terminal

        self.bar: Any = None
        if not may_be_terminal():  # rich's bar would be disabled: not imported (common.may_be_terminal)
            return self
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        console = Console(stderr=True)
        self.bar = Progress(TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[tok]}"),
                            TimeRemainingColumn(), console=console, disable=not console.is_terminal, transient=True)
        self.bar.__enter__()
        self.task = self.bar.add_task("runs", total=None, tok=self._text())
        return self

    def progress(self, done: int, total: int) -> None:
        """``evaluate``'s progress callback."""
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=total, tok=self._text())

    def on_record(self, record: Any) -> None:
        """``evaluate``'s record callback: add the run's tokens (failed runs spent tokens too)."""
        usage = record.usage or {}
        for key in ("input_tokens", "output_tokens", "calls", "retries"):
            value = usage.get(key)
            if isinstance(value, int):
                self.tokens[key] += value
        if usage and usage.get("input_tokens") is None:  # the endpoint did not say: not counted as 0
            self.tokens["unknown_runs"] += 1
        if self.bar is not None:
            self.bar.update(self.task, tok=self._text())

    def _text(self) -> str:
        return f"tokens in {_short(self.tokens['input_tokens'])} out {_short(self.tokens['output_tokens'])}"

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _short(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def import_inspect_cmd(
    log: Annotated[
        Path, typer.Argument(metavar="LOG", help="An inspect_ai eval log of the GF-01 task (.eval or .json).",
                             show_default=False)
    ],
    output: OutputOpt,
    bundle: Annotated[
        Path | None, typer.Option("--bundle", metavar="BUNDLE", help="The bundle the log was played on (default: "
                                  "the task's bundle argument, as recorded in the log).")
    ] = None,
    gold_set: GoldSetOpt = "M",
    json_out: JsonOpt = False,
) -> None:
    """Turn an inspect_ai eval log of the GF-01 task into run records (re-scored by the exact checks), with the
    transcripts as side files, so that ``gf01 validate`` and the reports apply to it."""
    from gf01_formal.extras import require

    require("inspect", "gf01 import inspect")
    from gf01_formal.artifacts import canonical_json, write_text_atomic
    from gf01_formal.integrations.inspect_import import import_inspect_log

    check_output(output, inputs=[log, bundle])
    got = import_inspect_log(log, bundle=None if bundle is None else str(bundle), gold_set=gold_set)
    side = Path(f"{output}.d")
    for outcome in got.outcomes:
        for rel, text in sorted(outcome.side_files.items()):
            if not (side / rel).exists():
                write_text_atomic(side / rel, text)
    write_text_atomic(output, "".join(canonical_json(o.record.model_dump(mode="json")) + "\n" for o in got.outcomes))
    record = {"file": str(output), "imported": len(got.outcomes), "disagreements": got.disagreements,
              "statuses": dict(sorted(Counter(o.record.status for o in got.outcomes).items()))}

    def human(r: dict[str, Any]) -> list[str]:
        lines = [f"imported {r['imported']} runs to {r['file']} ({r['disagreements']} where the log's scores differ "
                 "from the exact ones)"]
        return lines + [f"status {s}: {n}" for s, n in r["statuses"].items() if s != "completed"]

    emit(record, json_out, human)
