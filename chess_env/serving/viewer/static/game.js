// The game page (game.html?id=ID): one service game, live over its spectators' WebSocket while
// it is in play, or replayed when it is over or archived.

import { el, pageParameter, serviceURL } from "./api.js";
import { LiveGame } from "./live.js";
import { Replayer } from "./replayer.js";

const gameId = pageParameter("id");
const title = document.getElementById("title");
const message = document.getElementById("message");
const pgnLink = document.getElementById("pgn-link");
const replayer = new Replayer(document.getElementById("replayer"));

function showMessage(text) {
  message.textContent = text;
  message.hidden = !text;
}

if (!gameId) {
  showMessage("No game given: open one from the list of games.");
} else {
  pgnLink.href = serviceURL(`games/${encodeURIComponent(gameId)}/pgn`);
  const live = new LiveGame(gameId, replayer, {
    onUpdate: (game) => {
      title.replaceChildren(
        el("span", { class: "white-name" }, game.white), " – ", el("span", { class: "black-name" }, game.black));
      document.title = `${game.white} – ${game.black} · polyarena viewer`;
      pgnLink.hidden = !game.status; // the service has the PGN of the games it holds
    },
    onMissing: (error) => showMessage(`${error.message}`),
  });
  live.start();
}
