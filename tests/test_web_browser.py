"""GF-01-R1 in a real browser (Debian's Chromium under Playwright): a pilot played by keyboard alone from the consent
page to the completion code, with every response the page receives checked for hidden state until each episode
ends, and the same actions played through the agent harness giving the same certificate, observations and scores
(DEC-016); a reload that resumes at the same step; the phone layout; the replay page. When a test fails, its
trace and a screenshot are kept under test-results/ (browser.artifacts_on_failure)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import browser
import httpx
import pytest
from browser import Responses, Server, artifacts_on_failure, focus_to
from test_web import begin, play, serve_free, sig, write_bundle, write_pilot

from gf01_formal.agents.base import Agent, AgentSpec
from gf01_formal.artifacts import canonical_json
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import instance_problem, load_bundle
from gf01_formal.play.episode import Episode
from gf01_formal.play.protocol import Action, End, Observation, Start
from gf01_formal.runs.runner import play_run
from gf01_formal.scoring.scores import Scorer
from solvers import api

WIDE = {"width": 1280, "height": 800}
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
#: Record fields that may differ between the browser and the agent harness: the renderer's, and the clock's.
RENDERER_FIELDS = {"renderer_track", "renderer_profile_id", "timing"}


@pytest.fixture(scope="module")
def chromium() -> Any:
    with browser.chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, tiny_bundle: Path) -> Path:
    return write_bundle(tmp_path_factory.mktemp("web-browser-bundle"), tiny_bundle)


@pytest.fixture(scope="module")
def instances(bundle: Path) -> dict[str, Any]:
    return {i.instance_id: i for i in load_bundle(bundle).instances}


@pytest.fixture(scope="module")
def free(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from serve_free(bundle, tmp_path_factory.mktemp("web-browser-free") / "runs.jsonl")


# -- what must never reach the page before an episode ends ----------------------------------------------------------


def secrets_of(instance: Any) -> dict[str, list[str]]:
    """The hidden things of an instance, as text that would betray them: the HOA text and its state names, the
    base trace (whole and per step), the oracle certificate and every member of M(I)."""
    problem = instance_problem(instance)
    names = problem.system.inputs
    hoa = instance.system.hoa
    states = re.findall(r'State:\s*\d+\s*"([^"]+)"', hoa)
    members = {canonical_json([[t, names[i], v] for t, i, v in c])
               for c in api.enumerate_certificates(problem, None)}
    oracle = api.oracle(problem, problem.budget_t)
    assert oracle is not None and states
    return {
        "hoa": [hoa, "HOA: v1", "--BODY--", "controllable-AP", *re.findall(r"State:[^\n]*", hoa)],
        "state": [json.dumps(s) for s in states],
        "state_word": [s for s in states if len(s) >= 4],
        "trace": [canonical_json(instance.base_trace), *(canonical_json(x) for x in instance.base_trace)],
        "oracle": [canonical_json([[t, names[i], v] for t, i, v in oracle.certificate])],
        "M(I)": sorted(members),
        "fields": ["base_trace", "certification", "best_match_gold", "oracle", "hoa", "transitions"],
    }


def leaks(received: list[browser.Received], hidden: dict[str, list[str]]) -> list[str]:
    """What of ``hidden`` the responses give away (empty: nothing)."""
    found = []
    for r in received:
        text = r.text
        for kind, needles in hidden.items():
            if kind == "state_word":
                found += [f"{r.url}: state name {s}" for s in needles if re.search(rf"\b{re.escape(s)}\b", text)]
            elif kind == "fields":
                found += [f"{r.url}: field {f}" for f in needles if f'"{f}"' in text]
            else:
                found += [f"{r.url}: {kind} {s[:60]}" for s in needles if s in text]
    return found


def step_answers(received: list[browser.Received]) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in received if r.url.endswith("/steps") and r.status == 200]


# -- what a participant reads -----------------------------------------------------------------------------------------

#: The specification's notation, which no participant page may show (issue 31): it is free play's, or for an
#: "about the scoring" section.
FORBIDDEN = [re.compile(p) for p in (r"(?i)certificate", r"\bSuff\b", r"\bMin1\b", r"B_T", r"B_A", r"t\*",
                                     r"\bF1\b", r"(?i)precision", r"(?i)\brecall\b", r"(?i)run id",
                                     r"\brun [0-9a-f]{8}", r"Eff_[ta]", r"M\(I\)", r"[{}∅∈]", r"(?i)oracle")]


def plain_words(page: Any, where: str) -> None:
    """Every word the page shows a participant (its visible text, its title, and the names a screen reader reads)
    is plain: none of the specification's notation."""
    text = page.evaluate("""() => [document.title, document.body.innerText,
        ...[...document.querySelectorAll('[aria-label]')].filter((e) => e.offsetParent !== null || e === document.body)
        .map((e) => e.getAttribute('aria-label'))].join('\\n')""")
    found = [f"{p.pattern}: ...{text[max(0, m.start() - 30):m.end() + 30]}..." for p in FORBIDDEN
             for m in [p.search(text)] if m]
    assert found == [], f"{where} shows the specification's notation: {found}"


