// What every page shares: calling the server's JSON API, building DOM nodes safely (text is always text, never
// HTML: names come from the bundle), and the few words the pages use for certificates and yes/no values.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Call the API; a refusal becomes an ApiError carrying the server's one-line message.
export async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, cache: "no-store", credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, "the server cannot be reached (your committed steps are saved): try again");
  }
  let data = null;
  try {
    data = await response.json();
  } catch (err) {
    data = null;
  }
  if (!response.ok) {
    throw new ApiError(response.status, (data && data.error) || `the server answered ${response.status}`);
  }
  return data;
}

// el("td", {class: "x", "aria-label": "..."}, child, "text", ...): attributes are set, children appended as nodes.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// Edits in plain words, as participants read them: "step 20: r2 set to 1; step 21: r2 set to 1".
export function editsText(cert) {
  if (!cert || cert.length === 0) return "none";
  return cert.map(([t, a, v]) => `step ${t}: ${a} set to ${v}`).join("; ");
}

// Edits in the specification's notation (the replay page, for people who read run records).
export function certText(cert) {
  if (!cert || cert.length === 0) return "{} (no edits)";
  return "{" + cert.map(([t, a, v]) => `(${t}, ${a}, ${v})`).join(", ") + "}";
}

export function yesNo(value) {
  if (value === null || value === undefined) return "–";
  return value ? "yes" : "no";
}

export function fixed(value) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(3);
}

// Fill a <dl> with [term, description] pairs (a description may be a node).
export function facts(dl, pairs) {
  clear(dl);
  for (const [term, desc, id] of pairs) {
    dl.append(el("div", { class: "fact" }, el("dt", {}, term), el("dd", { id: id || null }, desc)));
  }
}

// Say something to screen-reader users (the page has one polite live region, #live).
export function announce(message) {
  const live = document.getElementById("live");
  if (!live) return;
  live.textContent = "";
  window.setTimeout(() => { live.textContent = message; }, 30);
}

// The goal panel's facts, in plain words, as the play page and the replay page show them.
export function goalFacts(goal) {
  const [first, last] = goal.effect_steps;
  const when = goal.mode === "hard" || first === last
    ? `exactly at step ${goal.t_star}`
    : `at any step from ${first} to ${last}`;
  return [
    ["Pattern to make appear", el("code", { class: "expr" }, goal.effect)],
    ["Target step", String(goal.t_star)],
    ["When it counts", when],
    ["Steps", `${goal.horizon} (steps 0 to ${goal.horizon - 1})`],
    ["Inputs (you set)", goal.inputs.join(", ")],
    ["Outputs (you see)", goal.outputs.join(", ")],
    ["Steps you may change", `at most ${goal.budget_t}`],
    ["Changes you may make", `at most ${goal.budget_a}`],
  ];
}
