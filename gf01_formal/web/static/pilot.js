// A pilot's consent page: the consent text from the pilot file, the participant id (from the study link's
// ?participant= or typed), and the box that must be ticked. Opening the study link again in the same browser
// goes back to the participant's episode instead of starting over.

import { api, el, clear } from "./common.js";

const $ = (id) => document.getElementById(id);
const message = (text) => { $("message").textContent = text; };
let info = null;

function key(participant) {
  return `gf01.pilot.${info.pilot_id}.${participant}`;
}

async function resume(participant) {
  let token = null;
  try {
    token = localStorage.getItem(key(participant));
  } catch (err) {
    return false;
  }
  if (!token) return false;
  try {
    await api("GET", `/api/episodes/${encodeURIComponent(token)}`);
  } catch (err) {
    return false;
  }
  location.replace(`/play/${encodeURIComponent(token)}`);
  return true;
}

async function start(event) {
  event.preventDefault();
  message("");
  const participant = $("participant").value.trim();
  if (!participant) {
    message("Please enter your participant id.");
    $("participant").focus();
    return;
  }
  if (!$("agree").checked) {
    message("Please tick the box to give your consent; if you do not wish to take part, you may close this page.");
    $("agree").focus();
    return;
  }
  if (await resume(participant)) return;
  try {
    const link = new URLSearchParams(location.search);
    const body = { participant_id: participant, consent: true, sig: link.get("sig") || "" };
    if (link.get("platform_id")) body.platform_id = link.get("platform_id");
    const answer = await api("POST", "/api/pilot", body);
    try {
      localStorage.setItem(key(participant), answer.token);
    } catch (err) {
      // storage may be off: the episode's address still resumes it
    }
    location.assign(answer.play);
  } catch (err) {
    message(err.message);
  }
}

async function main() {
  try {
    info = await api("GET", "/api/pilot");
  } catch (err) {
    clear($("consent-text")).append(el("p", {}, err.message));
    return;
  }
  document.title = `${info.title}: consent`;
  $("title").textContent = info.title;
  const text = clear($("consent-text"));
  for (const paragraph of info.consent.split(/\n\s*\n/)) text.append(el("p", {}, paragraph.trim()));
  $("agree-label").textContent = info.consent_label;
  $("count").textContent = `The study has ${info.instances} short episode${info.instances === 1 ? "" : "s"}; ` +
    "each step you commit is saved at once, so you can close the page and come back with the same link.";
  const participant = new URLSearchParams(location.search).get("participant");
  if (participant) {
    $("participant").value = participant;
    if (await resume(participant)) return;
  }
  $("consent-form").addEventListener("submit", start);
}

main();
