// Free play: the bundle's instances, each with a button that begins an episode of it.

import { api, el } from "./common.js";

const message = (text) => { document.getElementById("message").textContent = text; };

async function play(id) {
  try {
    const answer = await api("POST", "/api/episodes", { instance_id: id });
    location.assign(answer.play);
  } catch (err) {
    message(`The episode could not begin: ${err.message}`);
  }
}

async function main() {
  let data;
  try {
    data = await api("GET", "/api/instances");
  } catch (err) {
    message(err.message);
    return;
  }
  const body = document.querySelector("#instances tbody");
  for (const i of data.instances) {
    // The button comes first, so that a phone shows it without scrolling the table sideways.
    body.append(el("tr", {},
      el("td", {}, el("button", { type: "button", class: "primary", "aria-label": `Play instance ${i.instance_id}`,
        onclick: () => play(i.instance_id) }, "Play")),
      el("th", { scope: "row" }, el("code", {}, i.instance_id)),
      el("td", {}, String(i.horizon)), el("td", {}, i.mode), el("td", {}, String(i.t_star)),
      el("td", {}, String(i.inputs)), el("td", {}, String(i.outputs)), el("td", {}, String(i.budget_t))));
  }
}

main();
