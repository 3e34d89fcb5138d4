// The R1 timeline: one column per step. Past columns show the player's committed edits and the observed outputs,
// the current column takes set 0 / set 1 / unchanged for each input, future columns are blank; the target step
// and the steps where the effect counts (the window) are marked. Everything comes from the goal panel and the
// canonical observations; the same table serves the game, the end screen's replay and the replay page.

import { el, clear, editsText } from "./common.js";

const CHOICES = [["u", "–", "unchanged"], ["0", "0", "set 0"], ["1", "1", "set 1"]];

// Render view = {goal, observations, shown, current, choices} into table. shown: how many observed steps appear as
// past columns (default: all); current: the step whose column takes choices (or null); choices: per input, "u",
// "0" or "1".
export function renderTimeline(table, view) {
  const { goal, observations } = view;
  const shown = view.shown ?? observations.length;
  const current = view.current ?? null;
  const [first, last] = goal.effect_steps;
  const T = goal.horizon;
  const edits = new Map();
  for (const [t, a, v] of shown > 0 ? observations[shown - 1].certificate : []) edits.set(`${t}|${a}`, v);
  const kind = (t) => (t < shown ? "past" : t === current ? "current" : "future");
  const classes = (t) => [kind(t), t >= first && t <= last ? "win" : "", t === goal.t_star ? "target" : ""]
    .filter(Boolean).join(" ");

  clear(table);
  table.append(el("caption", { class: "visually-hidden" },
    `Timeline of steps 0 to ${T - 1}; the pattern counts at steps ${first} to ${last}; target step ${goal.t_star}.`));
  const head = el("tr", {}, el("th", { scope: "col", class: "corner" }, "step"));
  for (let t = 0; t < T; t++) {
    const marks = [];
    if (t === goal.t_star) marks.push("target step");
    if (t >= first && t <= last) marks.push("the pattern counts here");
    if (t === current) marks.push("current step");
    head.append(el("th", {
      scope: "col", class: classes(t), "data-t": t,
      "aria-label": `step ${t}${marks.length ? ", " + marks.join(", ") : ""}`,
    }, el("span", { class: "num" }, String(t)),
    t === goal.t_star ? el("span", { class: "mark", "aria-hidden": "true" }, "★ target") : null,
    t === current ? el("span", { class: "mark now", "aria-hidden": "true" }, "now") : null));
  }
  table.append(el("thead", {}, head));

  const body = el("tbody");
  goal.inputs.forEach((name, index) => {
    const row = el("tr", { class: "input-row" }, el("th", { scope: "row" }, name, el("small", {}, " input")));
    for (let t = 0; t < T; t++) {
      if (t === current) {
        row.append(el("td", { class: classes(t) }, choiceGroup(name, index, t, view.choices ? view.choices[index] : "u")));
        continue;
      }
      if (t >= shown) {
        row.append(el("td", { class: classes(t) }));
        continue;
      }
      const key = `${t}|${name}`;
      const refused = (observations[t].refused || []).find((r) => r.input === name);
      if (edits.has(key)) {
        const v = edits.get(key);
        row.append(el("td", { class: classes(t) },
          el("span", { class: `badge set${v}`, role: "img", "aria-label": `${name} set to ${v} at step ${t}` }, String(v))));
      } else if (refused) {
        row.append(el("td", { class: classes(t) },
          el("span", { class: "badge refused", role: "img", title: refused.message,
            "aria-label": `${name} at step ${t}: edit refused (${refused.message})` }, "✕")));
      } else {
        row.append(el("td", { class: classes(t), "aria-label": `${name} unchanged at step ${t}` },
          el("span", { class: "dot", "aria-hidden": "true" }, "·")));
      }
    }
    body.append(row);
  });
  body.append(el("tr", { class: "sep" }, el("th", { scope: "rowgroup" }, "outputs"), el("td", { colspan: T })));
  for (const name of goal.outputs) {
    const row = el("tr", { class: "output-row" }, el("th", { scope: "row" }, name, el("small", {}, " output")));
    for (let t = 0; t < T; t++) {
      if (t >= shown) {
        row.append(el("td", { class: classes(t) }));
        continue;
      }
      const v = observations[t].y[name];
      row.append(el("td", { class: classes(t) },
        el("span", { class: `badge out${v}`, role: "img", "aria-label": `${name} = ${v} at step ${t}` }, String(v))));
    }
    body.append(row);
  }
  const effect = el("tr", { class: "effect-row" }, el("th", { scope: "row" }, "pattern", el("small", {}, " appears?")));
  for (let t = 0; t < T; t++) {
    if (t >= shown) {
      effect.append(el("td", { class: classes(t) }));
      continue;
    }
    const s = observations[t].effect_status;
    const label = `pattern ${s.holds ? "appears" : "does not appear"} at step ${t}${s.holds && s.in_window ? " and counts" : ""}`;
    effect.append(el("td", { class: classes(t) },
      el("span", { class: `badge ${s.holds ? (s.in_window ? "counts" : "holds") : "no"}`, role: "img",
        "aria-label": label }, s.holds ? "✓" : "–")));
  }
  body.append(effect);
  table.append(body);
}