def in_view(page: Any, selector: str) -> None:
    """The element is wholly inside the viewport as the page opened, without scrolling."""
    box = page.evaluate("""(s) => { const r = document.querySelector(s).getBoundingClientRect();
        return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, h: innerHeight, w: innerWidth,
                y: scrollY}; }""", selector)
    assert box["y"] == 0 and box["top"] >= 0 and box["bottom"] <= box["h"], (selector, box)
    assert box["left"] >= 0 and box["right"] <= box["w"], (selector, box)


# -- the pilot, by keyboard alone ------------------------------------------------------------------------------------


class Scripted(Agent):
    """An agent that plays given actions (EVAL-CB: it sees the messages only) and keeps the observations it gets."""

    def __init__(self, actions: list[Action], meta: dict[str, Any]) -> None:
        self.actions = list(actions)
        self.meta = meta
        self.observations: list[Observation] = []

    def start(self, message: Start) -> None:
        pass

    def act(self, observation: Observation | None) -> Action:
        if observation is not None:
            self.observations.append(observation)
        return self.actions.pop(0)

    def end(self, message: End) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_pilot_played_by_keyboard_alone(chromium: Any, bundle: Path, instances: dict[str, Any], tmp_path: Path,
                                          output_path: str) -> None:
    arbiter, small = "gf01f-d78bf434bfab905e", next(i for i in instances if i != "gf01f-d78bf434bfab905e")
    runs = tmp_path / "runs.jsonl"
    pilot = write_pilot(tmp_path, [arbiter, small])
    hidden = {iid: secrets_of(instances[iid]) for iid in (arbiter, small)}
    with Server(["--bundle", str(bundle), "--runs-out", str(runs), "--pilot", str(pilot)]) as server:
        context = chromium.new_context(viewport=WIDE)
        page = context.new_page()
        responses = Responses(context)
        with artifacts_on_failure(context, page, output_path):
            page.goto(f"{server.url}pilot?participant=P-007&sig={sig(pilot, 'P-007')}")
            page.wait_for_selector("#consent-text p >> text=You are invited")
            # the id is the link's, shown and not editable
            assert page.text_content("#participant") == "P-007" and page.locator("input#participant").count() == 0
            plain_words(page, "the consent page")
            focus_to(page, "#start")
            page.keyboard.press("Enter")  # without the box ticked: refused, nothing begins
            page.wait_for_selector("#message >> text=tick the box")
            assert page.evaluate("document.activeElement.id") == "agree"
            page.keyboard.press("Space")
            focus_to(page, "#start")
            page.keyboard.press("Enter")
            page.wait_for_selector("td.current input:checked")
            assert "/play/" in page.url

            # Episode 1, the arbiter (T = 30, t* = 21): unchanged until step 20, then r2 := 1 at steps 20 and 21.
            start = responses.mark()
            plain_words(page, "episode 1")
            assert page.title() == "GF-01 test study: puzzle 1 of 2"
            assert page.evaluate("document.activeElement.matches('td.current input[type=radio]')")
            ring = page.evaluate("getComputedStyle(document.activeElement.closest('.choice')).boxShadow")
            assert ring != "none"  # the focus is visible
            for t in range(20):
                page.keyboard.press("Enter")
                page.wait_for_selector(f'thead th.current[data-t="{t + 1}"]')
            for t in (20, 21):
                focus_to(page, "#choice-2-u")  # r2's group (Tab stops once per group, on its checked radio)
                page.keyboard.press("1")
                assert page.is_checked("#choice-2-1")
                page.wait_for_selector("#plan >> text=1 change")
                if t == 20:
                    page.keyboard.press("Enter")
                    page.wait_for_selector('thead th.current[data-t="21"]')
            focus_to(page, "#finish")
            assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
            page.keyboard.press("Enter")
            assert page.evaluate("document.activeElement.id") == "confirm-yes"
            page.keyboard.press("Enter")
            page.wait_for_selector("#end:not([hidden])")
            assert page.text_content("#plain-appeared") == "yes" and page.text_content("#plain-needed") == "yes"
            assert page.text_content("#plain-steps") == "2" and page.text_content("#plain-changes") == "2"
            assert page.text_content("#plain-edits") == "step 20: r2 set to 1; step 21: r2 set to 1"
            assert page.is_hidden("#about")  # the specification's scores are free play's
            in_view(page, "#next")
            plain_words(page, "the end of episode 1")
            first = responses.since(start)
            answers = step_answers(first)
            ended = next(i for i, r in enumerate(first) if r.url.endswith("/steps") and json.loads(r.body)["done"])
            assert leaks(first[:ended], hidden[arbiter]) == []
            # The end screen names no gold and no oracle certificate before the last episode (this player's own
            # certificate happens to be the oracle's, which is theirs to see).
            end_state = json.loads(next(r.body for r in reversed(first) if re.search(r"/api/episodes/[^/]+$", r.url)))
            assert end_state["result"]["best_match_gold"] is None and end_state["result"]["oracle"] is None
            assert leaks(responses.since(0)[:start], hidden[arbiter]) == []  # nor the consent page
            # The replay steps back through the episode by keyboard.
            focus_to(page, "#replay .scroller")
            page.keyboard.press("ArrowLeft")
            page.wait_for_selector("#replay .replay-pos >> text=after 21 of 22 steps")
            page.keyboard.press("Home")
            page.wait_for_selector("#replay .replay-pos >> text=after 0 of 22 steps")
            episode_one = json.loads(next(r.body for r in reversed(responses.since(start))
                                          if re.search(r"/api/episodes/[^/]+$", r.url)))

            # Episode 2: unchanged steps to its end, then the completion code.
            focus_to(page, "#next")
            page.keyboard.press("Enter")
            page.wait_for_selector("#progress >> text=Puzzle 2 of 2")
            second = responses.mark()
            page.wait_for_selector("td.current input:checked")
            horizon = len(instances[small].base_trace)
            for t in range(horizon):
                page.keyboard.press("Enter")
                if t + 1 < horizon:
                    page.wait_for_selector(f'thead th.current[data-t="{t + 1}"]')
            page.wait_for_selector("#completion-code")
            assert page.text_content("#completion-code").startswith("DONE-4711-P-007-")
            in_view(page, "#completion-code")
            plain_words(page, "the completion code")
            # the study link, opened in another browser (nothing stored there), comes back to the code
            elsewhere = chromium.new_context(viewport=WIDE)
            other = elsewhere.new_page()
            other.goto(f"{server.url}pilot?participant=P-007&sig={sig(pilot, 'P-007')}")
            other.wait_for_selector("#completion-code")
            in_view(other, "#completion-code")
            elsewhere.close()
            later = responses.since(second)
            ended = next(i for i, r in enumerate(later) if r.url.endswith("/steps") and json.loads(r.body)["done"])
            assert leaks(later[:ended], hidden[small]) == []
            # Nor did anything before it give this instance away (the first episode's end screen names fields
            # such as "oracle": only this instance's own secrets are looked for there).
            own = {kind: v for kind, v in hidden[small].items() if kind != "fields"}
            assert leaks(responses.since(0)[:second], own) == []
            page.goto(f"{server.url}replay")  # replay is off under a pilot, and the page says so when it opens
            page.wait_for_selector("#message >> text=Replay is off while a pilot runs")
            assert page.is_disabled("#file") and page.is_disabled("#load-paste")
        context.close()

    # The records: the visual renderer, the participant, a response time per step; valid under every policy.
    rows = [json.loads(x) for x in runs.read_text().splitlines()]
    assert [r["instance_id"] for r in rows] == [arbiter, small]
    assert all(r["renderer_track"] == "visual" and r["renderer_profile_id"] == "GF-01-R1" for r in rows)
    assert all(r["agent_meta"]["participant_id"] == "P-007" for r in rows)
    assert [len(r["timing"]["step_ms"]) for r in rows] == [22, horizon]
    assert all(isinstance(ms, float) and ms >= 0 for r in rows for ms in r["timing"]["step_ms"])
    assert main(["validate", str(runs), "--official", "--bundle", str(bundle), "--pilot", str(pilot)]) == 0

    # Parity (DEC-016): the same actions through the agent harness.
    record = rows[0]
    actions = [Action(set=s["submitted"], commit=s["commit"], t=s["t"]) for s in record["steps"]]
    assert actions[20].set == {"r2": 1} and actions[21].commit and len(actions) == 22
    problem = instance_problem(instances[arbiter])
    agent = Scripted(actions, record["agent_meta"])
    outcome = play_run(instances[arbiter], problem, AgentSpec("human", "EVAL-CB", {"participant_id": "P-007"}),
                       seed=0, scorer=Scorer(problem), bundle_hash=record["bundle_hash"],
                       build=lambda spec, access: agent)
    harness = outcome.record.model_dump(mode="json")
    differ = {k for k in harness if harness[k] != record[k]}
    assert differ == RENDERER_FIELDS, differ
    assert (harness["renderer_track"], record["renderer_track"]) == ("json", "visual")
    engine = Episode(problem, arbiter)
    engine.reset()
    engine_obs = [engine.step(a.set, commit=a.commit, at=a.t).model_dump(mode="json") for a in actions]
    browser_obs = [a["observation"] for a in answers]
    assert browser_obs == engine_obs == episode_one["observations"]
    assert [o.model_dump(mode="json") for o in agent.observations] == engine_obs[:-1]  # the last is never acted on
    assert episode_one["result"]["certificate"] == harness["certificate"] == [[20, "r2", 1], [21, "r2", 1]]


