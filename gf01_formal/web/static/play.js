// The play page: one episode of GF-01-R1. The page holds no hidden state: it shows the goal panel and the
// observations the server sent, sends one action per step, and after the end shows the scores and a replay.
// Reloading the page (or opening the link again) asks the server for the episode and continues at the same step.

import { api, el, clear, certText, editsText, yesNo, fixed, facts, announce, goalFacts } from "./common.js";
import { renderTimeline, centerColumn, mountReplay } from "./timeline.js";

const token = decodeURIComponent(location.pathname.split("/").pop());
const $ = (id) => document.getElementById(id);
let state = null;
let choices = [];
let shownAt = performance.now();
let sending = false;

function message(text) {
  $("message").textContent = text;
}

function outputsText(o) {
  return state.goal.outputs.map((name) => `${name} = ${o.y[name]}`).join(", ");
}

// A pilot participant who reopens their study link in this browser comes back here (pilot.js reads it).
function remember() {
  if (!state.pilot) return;
  try {
    localStorage.setItem(`gf01.pilot.${state.pilot.pilot_id}.${state.pilot.participant_id}`, token);
  } catch (err) {
    // storage may be off; the address of this page still resumes the episode
  }
}

async function load(initial) {
  try {
    state = await api("GET", `/api/episodes/${encodeURIComponent(token)}`);
  } catch (err) {
    $("loading").textContent = `This episode cannot be opened: ${err.message}`;
    return;
  }
  remember();
  $("loading").hidden = true;
  $("game").hidden = false;
  facts($("goal-list"), goalFacts(state.goal));
  $("resume-link").href = location.pathname;
  $("resume").hidden = Boolean(state.done);
  if (state.pilot) {
    const where = `puzzle ${state.pilot.index + 1} of ${state.pilot.total}`;
    $("heading").textContent = state.pilot.title;
    $("progress").hidden = false;
    $("progress").textContent = where.charAt(0).toUpperCase() + where.slice(1);
    document.title = `${state.pilot.title}: ${where}`;
  } else {
    $("heading").textContent = "GF-01 puzzle";
    document.title = `GF-01 puzzle ${state.instance_id}`;
  }
  if (state.done) {
    showEnd();
    return;
  }
  choices = state.goal.inputs.map(() => "u");
  render();
  focusFirst(initial);
}

function render() {
  renderTimeline($("timeline"), { goal: state.goal, observations: state.observations, current: state.t, choices });
  renderStatus();
  $("commit").textContent = `Take step ${state.t}`;
  $("commit").setAttribute("aria-label", `Take step ${state.t} with the changes chosen`);
  centerColumn($("timeline-region"), $("timeline"), state.t);
  shownAt = performance.now();
}

function renderStatus() {
  const g = state.goal;
  const last = state.observations.length ? state.observations[state.observations.length - 1] : null;
  const leftT = last ? last.b_T_rem : g.budget_t;
  const leftA = last ? last.b_A_rem : g.budget_a;
  const [first, lastStep] = g.effect_steps;
  let effect = `not yet (it counts at step${first === lastStep ? ` ${first}` : `s ${first} to ${lastStep}`})`;
  if (last && last.effect_status.achieved) effect = "done ✓ (it appeared at a step where it counts)";
  else if (state.t > lastStep) effect = "missed: the steps where it counts are over";
  const pending = choices.filter((c) => c !== "u").length;
  let plan = pending === 0 ? "no change" : `${pending} change${pending > 1 ? "s" : ""}`;
  if (pending > 0 && leftT === 0) plan += ": no step with changes is left, they would be refused";
  else if (pending > leftA) plan += `: only ${leftA} change${leftA === 1 ? "" : "s"} left, the rest would be refused`;
  facts($("status-list"), [
    ["Current step", `${state.t} (of 0 to ${g.horizon - 1})`, "now-step"],
    ["Steps with changes left", `${leftT} of ${g.budget_t}`, "left-t"],
    ["Changes left", `${leftA} of ${g.budget_a}`, "left-a"],
    ["Pattern", effect, "effect-status"],
    ["Your changes", editsText(last ? last.certificate : []), "my-edits"],
    ["This step", plan, "plan"],
  ]);
}

