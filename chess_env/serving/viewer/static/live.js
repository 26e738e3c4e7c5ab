// A service game followed live: its plies from GET /viewer/api/games/{id}/replay (each with the
// FEN after it, read by python-chess), then WS /service/games/{id}/events: the snapshot and
// history frames (the game as it is), move_made (shown at once, its FEN is in the frame), and
// game_ended or game_aborted. After each frame the replay is fetched again for what frames do
// not carry (each move's thinking time, the result's words).

import { ApiError, eventsURL, getJSON, viewerURL } from "./api.js";

const REFRESH_DELAY_MS = 100; // frames in a burst (a server agent's answer) share one refresh
const RECONNECT_DELAY_MS = 1000;
const CLOSE_GOING_AWAY = 1001; // the game left the service's memory: archived
const MAX_FAILED_CONNECTIONS = 5; // refused in a row (a token the page cannot send, a proxy...)

export class LiveGame {
  /**
   * @param {string} gameId
   * @param {import("./replayer.js").Replayer} replayer where the game is shown
   * @param {{onUpdate?: Function, onMissing?: Function}} hooks: onUpdate(game) after every
   *   change; onMissing(error) when neither the service nor its archive knows the game
   */
  constructor(gameId, replayer, { onUpdate = null, onMissing = null } = {}) {
    this.gameId = gameId;
    this.replayer = replayer;
    this.onUpdate = onUpdate;
    this.onMissing = onMissing;
    this.socket = null;
    this.finished = false; // ended or aborted: the socket closes for good
    this.gone = false; // not (or no longer) in the service's memory
    this.aborted = false;
    this.refreshing = null;
    this.again = false;
    this.timer = null;
    this.failures = 0; // connections in a row that closed before any frame
  }

  /** Load the game, then follow it. */
  async start() {
    await this.refresh();
    this.#connect();
  }

  /** Fetch the game's plies again (one request at a time; calls during one run once after). */
  async refresh() {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.again = false;
        try {
          const game = await getJSON(viewerURL(`games/${encodeURIComponent(this.gameId)}/replay`));
          this.replayer.setGame(game);
          this.onUpdate?.(game);
        } catch (error) {
          if (error instanceof ApiError && error.status === 404) {
            this.gone = true;
            this.onMissing?.(error);
          } else {
            console.warn("refresh failed", error);
          }
        }
      } while (this.again);
    })();
    try {
      await this.refreshing;
    } finally {
      this.refreshing = null;
    }
  }

  /** Stop following (the page leaves the game). */
  close() {
    this.finished = true;
    clearTimeout(this.timer);
    this.socket?.close();
  }

  #later() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), REFRESH_DELAY_MS);
  }

  #connect() {
    if (this.finished || this.gone) return;
    const socket = new WebSocket(eventsURL(this.gameId));
    this.socket = socket;
    let framed = false;
    socket.addEventListener("message", (event) => {
      framed = true;
      this.failures = 0;
      this.#frame(JSON.parse(event.data));
    });
    socket.addEventListener("close", (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.failures = framed ? 0 : this.failures + 1;
      if (event.code === CLOSE_GOING_AWAY) {
        this.gone = true;
        this.refresh(); // from the archive now
      } else if (!this.finished && !this.gone && this.failures < MAX_FAILED_CONNECTIONS) {
        setTimeout(() => this.#connect(), RECONNECT_DELAY_MS);
      }
    });
  }

  #frame(frame) {
    const data = frame.data ?? {};
    switch (frame.type) {
      case "snapshot":
        if (data.ply !== this.replayer.length) this.#later();
        break;
      case "history":
        break; // the plies came with their FENs from the replay route
      case "move_made":
        this.#moveMade(data);
        break;
      case "game_ended":
        this.finished = true;
        this.#later();
        break;
      case "game_aborted":
        this.finished = true;
        this.aborted = true;
        this.replayer.setNote("aborted by its creator: nobody moves any more");
        this.onUpdate?.(this.replayer.game);
        break;
      case "error":
        this.gone = true; // not in memory: the replay route found it archived, or not at all
        break;
      default:
        break;
    }
  }

  #moveMade(data) {
    const before = this.replayer.length === 0 ? this.replayer.game?.start_fen
      : this.replayer.game?.plies.at(-1).fen_after;
    if (before && data.ply === this.replayer.length + 1) {
      this.replayer.appendPly({
        ply: data.ply,
        move_number: Number(before.split(" ")[5]),
        color: data.player,
        san: data.san,
        uci: data.move,
        fen_after: data.fen,
        seconds: null,
        comment: "",
        eval_cp: null,
        mate: null,
        refused: [],
        book: false,
      });
      this.onUpdate?.(this.replayer.game);
    }
    this.#later(); // the move's thinking time, and anything missed
  }
}