# -- resuming ------------------------------------------------------------------------------------------------------


def test_a_reload_mid_episode_resumes_at_the_same_step(chromium: Any, free: Any, instances: dict[str, Any],
                                                       output_path: str) -> None:
    normal = next(i for i, inst in instances.items() if inst.mode == "normal")
    context = chromium.new_context(viewport=WIDE)
    page = context.new_page()
    with artifacts_on_failure(context, page, output_path):
        page.goto(free.url)
        page.click(f"button[aria-label='Play instance {normal}']")
        page.wait_for_selector("td.current input:checked")
        page.check("#choice-0-1", force=True)
        page.click("#commit")
        for t in (1, 2):
            page.wait_for_selector(f'thead th.current[data-t="{t}"]')
            page.click("#commit")
        page.wait_for_selector('thead th.current[data-t="3"]')
        seen = (page.inner_text("#timeline"), page.inner_text("#status-list"))
        assert "set to 1" in page.inner_html("#timeline")
        url = page.url
        page.reload()
        page.wait_for_selector('thead th.current[data-t="3"]')
        assert (page.inner_text("#timeline"), page.inner_text("#status-list")) == seen
        assert page.is_visible("#resume") and page.get_attribute("#resume-link", "href") == urlparse(url).path
        page.close()  # closing the tab loses nothing: the link opens the same episode at the same step
        elsewhere = chromium.new_context(viewport=WIDE)  # another browser: nothing in its storage, only the link
        again = elsewhere.new_page()
        again.goto(url)
        again.wait_for_selector('thead th.current[data-t="3"]')
        assert (again.inner_text("#timeline"), again.inner_text("#status-list")) == seen
        elsewhere.close()
        token = url.rsplit("/", 1)[1]
        journal = Path(f"{free.runs}.d") / "web-journal.jsonl"
        steps = [e for e in map(json.loads, journal.read_text().splitlines())
                 if e["event"] == "step" and e["token"] == token]
        assert [s["t"] for s in steps] == [0, 1, 2] and steps[0]["set"] == {instances[normal].system.inputs[0]: 1}
        assert all(s["response_ms"] is not None for s in steps)
    context.close()


