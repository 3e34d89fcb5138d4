// A pilot's consent page: the consent text from the pilot file, the participant id fixed by the study link
// (?participant=ID&sig=SIG, which the server signed), and the box that must be ticked. The link is the
// participant's key: opened again, in this browser or any other, it goes back to the participant's episode.

import { api, el, clear } from "./common.js";

const $ = (id) => document.getElementById(id);
const message = (text) => { $("message").textContent = text; };
const link = new URLSearchParams(location.search);
const participant = link.get("participant") || "";
const sig = link.get("sig") || "";

// The episode this participant is at, when they have started (on any browser): the page goes there.
async function resume() {
  try {
    const answer = await api("POST", "/api/pilot/resume", { participant_id: participant, sig });
    location.replace(answer.play);
    return true;
  } catch (err) {
    if (err.status !== 404) message(err.message);
    return false;
  }
}

async function start(event) {
  event.preventDefault();
  message("");
  if (!participant || !sig) {
    message("Please open the study through the link you were sent: it carries your participant id.");
    return;
  }
  if (!$("agree").checked) {
    message("Please tick the box to give your consent; if you do not wish to take part, you may close this page.");
    $("agree").focus();
    return;
  }
  try {
    const body = { participant_id: participant, consent: true, sig };
    if (link.get("platform_id")) body.platform_id = link.get("platform_id");
    const answer = await api("POST", "/api/pilot", body);
    location.assign(answer.play);
  } catch (err) {
    message(err.message);
  }
}

async function main() {
  let info;
  try {
    info = await api("GET", "/api/pilot");
  } catch (err) {
    clear($("consent-text")).append(el("p", {}, err.message));
    return;
  }
  document.title = `${info.title}: information and consent`;
  $("title").textContent = info.title;
  const text = clear($("consent-text"));
  for (const paragraph of info.consent.split(/\n\s*\n/)) text.append(el("p", {}, paragraph.trim()));
  $("agree-label").textContent = info.consent_label;
  const n = info.instances;
  $("count").textContent = `The study has ${n} short puzzle${n === 1 ? "" : "s"}. Each step you take is saved at ` +
    "once: you can close the page and come back later with the same link, in this browser or any other.";
  $("participant").textContent = participant || "none: open the link you were sent";
  $("consent-form").addEventListener("submit", start);
  if (participant && sig) await resume();
}

main();