function focusFirst(initial) {
  const radio = $("timeline").querySelector("td.current input:checked");
  (radio || $("commit")).focus({ preventScroll: initial });
}

function choose(radio, value) {
  const group = radio.closest(".choice");
  const target = group.querySelector(`input[value="${value}"]`);
  target.checked = true;
  target.focus();
  choices[Number(target.dataset.index)] = value;
  renderStatus();
}

async function commit(finish) {
  if (sending || !state || state.done) return;
  sending = true;
  $("board").setAttribute("aria-sending", "true");
  message("");
  const set = {};
  state.goal.inputs.forEach((name, i) => {
    if (choices[i] !== "u") set[name] = Number(choices[i]);
  });
  const body = {
    action: { t: state.t, set, commit: finish },
    response_ms: Math.round((performance.now() - shownAt) * 1000) / 1000,
  };
  try {
    const answer = await api("POST", `/api/episodes/${encodeURIComponent(token)}/steps`, body);
    const o = answer.observation;
    state.observations.push(o);
    state.t += 1;
    const refused = o.refused.length ? `; refused: ${o.refused.map((r) => r.message).join("; ")}` : "";
    announce(`Step ${o.t} taken: ${outputsText(o)}; the pattern ${o.effect_status.holds ? "appears" : "does not appear"}` +
      `${refused}.`);
    if (refused) message(`Step ${o.t}${refused}`);
    if (answer.done) {
      await load(false);
    } else {
      choices = state.goal.inputs.map(() => "u");
      render();
      focusFirst(false);
    }
  } catch (err) {
    if (err.status === 409 || err.status === 404) {
      await load(false);
      message(`${err.message}. The page now shows what the server saved.`);
    } else {
      message(`The step was not taken: ${err.message}`);
    }
  } finally {
    sending = false;
    $("board").removeAttribute("aria-sending");
  }
}

function showConfirm(show) {
  $("confirm").hidden = !show;
  (show ? $("confirm-yes") : $("finish")).focus();
}