# -- the phone -----------------------------------------------------------------------------------------------------


def test_the_narrow_layout_fits_a_phone(chromium: Any, free: Any, output_path: str) -> None:
    context = chromium.new_context(**PHONE)
    page = context.new_page()
    with artifacts_on_failure(context, page, output_path), httpx.Client(base_url=free.url) as client:
        token = begin(client, "gf01f-d78bf434bfab905e")
        for t in range(12):
            play(client, token, t)
        page.goto(f"{free.url}play/{token}")
        page.wait_for_selector('thead th.current[data-t="12"]')
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390  # the page never scrolls sideways; the timeline does, inside its box
        box = page.evaluate("""() => { const s = document.getElementById('timeline-region');
            const r = s.getBoundingClientRect(); const c = document.querySelector('thead th.current')
            .getBoundingClientRect(); return {sw: s.scrollWidth, cw: s.clientWidth, left: r.left, right: r.right,
            cl: c.left, cr: c.right}; }""")
        assert box["sw"] > box["cw"] and box["left"] <= box["cl"] and box["cr"] <= box["right"]
        for selector in ("#goal", "#status", "#commit", "#finish"):
            b = page.locator(selector).bounding_box()
            assert b is not None and b["x"] >= 0 and b["x"] + b["width"] <= 390, selector
        page.tap("label[for='choice-2-1']")
        assert page.is_checked("#choice-2-1")
        page.tap("#commit")
        page.wait_for_selector('thead th.current[data-t="13"]')
        assert "r2 set to 1 at step 12" in page.inner_html("#timeline")
        page.goto(free.url)  # the instance list: no sideways page either, and its Play buttons in view
        page.wait_for_selector("#instances tbody button")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        b = page.locator("#instances tbody button").first.bounding_box()
        assert b is not None and b["x"] >= 0 and b["x"] + b["width"] <= 390
    context.close()


