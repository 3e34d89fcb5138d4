// The play page: one episode of GF-01-R1. The page holds no hidden state: it shows the goal panel and the
// observations the server sent, sends one action per step, and after the end shows the scores and a replay.
// Reloading the page (or opening the link again) asks the server for the episode and continues at the same step.

import { api, el, clear, certText, yesNo, fixed, facts, announce, goalFacts } from "./common.js";
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
    $("progress").hidden = false;
    $("progress").textContent = `${state.pilot.title}: instance ${state.pilot.index + 1} of ${state.pilot.total}`;
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
  $("commit").textContent = `Commit step ${state.t}`;
  $("commit").setAttribute("aria-label", `Commit step ${state.t} with the edits chosen`);
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
  if (last && last.effect_status.achieved) effect = "achieved ✓ (it held at a step where it counts)";
  else if (state.t > lastStep) effect = "missed: the steps where it counts are over";
  const pending = choices.filter((c) => c !== "u").length;
  let plan = pending === 0 ? "no edit" : `${pending} edit${pending > 1 ? "s" : ""}`;
  if (pending > 0 && leftT === 0) plan += ": no step with edits is left, they would be refused";
  else if (pending > leftA) plan += `: only ${leftA} edit${leftA === 1 ? "" : "s"} left, the rest would be refused`;
  facts($("status-list"), [
    ["Current step", `${state.t} (of 0 to ${g.horizon - 1})`, "now-step"],
    ["Steps with edits left", `${leftT} of ${g.budget_t}`, "left-t"],
    ["Edits left", `${leftA} of ${g.budget_a}`, "left-a"],
    ["Effect", effect, "effect-status"],
    ["Your edits", certText(last ? last.certificate : []), "my-edits"],
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
    announce(`Step ${o.t} committed: ${outputsText(o)}; the effect ${o.effect_status.holds ? "holds" : "does not hold"}` +
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
      message(`The step was not committed: ${err.message}`);
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

function showEnd() {
  $("game").classList.add("ended");
  $("resume").hidden = true;
  $("board").hidden = true;
  $("status").hidden = true;
  $("end").hidden = false;
  const r = state.result;
  const verdict = $("verdict");
  if (!r) {
    verdict.textContent = "The result is not saved yet. Reload the page to try again (your steps are saved).";
    $("end-h").focus();
    return;
  }
  if (r.status !== "completed") {
    verdict.textContent = `The server could not score this episode (${r.error}). Your steps are saved.`;
  } else if (r.valid) {
    verdict.textContent = "Valid certificate: your edits made the effect happen, and every one of them was needed.";
  } else if (r.suff) {
    verdict.textContent = "Sufficient but not minimal: the effect happened, but some edit was not needed.";
  } else {
    verdict.textContent = "Not sufficient: the effect did not hold at a step where it counts.";
  }
  const rows = [
    ["Suff (the effect happens)", yesNo(r.suff), "score-suff"],
    ["Min1 (every edit needed)", yesNo(r.min1), "score-min1"],
    ["Valid (Suff and Min1)", yesNo(r.valid), "score-valid"],
    ["Eff_t (steps with edits)", r.eff_t ?? "–", "score-eff-t"],
    ["Eff_a (edits)", r.eff_a ?? "–", "score-eff-a"],
    ["AP precision / recall / F1", `${fixed(r.ap_precision)} / ${fixed(r.ap_recall)} / ${fixed(r.ap_f1)}`, "score-ap"],
    ["TS precision / recall / F1", `${fixed(r.ts_precision)} / ${fixed(r.ts_recall)} / ${fixed(r.ts_f1)}`, "score-ts"],
  ];
  const body = clear($("scores").tBodies[0]);
  for (const [name, value, id] of rows) body.append(el("tr", {}, el("th", { scope: "row" }, name), el("td", { id }, String(value))));
  // In a pilot the answers wait until every episode is finished (r.withheld says so).
  const oracle = r.withheld ? r.withheld : r.oracle
    ? `${certText(r.oracle.certificate)}: Eff_t = ${r.oracle.eff_t}, Eff_a = ${r.oracle.eff_a}`
    : "no valid certificate exists within B_T";
  const best = r.withheld ? r.withheld : r.best_match_gold ? certText(r.best_match_gold) : "none";
  facts($("certs"), [
    ["Your certificate", certText(r.certificate), "cert-mine"],
    ["Best match in M(I) (AP/TS are measured against it)", best, "cert-best"],
    ["The oracle's optimum (fewest steps, then edits)", oracle, "cert-oracle"],
    ["Saved", r.recorded ? `yes, run ${r.run_id}` : "no (this server is not recording)", "saved"],
  ]);
  mountReplay($("replay"), state.goal, state.observations, { start: state.observations.length, label: "Your episode" });
  const after = clear($("after"));
  if (state.pilot && state.pilot.completion_code) {
    after.append(el("div", { class: "complete", role: "status" },
      el("h3", {}, "Thank you: the study is complete"),
      el("p", {}, "Your completion code:"),
      el("p", { class: "code", id: "completion-code" }, state.pilot.completion_code)));
  } else if (state.pilot && state.pilot.next) {
    const next = state.pilot.next;
    after.append(el("button", { type: "button", class: "primary", id: "next",
      onclick: () => location.assign(next) }, `Next instance (${state.pilot.index + 2} of ${state.pilot.total})`));
  } else if (!state.pilot) {
    after.append(el("a", { href: "/", id: "back" }, "Play another instance"));
  }
  $("end-h").focus();
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