function choiceGroup(name, index, t, value) {
  const group = el("div", { role: "radiogroup", class: "choice", "aria-label": `${name} at step ${t}`, "data-input": name });
  for (const [v, face, label] of CHOICES) {
    const id = `choice-${index}-${v}`;
    const input = el("input", { type: "radio", name: `choice-${index}`, id, value: v, "data-index": index });
    input.checked = value === v;
    group.append(el("label", { for: id, class: `opt opt-${v}` }, input,
      el("span", { class: "face", "aria-hidden": "true" }, face), el("span", { class: "visually-hidden" }, label)));
  }
  return group;
}

// Bring the column of step t into the middle of the scrolling region (the side-scroller's camera).
export function centerColumn(scroller, table, t) {
  const cell = table.querySelector(`thead th[data-t="${t}"]`);
  if (!cell) return;
  const c = cell.getBoundingClientRect();
  const s = scroller.getBoundingClientRect();
  scroller.scrollLeft += c.left + c.width / 2 - (s.left + s.width / 2);
}

// A replay: the timeline with a cursor that steps through the episode (buttons, and the arrow keys, Home and End
// on the timeline). Returns a function that moves the cursor.
export function mountReplay(root, goal, observations, options = {}) {
  const n = observations.length;
  let k = options.start ?? 0;
  const position = el("span", { class: "replay-pos", "aria-live": "polite" });
  const buttons = {
    first: el("button", { type: "button", "aria-label": "First: before step 0" }, "« First"),
    prev: el("button", { type: "button" }, "◀ Previous step"),
    next: el("button", { type: "button", class: "primary" }, "Next step ▶"),
    last: el("button", { type: "button", "aria-label": "Last: the whole episode" }, "Last »"),
  };
  const table = el("table", { class: "timeline" });
  const scroller = el("div", { class: "scroller", tabindex: "0", role: "region",
    "aria-label": `${options.label || "Replay"} timeline (arrow keys step through it)` }, table);
  const detail = el("p", { class: "replay-detail" });
  clear(root).append(el("div", { class: "replay-controls" }, buttons.first, buttons.prev, position, buttons.next,
    buttons.last), scroller, detail);

  function show(to) {
    k = Math.max(0, Math.min(n, to));
    renderTimeline(table, { goal, observations, shown: k, current: null });
    position.textContent = `after ${k} of ${n} step${n === 1 ? "" : "s"}`;
    buttons.first.disabled = buttons.prev.disabled = k === 0;
    buttons.next.disabled = buttons.last.disabled = k === n;
    if (k === 0) {
      detail.textContent = "Before step 0: nothing played yet.";
    } else {
      const o = observations[k - 1];
      const ys = goal.outputs.map((name) => `${name} = ${o.y[name]}`).join(", ");
      const refused = (o.refused || []).map((r) => r.message).join("; ");
      detail.textContent = `Step ${o.t}: ${ys}; the pattern ${o.effect_status.holds ? "appears" : "does not appear"}` +
        `${o.effect_status.achieved ? " (achieved)" : ""}; edits so far: ${editsText(o.certificate)}` +
        `${refused ? "; refused: " + refused : ""}${o.done ? "; the episode ended here." : "."}`;
    }
    centerColumn(scroller, table, Math.max(0, k - 1));
  }
  buttons.first.addEventListener("click", () => show(0));
  buttons.prev.addEventListener("click", () => show(k - 1));
  buttons.next.addEventListener("click", () => show(k + 1));
  buttons.last.addEventListener("click", () => show(n));
  scroller.addEventListener("keydown", (event) => {
    const moves = { ArrowLeft: k - 1, ArrowRight: k + 1, Home: 0, End: n };
    if (event.key in moves) {
      event.preventDefault();
      show(moves[event.key]);
    }
  });
  show(k);
  return show;
}
