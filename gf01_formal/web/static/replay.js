// The replay page: read run records from a file or the clipboard (in the browser: nothing is uploaded until one
// record is chosen), ask the server to play the chosen one again on its instance, and step through it.

import { api, el, clear, certText, yesNo, fixed, facts, goalFacts } from "./common.js";
import { mountReplay } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const message = (text) => { $("message").textContent = text; };
let records = [];

function parse(text) {
  const trimmed = text.trim();
  if (!trimmed) return [];
  try {
    const one = JSON.parse(trimmed);
    return Array.isArray(one) ? one : [one];
  } catch (err) {
    // not one JSON value: JSON Lines
  }
  const out = [];
  trimmed.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    try {
      out.push(JSON.parse(line));
    } catch (err) {
      throw new Error(`line ${i + 1} is not JSON`);
    }
  });
  return out;
}

function offer(text) {
  message("");
  $("found").textContent = "";
  try {
    records = parse(text).filter((r) => r && typeof r === "object" && r.run_id);
  } catch (err) {
    message(`The file cannot be read: ${err.message}`);
    return;
  }
  const pick = clear($("pick"));
  records.forEach((r, i) => {
    const who = (r.agent_meta && r.agent_meta.participant_id) || r.agent_name;
    pick.append(el("option", { value: i },
      `${i + 1}. ${r.instance_id}: ${who} (${r.renderer_track}, ${r.status}${r.valid ? ", valid" : ""})`));
  });
  pick.disabled = $("open").disabled = records.length === 0;
  $("found").textContent = records.length ? `${records.length} record${records.length === 1 ? "" : "s"} found.` : "";
  if (!records.length) message("No run record found.");
  if (records.length) pick.focus();
}

async function open() {
  const record = records[Number($("pick").value)];
  if (!record) return;
  let data;
  try {
    data = await api("POST", "/api/replay", { record });
  } catch (err) {
    message(`This record cannot be replayed: ${err.message}`);
    return;
  }
  const r = data.record;
  facts($("summary"), [
    ["Run", r.run_id],
    ["Instance", data.instance_id],
    ["Player", `${r.agent_name}${r.participant_id ? ` (${r.participant_id})` : ""} on ${r.eval_track}`],
    ["Renderer", `${r.renderer_track} (${r.renderer_profile_id})`],
    ["Status", r.status + (r.error ? `: ${r.error}` : "")],
    ["Certificate", certText(r.certificate), "replay-cert"],
    ["Suff / Min1 / Valid", `${yesNo(r.suff)} / ${yesNo(r.min1)} / ${yesNo(r.valid)}`, "replay-verdict"],
    ["Eff_t / Eff_a", `${r.eff_t ?? "–"} / ${r.eff_a ?? "–"}`],
    ["AP / TS F1 (best match)", `${fixed(r.ap_f1)} / ${fixed(r.ts_f1)}`],
    ["Best match in M(I)", r.best_match_gold ? certText(r.best_match_gold) : "none"],
    ["Steps", r.reconstructed ? "reconstructed from the certificate (the record has no step log)"
      : `${data.observations.length} played`],
  ]);
  facts($("goal-list"), goalFacts(data.goal));
  mountReplay($("replay"), data.goal, data.observations, { start: 0, label: "Recorded episode" });
  $("view").hidden = false;
  $("view-h").focus();
}

$("file").addEventListener("change", async () => {
  const file = $("file").files[0];
  if (file) offer(await file.text());
});
$("load-paste").addEventListener("click", () => offer($("paste").value));
$("open").addEventListener("click", open);

// Under a pilot the server refuses replays: say so at once, not after a record is chosen.
api("GET", "/api/pilot").then(() => {
  message("Replay is off while a pilot runs on this server: replay records with a server started without --pilot.");
  for (const id of ["file", "paste", "load-paste"]) $(id).disabled = true;
}, () => {});