// The end screen. The next step (the next puzzle, or the completion code) comes first, right under the verdict,
// so that it is in view without scrolling; the results follow in plain words. The specification's scores and
// answers are free play's only, in "About the scoring" (a pilot's participants are lay people).
function showEnd() {
  $("game").classList.add("ended");
  $("game").hidden = true;
  $("resume").hidden = true;
  $("end").hidden = false;
  window.scrollTo(0, 0);  // the page was scrolled down to the timeline: the end screen starts at the top
  const r = state.result;
  const verdict = $("verdict");
  if (!r) {
    verdict.textContent = "The result is not saved yet. Reload the page to try again (your steps are saved).";
    $("end-h").focus();
    return;
  }
  const none = !r.certificate || r.certificate.length === 0;
  if (r.status !== "completed") {
    verdict.textContent = `The server could not score this puzzle (${r.error}). Your steps are saved.`;
  } else if (r.valid) {
    verdict.textContent = "Well done: your changes made the pattern appear, and every one of them was needed.";
  } else if (r.suff) {
    verdict.textContent = "The pattern appeared, but some of your changes were not needed.";
  } else if (none) {
    verdict.textContent = "You made no changes, and the pattern did not appear when it counts.";
  } else {
    verdict.textContent = "The pattern did not appear at a step where it counts.";
  }
  const after = clear($("after"));
  if (state.pilot && state.pilot.completion_code) {
    after.append(el("div", { class: "complete", role: "status" },
      el("h3", {}, "Thank you: the study is complete"),
      el("p", {}, "Your completion code (copy it into the study's form):"),
      el("p", { class: "code", id: "completion-code" }, state.pilot.completion_code)));
  } else if (state.pilot && state.pilot.next) {
    const next = state.pilot.next;
    after.append(el("button", { type: "button", class: "primary", id: "next",
      onclick: () => location.assign(next) }, `Next puzzle (${state.pilot.index + 2} of ${state.pilot.total})`));
  } else if (!state.pilot) {
    after.append(el("a", { href: "/", id: "back" }, "Play another puzzle"));
  }
  const needed = none ? "you made no changes" : yesNo(r.min1);
  facts($("plain"), [
    ["Did the pattern appear when it counts?", yesNo(r.suff), "plain-appeared"],
    ["Was every change needed?", needed, "plain-needed"],
    ["Steps you changed", r.eff_t ?? "–", "plain-steps"],
    ["Changes you made", r.eff_a ?? "–", "plain-changes"],
    ["Your changes", editsText(r.certificate), "plain-edits"],
    ["Saved", r.recorded ? "yes" : "no (this server is not recording)", "saved"],
  ]);
  $("about").hidden = Boolean(state.pilot);
  if (!state.pilot) aboutScoring(r);
  mountReplay($("replay"), state.goal, state.observations, { start: state.observations.length, label: "Your steps" });
  $("end-h").focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

// Free play: the specification's scores, the best match and the oracle's optimum (docs/browser.md).
function aboutScoring(r) {
  const rows = [
    ["Suff (the effect happens)", yesNo(r.suff), "score-suff"],
    ["Min1 (every edit needed)", none(r) ? "– (no edits)" : yesNo(r.min1), "score-min1"],
    ["Valid (Suff and Min1)", yesNo(r.valid), "score-valid"],
    ["Eff_t (steps with edits)", r.eff_t ?? "–", "score-eff-t"],
    ["Eff_a (edits)", r.eff_a ?? "–", "score-eff-a"],
    ["AP precision / recall / F1", `${fixed(r.ap_precision)} / ${fixed(r.ap_recall)} / ${fixed(r.ap_f1)}`, "score-ap"],
    ["TS precision / recall / F1", `${fixed(r.ts_precision)} / ${fixed(r.ts_recall)} / ${fixed(r.ts_f1)}`, "score-ts"],
  ];
  const body = clear($("scores").tBodies[0]);
  for (const [name, value, id] of rows) body.append(el("tr", {}, el("th", { scope: "row" }, name), el("td", { id }, String(value))));
  const oracle = r.oracle
    ? `${certText(r.oracle.certificate)}: Eff_t = ${r.oracle.eff_t}, Eff_a = ${r.oracle.eff_a}`
    : r.oracle_unknown ? "not found within the server's time limit" : "no valid certificate exists within B_T";
  facts($("certs"), [
    ["Your certificate", certText(r.certificate), "cert-mine"],
    ["Best match in M(I) (AP/TS are measured against it)", r.best_match_gold ? certText(r.best_match_gold) : "none",
      "cert-best"],
    ["The oracle's optimum (fewest steps, then edits)", oracle, "cert-oracle"],
    ["Run", r.recorded ? r.run_id : "not recorded", "run-id"],
  ]);
}

function none(r) {
  return !r.certificate || r.certificate.length === 0;
}

function wire() {
  const table = $("timeline");
  table.addEventListener("change", (event) => {
    const radio = event.target;
    if (radio.matches("input[type=radio]")) {
      choices[Number(radio.dataset.index)] = radio.value;
      renderStatus();
    }
  });
  table.addEventListener("keydown", (event) => {
    const radio = event.target;
    if (!radio.matches("input[type=radio]")) return;
    const keys = { 0: "0", 1: "1", u: "u", U: "u", "-": "u" };
    if (event.key in keys) {
      event.preventDefault();
      choose(radio, keys[event.key]);
    } else if (event.key === "Enter") {
      event.preventDefault();
      commit(false);
    }
  });
  $("commit").addEventListener("click", () => commit(false));
  $("finish").addEventListener("click", () => showConfirm(true));
  $("confirm-no").addEventListener("click", () => showConfirm(false));
  $("confirm-yes").addEventListener("click", async () => {
    $("confirm").hidden = true;
    await commit(true);
  });
  $("confirm").addEventListener("keydown", (event) => {
    if (event.key === "Escape") showConfirm(false);
  });
}

wire();
load(true);