# -- replay --------------------------------------------------------------------------------------------------------


def test_the_replay_page_steps_through_runs_of_either_renderer(chromium: Any, free: Any, bundle: Path,
                                                               instances: dict[str, Any], tmp_path: Path,
                                                               output_path: str) -> None:
    hard = next(i for i, inst in instances.items() if inst.mode == "hard" and len(inst.base_trace) < 10)
    agents = tmp_path / "agents.jsonl"
    evaluate(bundle, [AgentSpec("random", "EVAL-CB")], agents)
    with httpx.Client(base_url=free.url) as client:
        token = begin(client, hard)
        for t in range(len(instances[hard].base_trace)):
            play(client, token, t, {instances[hard].system.inputs[1]: 1} if t == 1 else None)
        visual = client.get(f"/api/episodes/{token}").json()
    runs = [json.loads(x) for x in free.runs.read_text().splitlines()]
    mine = next(r for r in runs if r["run_id"] == visual["result"]["run_id"])
    agent = next(json.loads(x) for x in agents.read_text().splitlines() if json.loads(x)["instance_id"] == hard)
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps(agent) + "\n" + json.dumps(mine) + "\n")
    context = chromium.new_context(viewport=WIDE)
    page = context.new_page()
    with artifacts_on_failure(context, page, output_path):
        page.goto(f"{free.url}replay")
        page.set_input_files("#file", str(both))
        page.wait_for_selector("#found >> text=2 records found")
        for index, rec, renderer in ((0, agent, "json"), (1, mine, "visual")):
            page.select_option("#pick", str(index))
            page.click("#open")
            page.wait_for_selector(f"#summary >> text={rec['run_id']}")
            assert renderer in page.inner_text("#summary")
            assert page.inner_text("#replay-cert") == ("{" + ", ".join(f"({t}, {a}, {v})" for t, a, v in
                                                                   rec["certificate"]) + "}" if rec["certificate"]
                                                      else "{} (no edits)")
            page.wait_for_selector("#replay .replay-pos >> text=after 0 of")
            for k in (1, 2):
                page.click("#replay button.primary")
                page.wait_for_selector(f"#replay .replay-pos >> text=after {k} of")
            if renderer == "visual":
                o = visual["observations"][1]
                ys = ", ".join(f"{n} = {o['y'][n]}" for n in visual["goal"]["outputs"])
                assert page.inner_text("#replay .replay-detail").startswith(f"Step 1: {ys}")
    context.close()


