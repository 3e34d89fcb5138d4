"""``llm`` (EVAL-CB): a language model behind any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
llama.cpp server, Ollama, hosted APIs), played through the official ``openai`` client.

One chat conversation per episode, one action per step, from the versioned prompt template
(:mod:`.llm_prompt`; the model sees canonical-json-v1 only). Failures are told apart by whose they are:

- the model's: a reply with no usable action gets one re-ask, then it is an agent error (AgentFault, no edit);
- the provider's, transient (HTTP 408/409/429/5xx, a timeout, a lost connection): retried with exponential backoff
  and seeded jitter (a ``Retry-After`` header, when sent, is honoured instead), at most ``Backoff.retries`` times per
  request (a timeout is retried at once: it has waited ``--request-timeout`` already, so a hanging endpoint costs a
  run (retries + 1) x the timeout); past that the run raises ProviderError (status ``provider_error``: never scored,
  played again by the next ``gf01 evaluate``, which stops after ``--max-provider-failures`` such runs in a row).
  A malformed HTTP 200 (cut or invalid JSON, JSON that is not a chat completion) is
  retried the same way: a body cut short by a proxy or a dropped connection is as transient as a 503. Other
  refusals (HTTP 400, 413, 422) and an HTML page in place of JSON (nearly always a --base-url that is not the
  API's: retrying cannot fix it) are ProviderError at once;
- the user's: a refused key (HTTP 401/403), an unknown model or path (404), a missing key variable: Gf01Error, which
  stops the evaluation with one line.

The key is read from an environment variable when the agent is built; it is never stored, logged or recorded (error
texts from the endpoint are cleaned of it). A run records the model, the endpoint's host, the prompt template's id
and sha256, token counts per step and in total, retries, and the full transcript as a side file
``transcripts/<sha256>.json`` referenced by its hash in ``agent_meta``. Nothing recorded depends on a clock.

>>> import os
>>> os.environ["GF01_EXAMPLE_KEY"] = "sk-example"
>>> spec = llm_spec("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key_env="GF01_EXAMPLE_KEY")
>>> agent = LLMAgent(LLMConfig.from_params(spec.params), seed=7)
>>> agent.model_seed
7
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from gf01_formal.agents.base import Agent, AgentFault, AgentSpec, ProviderError, check_label
from gf01_formal.agents.llm_prompt import TEMPLATE_ID, Dialogue, Message, drive, load_template
from gf01_formal.artifacts import canonical_json
from gf01_formal.play.protocol import Action, Observation, Start
from hoa.errors import Gf01Error, quote

if TYPE_CHECKING:
    from gf01_formal.agents.tools import TrackTools

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_TIMEOUT = 60.0
TRANSCRIPT_SCHEMA = "gf01-formal.llm_transcript.v1"
#: HTTP statuses worth retrying: request timeout, conflict, rate limit, and every server error.
RETRY_STATUSES = frozenset({408, 409, 429})


@dataclass(frozen=True)
class Backoff:
    """How transient failures are retried: at most ``retries`` more attempts per request, the n-th (from 0) after
    ``min(cap, base * 2**n)`` seconds times a jitter factor in [0.5, 1) drawn from the agent's seeded generator, or
    after the server's ``Retry-After`` (capped) when it sends one."""

    retries: int = 5
    # 0.5 s doubling: the five retries of a request span about 8 to 15 s, so that a service that is gone is known
    # as such within a minute (two runs, --max-provider-failures), and a blip of a few seconds is still ridden out.
    base: float = 0.5
    cap: float = 30.0

    def delay(self, n: int, rng: np.random.Generator, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``n`` (0 = the first retry)."""
        if retry_after is not None:
            return min(self.cap, max(0.0, retry_after))
        return min(self.cap, self.base * 2.0**n) * (0.5 + 0.5 * float(rng.random()))


@dataclass(frozen=True)
class LLMConfig:
    """What an ``llm`` agent spec says (its params; the key is not among them, only the variable that holds it)."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = DEFAULT_KEY_ENV
    temperature: float | None = None
    max_tokens: int | None = None
    request_timeout: float = DEFAULT_TIMEOUT
    prompt: str = TEMPLATE_ID
    label: str | None = None  # --agent-name: what reports call the model's row (default: llm:<model>)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> LLMConfig:
        """The config of a spec's params; a Gf01Error names a bad or unknown one."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(params) - known)
        if unknown:
            raise Gf01Error(f"unknown llm parameter(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})",
                            field="agent_spec.params")
        model = params.get("model")
        if not isinstance(model, str) or not model.strip():
            raise Gf01Error("--agent llm needs a model name (--model)", field="--model")
        temperature = params.get("temperature")
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)
                                        or not 0 <= temperature <= 2):
            raise Gf01Error(f"{quote(temperature, 40)} must be a number in [0, 2]", field="--temperature")
        max_tokens = params.get("max_tokens")
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                       or max_tokens < 1):
            raise Gf01Error(f"{quote(max_tokens, 40)} must be a positive integer", field="--max-tokens")
        timeout = params.get("request_timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise Gf01Error(f"{quote(timeout, 40)} must be a positive number of seconds", field="--request-timeout")
        key_env = params.get("api_key_env", DEFAULT_KEY_ENV)
        if not isinstance(key_env, str) or not key_env:
            raise Gf01Error("must name an environment variable", field="--api-key-env")
        prompt = params.get("prompt", TEMPLATE_ID)
        load_template(prompt)  # an unknown template is refused here, before any request
        label = params.get("label")
        check_label(label)
        return cls(model=model, base_url=check_base_url(params.get("base_url", DEFAULT_BASE_URL)),
                   api_key_env=key_env, temperature=temperature, max_tokens=max_tokens,
                   request_timeout=float(timeout), prompt=prompt, label=label)

    def params(self) -> dict[str, Any]:
        """The spec params (what enters the run id); a label only when given (earlier run ids stay)."""
        out = {"model": self.model, "base_url": self.base_url, "api_key_env": self.api_key_env,
               "temperature": self.temperature, "max_tokens": self.max_tokens,
               "request_timeout": self.request_timeout, "prompt": self.prompt}
        if self.label is not None:
            out["label"] = self.label
        return out


def check_base_url(url: Any) -> str:
    """``url`` as an endpoint base URL (no trailing slash); refused unless http(s) with a host, and without
    credentials, query or fragment (a base URL is recorded, so it must not carry a secret)."""
    if not isinstance(url, str) or not url.strip():
        raise Gf01Error("the base URL is empty", field="--base-url")
    parts = urlsplit(url.strip())
    shown = quote(url, 120)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Gf01Error(f"{shown} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1",
                        field="--base-url")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise Gf01Error("the base URL must not carry credentials, a query or a fragment (it is recorded; give the "
                        "key in an environment variable)", field="--base-url")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise Gf01Error(f"{shown} has a bad port", field="--base-url") from None
    return url.strip().rstrip("/")


def base_url_host(url: str) -> str:
    """The host (and port) of a base URL, as recorded with each run."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def api_key(env_name: str, environ: Mapping[str, str] | None = None) -> str:
    """The key held by the environment variable ``env_name``; a Gf01Error (naming the variable, never a value) when
    it is unset or empty."""
    value = (os.environ if environ is None else environ).get(env_name, "")
    if not value.strip():
        raise Gf01Error(f"the environment variable {env_name} holds no API key (set it; a local server that needs "
                        "no key accepts any value)", field="--api-key-env")
    return value


def llm_spec(
    model: str | None,
    *,
    base_url: str | None = None,
    api_key_env: str = DEFAULT_KEY_ENV,
    temperature: float | None = None,
    max_tokens: int | None = None,
    request_timeout: float = DEFAULT_TIMEOUT,
    prompt: str = TEMPLATE_ID,
    environ: Mapping[str, str] | None = None,
    label: str | None = None,
) -> AgentSpec:
    """The EVAL-CB spec of an ``llm`` agent; the base URL is ``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's.
    Everything is checked now (the key must be set), so a bad option fails before any run starts."""
    env = os.environ if environ is None else environ
    url = base_url if base_url is not None else (env.get(BASE_URL_ENV) or DEFAULT_BASE_URL)
    config = LLMConfig.from_params({"model": model, "base_url": url, "api_key_env": api_key_env,
                                    "temperature": temperature, "max_tokens": max_tokens,
                                    "request_timeout": request_timeout, "prompt": prompt, "label": label})
    api_key(config.api_key_env, env)
    return AgentSpec("llm", "EVAL-CB", config.params())


#: The longest the preflight request may take: it only has to show that the endpoint answers.
PREFLIGHT_TIMEOUT = 5.0


def preflight(config: LLMConfig) -> None:
    """One request before the first run (``GET {base_url}/models``, no retry): a Gf01Error naming the URL when the
    endpoint cannot be reached, does not answer within :data:`PREFLIGHT_TIMEOUT` seconds, refuses the key, fails
    (HTTP 429 or 5xx) or answers with a web page. Without it a wrong ``--base-url`` cost every run its full retries
    (about 20 s each) before the evaluation gave up. A 404 or 405 passes: some servers serve chat completions without
    a model list, and a wrong path is then refused by the first run's request, which is not retried either. The
    standard library's client is used: the request needs nothing the openai client adds."""
    import urllib.error
    import urllib.request

    key = api_key(config.api_key_env)
    url = config.base_url
    timeout = min(PREFLIGHT_TIMEOUT, config.request_timeout)
    where = "preflight request before the first run"
    request = urllib.request.Request(f"{url}/models", headers={"Authorization": f"Bearer {key}",
                                                                "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, head = response.status, response.read(512)
    except urllib.error.HTTPError as ex:
        status, head = ex.code, b""
    except TimeoutError:
        raise Gf01Error(f"{url} did not answer within {timeout:g} s ({where})", field="--base-url") from None
    except (urllib.error.URLError, OSError) as ex:
        reason = getattr(ex, "reason", ex)
        if isinstance(reason, TimeoutError):
            raise Gf01Error(f"{url} did not answer within {timeout:g} s ({where})", field="--base-url") from None
        text = quote(str(reason).replace(key, "***") or type(reason).__name__, 120, bare=True)
        raise Gf01Error(f"cannot reach {url}: {text} ({where})", field="--base-url") from None
    if status in (401, 403):
        raise Gf01Error(f"{url} refused the key in ${config.api_key_env} (HTTP {status}, {where})",
                        field="--api-key-env")
    if status == 429 or status >= 500:
        raise Gf01Error(f"{url} answered HTTP {status} ({where}; try again later)", field="--base-url")
    if status == 200 and head.lstrip().startswith(b"<"):
        raise Gf01Error(f"{url} answered with a web page, not an API ({where}; an OpenAI-compatible base URL usually "
                        "ends in /v1)", field="--base-url")


class LLMAgent(Agent):
    """Plays one episode at a time through a chat-completions endpoint (module docstring)."""

    def __init__(self, config: LLMConfig, seed: int, *, backoff: Backoff = Backoff(),
                 tools: TrackTools | None = None) -> None:
        from openai import OpenAI  # heavy, and only this agent needs it

        self.tools = tools  # the track's tool, offered as an OpenAI function (agents/tools.py); None on EVAL-CB
        self._tool_calls: list[tuple[str, str, str]] = []  # (id, name, arguments) of the last reply
        self.config = config
        self.backoff = backoff
        self.template = load_template(config.prompt)
        key = api_key(config.api_key_env)
        self._secret = key
        # The client's own retries are off: ours are bounded, seeded and recorded.
        self._client = OpenAI(api_key=key, base_url=config.base_url, max_retries=0, timeout=config.request_timeout)
        self._rng = np.random.Generator(np.random.PCG64(seed))
        # Providers take a 31-bit seed at most; derived from the episode's seed, so reruns ask the same.
        self.model_seed = seed % (1 << 31)
        self._dialogue: Dialogue | None = None
        self._instance_id = ""
        self._calls: list[dict[str, Any]] = []
        self._steps: list[dict[str, Any]] = []
        self._model_reported: str | None = None

    # -- the Agent protocol --------------------------------------------------------------------------------------

    def start(self, message: Start) -> None:
        self._instance_id = message.instance_id
        self._dialogue = Dialogue(self.template, message)
        self._calls, self._steps, self._model_reported = [], [], None

    def act(self, observation: Observation | None) -> Action:
        assert self._dialogue is not None, "start() comes first"
        self._steps.append({"t": 0 if observation is None else observation.t + 1, "calls": 0, "retries": 0,
                            "input_tokens": 0, "output_tokens": 0})
        return drive(self._dialogue.turn(observation), self._complete)

    def close(self) -> None:
        self._client.close()

    # -- what the harness reads after the episode ----------------------------------------------------------------

    @property
    def usage(self) -> dict[str, Any]:
        """Tokens, calls and retries, per step and in total (tokens as the endpoint reported them; null where a
        reply came without its usage, see :func:`usage_summary`)."""
        unreported = {c["t"] for c in self._calls if c.get("usage") == "missing"}
        return usage_summary(self._steps, unreported, reasks=sum(c["kind"] == "reask" for c in self._calls))

    @property
    def meta(self) -> dict[str, Any]:
        """What the run record's ``agent_meta`` holds: model, endpoint host, prompt template, transcript hash."""
        digest = _sha256(self._transcript_text())
        return {"model": self.config.model, "model_reported": self._model_reported,
                "base_url_host": base_url_host(self.config.base_url), "api": "chat.completions",
                "client": f"openai-python {_openai_version()}", "prompt_template": self.template.id,
                "prompt_sha256": self.template.sha256, "model_seed": self.model_seed,
                "transcript_sha256": digest, "transcript": f"transcripts/{digest}.json"}

    @property
    def side_files(self) -> dict[str, str]:
        """The transcript, by its hash (also written for a run that failed, for the record of what was spent)."""
        if self._dialogue is None:
            return {}
        text = self._transcript_text()
        return {f"transcripts/{_sha256(text)}.json": text}

    def _transcript_text(self) -> str:
        return canonical_json({
            "schema_version": TRANSCRIPT_SCHEMA, "instance_id": self._instance_id, "model": self.config.model,
            "base_url_host": base_url_host(self.config.base_url), "prompt_template": self.template.id,
            "prompt_sha256": self.template.sha256, "request": self._request_params(),
            "messages": [] if self._dialogue is None else list(self._dialogue.messages), "calls": self._calls,
        }) + "\n"

    # -- one request, with its retries --------------------------------------------------------------------------

    def _request_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seed": self.model_seed}
        if self.config.temperature is not None:
            out["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            out["max_tokens"] = self.config.max_tokens
        return out

    @property
    def tool_log(self) -> list[dict[str, Any]]:
        """The oracle search's log entries, header first (the runner takes EVAL-TA's from the planner itself)."""
        if self.tools is None or self.tools.oracle is None:
            return []
        return [json.loads(x) for x in self.tools.oracle.log_text().splitlines()]

    def _tool_specs(self) -> list[dict[str, Any]]:
        """The track's tool as an OpenAI function (chat-completions ``tools``)."""
        assert self.tools is not None and self.tools.allowed is not None
        what = ("simulates the run with these edits: the outputs at every step, whether the effect holds, the "
                "queries left" if self.tools.planner is not None else
                "exact checks of a candidate certificate (suff, min1, valid); with atoms null, an optimal valid "
                "certificate")
        atoms = {"type": ["array", "null"], "items": {"type": "array"},
                 "description": 'the edits as [[t, "input", 0 or 1], ...]'}
        return [{"type": "function", "function": {
            "name": self.tools.allowed, "description": f"{self.tools.allowed}: {what}",
            "parameters": {"type": "object", "properties": {"atoms": atoms}, "required": ["atoms"]}}}]

    def _complete(self, kind: str, messages: list[Message]) -> str:
        """The model's reply text to ``messages``; tool calls in between are answered (each answer appended to
        the conversation as a ``tool`` message, every call in the run's tool log) and the model asked again. A
        tool call on EVAL-CB, for another track's tool, or past the budget is a fatal AgentFault (``tool_denied``)."""
        reply = self._request(kind, messages)
        while self._tool_calls:
            if self.tools is None:
                raise AgentFault("tool_denied", f"asked for tool {self._tool_calls[0][1]!r}: EVAL-CB allows no tool",
                                 fatal=True)
            calls, self._tool_calls = self._tool_calls, []
            messages.append({"role": "assistant", "content": reply or None, "tool_calls": [  # type: ignore[dict-item]
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in calls]})
            for cid, name, args in calls:
                try:
                    decoded = json.loads(args)
                except ValueError:
                    decoded = args
                atoms = decoded.get("atoms") if isinstance(decoded, dict) else decoded
                result = self.tools.call(name, atoms)
                messages.append({"role": "tool", "tool_call_id": cid, "content": canonical_json(result)})
            reply = self._request("tool", messages)
        return reply

    def _request(self, kind: str, messages: list[Message]) -> str:
        """The model's reply to the conversation ``messages`` (module docstring: retries and errors)."""
        step = self._steps[-1]
        call: dict[str, Any] = {"t": step["t"], "kind": kind, "sent": len(messages), "reply": None, "errors": [],
                                "input_tokens": None, "output_tokens": None, "finish_reason": None}
        self._calls.append(call)
        step["calls"] += 1
        for n in range(self.backoff.retries + 1):
            try:
                extra = {} if self.tools is None else {"tools": self._tool_specs()}
                response = self._client.chat.completions.create(model=self.config.model, messages=list(messages),
                                                                **self._request_params(), **extra)
                reply = self._read(response, call, step, len(messages))
            except Exception as ex:
                verdict, what = self._classify(ex)
                if verdict == "user":
                    raise Gf01Error(what, field="--agent llm") from None
                call["errors"].append(what)
                if verdict == "fail":
                    raise ProviderError(f"{what} (step {step['t']}, not retried)") from None
                if n == self.backoff.retries:
                    raise ProviderError(f"{what} (step {step['t']}, after {n} retries)") from None
                step["retries"] += 1
                delay = self.backoff.delay(n, self._rng, _retry_after(ex))  # drawn always: the jitter stays seeded
                if not what.startswith("timeout"):  # a timeout has waited its --request-timeout already
                    time.sleep(delay)
                continue
            return reply
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _read(self, response: Any, call: dict[str, Any], step: dict[str, Any], index: int) -> str:
        """The reply text of ``response``, its tokens added to ``call`` and ``step``; a MalformedResponse when it is
        not a usable chat completion. The client hands back whatever a 200 held (the page's text when it is not
        JSON, a model built without validation when it is), so every field read here is checked first."""
        from openai.types.chat import ChatCompletion

        if not isinstance(response, ChatCompletion):
            raise MalformedResponse.of_body(response, secret=self._secret)
        # Tokens first: a reply that turns out unusable was still billed, and the record counts what was billed.
        tokens = _token_counts(response.usage)
        if tokens is not None:
            call["input_tokens"] = (call["input_tokens"] or 0) + tokens[0]
            call["output_tokens"] = (call["output_tokens"] or 0) + tokens[1]
            step["input_tokens"] += tokens[0]
            step["output_tokens"] += tokens[1]
        choices = response.choices
        if not isinstance(choices, list) or not choices:
            raise MalformedResponse("a chat completion with no choice" + _error_note(response))
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        if message is None or not (content is None or isinstance(content, str)):
            raise MalformedResponse("a chat completion whose first choice has no text message")
        self._model_reported = response.model if isinstance(response.model, str) and response.model else None
        if tokens is None:  # a real reply, so billed, but not said how much: the step's tokens are unknown, not 0
            call["usage"] = "missing"
        finish = getattr(choice, "finish_reason", None)
        call["finish_reason"] = finish if isinstance(finish, str) else None
        call["reply"] = index  # the index the reply will have in the conversation
        self._tool_calls = []
        for tc in getattr(message, "tool_calls", None) or []:
            fn = getattr(tc, "function", None)
            name, args = getattr(fn, "name", None), getattr(fn, "arguments", None)
            if not isinstance(name, str) or not isinstance(args, str):
                raise MalformedResponse("a tool call without a function name and arguments")
            self._tool_calls.append((str(getattr(tc, "id", "") or f"call-{len(self._tool_calls)}"), name, args))
        reasoning = getattr(message, "reasoning_content", None)  # vLLM / DeepSeek reasoning parsers
        if isinstance(reasoning, str) and reasoning:
            call["reasoning"] = reasoning
        return content or ""  # None: a reply with no text (e.g. only tool calls), which the parser then refuses

    def _classify(self, ex: Exception) -> tuple[str, str]:
        """Whose failure ``ex`` is: ``retry`` (transient), ``fail`` (the provider's, not worth retrying) or
        ``user`` (a configuration the user must fix); with a description free of the key. Any other exception is
        a fault of ours and propagates (harness_error)."""
        import openai

        if isinstance(ex, openai.APITimeoutError):
            return "retry", f"timeout after {self.config.request_timeout:g} s"
        if isinstance(ex, openai.APIConnectionError):
            return "retry", "connection error"
        if isinstance(ex, openai.APIStatusError):
            status = ex.status_code
            if status in RETRY_STATUSES or status >= 500:
                return "retry", f"HTTP {status}"
            host = base_url_host(self.config.base_url)
            if status in (401, 403):
                return "user", f"HTTP {status}: {host} refused the key in ${self.config.api_key_env}"
            if status == 404:
                return "user", (f"HTTP 404: {host} has no model {self.config.model!r} or no chat-completions API "
                                f"under {self.config.base_url}")
            return "fail", f"HTTP {status}: {self._clean(_error_message(ex))}"
        if isinstance(ex, json.JSONDecodeError):  # the client parses a JSON content type itself, and raises this
            ex = MalformedResponse.of_body(ex.doc, ex, secret=self._secret)
        if isinstance(ex, openai.APIResponseValidationError):
            ex = MalformedResponse.of_body(ex.body, secret=self._secret)
        if isinstance(ex, MalformedResponse):
            if ex.html:
                return "fail", (f"HTTP 200 with {ex} instead of a chat completion: {self.config.base_url} is likely "
                                "not the API's base URL (an OpenAI-compatible one usually ends in /v1; check "
                                f"--base-url or ${BASE_URL_ENV})")
            return "retry", f"a malformed response: {self._clean(str(ex))}"
        if isinstance(ex, openai.APIError):
            return "fail", f"a failed request: {self._clean(str(ex))}"
        raise ex

    def _clean(self, message: str) -> str:
        """An endpoint's error text, cut short and with the key (should it be echoed) removed."""
        return quote(message.replace(self._secret, "***"), 300, bare=True)


class MalformedResponse(Exception):
    """An HTTP 200 whose body is not a usable chat completion (``html``: a web page, not an API's answer)."""

    def __init__(self, what: str, *, html: bool = False) -> None:
        super().__init__(what)
        self.html = html

    @classmethod
    def of_body(cls, body: Any, error: json.JSONDecodeError | None = None, *, secret: str = "") -> MalformedResponse:
        """The failure of a 200 whose body (its text, or the JSON the client parsed) is not a chat completion;
        ``error``: why the text did not parse as JSON. ``secret`` (the key) is removed before anything is quoted,
        so that a page echoing it cannot leak a piece of it into the record."""
        text = (body if isinstance(body, str) else repr(body)).strip()
        if secret:
            text = text.replace(secret, "***")
        # One line: the excerpt goes into an error message, and a web page is many lines.
        excerpt = quote(" ".join(text.split()), 80, bare=True)
        if not isinstance(body, str):  # JSON of the wrong shape (a list, a bare value), as the client parsed it
            return cls(f"JSON that is not a chat completion: {excerpt}")
        if text.startswith("<"):
            return cls(f"an HTML page: {excerpt}", html=True)
        if not text:
            return cls("an empty body")
        if error is not None and text.startswith(("{", "[")):
            return cls(f"cut or invalid JSON ({error.msg} at character {error.pos} of {len(error.doc)})")
        return cls(f"a body that is not JSON: {excerpt}")


def usage_summary(steps: list[dict[str, Any]], unreported: set[int], *, reasks: int) -> dict[str, Any]:
    """The ``usage`` of a run record: per step and in total, tokens, calls and retries. The tokens of a step some
    reply of which came without usage are unknown (null), and so are the run's totals: counting them as 0 would
    report a run as cheaper than it was."""
    out_steps = []
    for s in steps:
        step = dict(s)
        if step["t"] in unreported:
            step["input_tokens"] = step["output_tokens"] = None
        out_steps.append(step)
    total: dict[str, Any] = {k: sum(s[k] for s in out_steps) for k in ("calls", "retries")}
    known = not unreported
    for k in ("input_tokens", "output_tokens"):
        total[k] = sum(s[k] for s in out_steps) if known else None
    return {"input_tokens": total["input_tokens"], "output_tokens": total["output_tokens"], "calls": total["calls"],
            "retries": total["retries"],
            "total_tokens": total["input_tokens"] + total["output_tokens"] if known else None,
            "reasks": reasks, "usage_reported": known, "steps": out_steps}


def _token_counts(usage: Any) -> tuple[int, int] | None:
    """(input, output) tokens of a reply's usage, or None when the endpoint left them out or sent no numbers."""
    if usage is None:
        return None
    counts = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
    if not all(c is None or (isinstance(c, int) and not isinstance(c, bool) and c >= 0) for c in counts):
        return None
    return counts[0] or 0, counts[1] or 0


def _error_note(response: Any) -> str:
    """The endpoint's own words when a 200 carries an ``error`` object instead of choices (some gateways do); left
    whole, since the caller removes the key and then cuts the message (cutting first could leave part of a key)."""
    extra = getattr(response, "model_extra", None) or {}
    error = extra.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return f" (the endpoint says: {' '.join(message.split())})" if isinstance(message, str) and message else ""


def _error_message(ex: Any) -> str:
    body = getattr(ex, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return str(getattr(ex, "message", "") or ex)


def _retry_after(ex: Exception) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``retry-after`` in seconds), if it said."""
    response = getattr(ex, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
        if seconds >= 0:
            return seconds
    return None


def _openai_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openai")
    except PackageNotFoundError:
        return "unknown"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