# -- a circuit -------------------------------------------------------------------------------------------------------


def test_a_circuit_instance_plays_in_the_browser(chromium: Any, tmp_path: Path, output_path: str) -> None:
    """An AIGER circuit (a 3-entry FIFO, three pushes then idle) is played like any instance: push at t* = 5 makes
    the overflow, the end screen scores it valid, and no response before the end holds the circuit or a latch."""
    from aig.build import fifo
    from aig.writer import binary
    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.model import make_bundle
    from gf01_formal.instances.sources import InstanceOptions, instance_from_aiger

    trace = "push&!pop&d0;push&!pop&!d0;push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0"
    inst = instance_from_aiger(binary(fifo(3)), InstanceOptions(trace=trace, effect="overflow"))
    path = tmp_path / "circuit.json"
    save_artifact(path, make_bundle([inst], generator_version="test", provenance="test"))
    text = inst.system.aiger or ""
    hidden = {"circuit": [text, text.splitlines()[0], "m0_0", "\"v0\"", "\"v2\""],
              "trace": [canonical_json(inst.base_trace), *(canonical_json(x) for x in inst.base_trace)],
              "fields": ["base_trace", "certification", "aiger", "oracle"]}
    with Server(["--bundle", str(path), "--runs-out", str(tmp_path / "runs.jsonl")]) as server:
        context = chromium.new_context(viewport=WIDE)
        page = context.new_page()
        responses = Responses(context)
        with artifacts_on_failure(context, page, output_path):
            page.goto(server.url)
            page.click(f"button[aria-label='Play instance {inst.instance_id}']")
            page.wait_for_selector("td.current input:checked")
            for t in range(5):
                page.click("#commit")
                page.wait_for_selector(f'thead th.current[data-t="{t + 1}"]')
            page.check("#choice-0-1", force=True)  # push (input 0) := 1 at t* = 5
            page.wait_for_selector("#plan >> text=1 change")
            page.click("#finish")
            page.click("#confirm-yes")
            page.wait_for_selector("#end:not([hidden])")
            assert page.text_content("#score-valid") == "yes" and page.text_content("#score-eff-a") == "1"
            received = responses.since(0)
            ended = next(i for i, r in enumerate(received) if r.url.endswith("/steps") and json.loads(r.body)["done"])
            assert leaks(received[:ended], hidden) == []
            assert len(step_answers(received)) == 6  # one answered step per t, the last one done
        context.close()
