/* The world page: one episode log of a multi-agent world, turn by turn.
 *
 * Reads multiagent.recording's EpisodeLog (schema version 1; JSON, or gzipped JSON unpacked
 * with the browser's DecompressionStream) from a file the user opens or drops; fetches nothing.
 * Shows the observability matrix as a heat map, the actions of the turn, and per target (each
 * agent, then the global state) its ground truth beside every observer's view of it.
 *
 * Data attributes (for tests and tools):
 * - #episode[data-turn][data-index]: the turn shown and its index in the log;
 * - view cells td[data-observer][data-target][data-variable][data-state], data-state one of
 *   hidden | exact | noisy | absent; data-value (JSON) when shown; data-true (JSON) and
 *   data-differs ("true" | "false") when noisy;
 * - truth cells td.truth[data-target][data-variable][data-value];
 * - matrix cells td[data-observer][data-target][data-level][data-noise];
 * - action rows tr[data-agent] with td[data-action] (JSON), td[data-reward].
 */
"use strict";

(function () {
  const SCHEMA_VERSION = 1;
  const GLOBAL = "global";
  const MAX_TEXT = 90;
  const TYPING = "textarea, select, [contenteditable], input:not([type=file]):not([type=button])";
  const page = { log: null, name: "", index: 0, cells: new Map() };
  const $ = (id) => document.getElementById(id);

  /* -- building elements ------------------------------------------------------------------ */

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null) continue;
      if (key === "className") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key === "onclick") node.addEventListener("click", value);
      else if (key === "style") Object.assign(node.style, value); // CSSOM: the CSP allows it
      else node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child !== undefined && child !== null) {
        node.append(child instanceof Node ? child : String(child));
      }
    }
    return node;
  }

  /* -- reading a log ---------------------------------------------------------------------- */

  async function readLog(file) {
    let bytes = new Uint8Array(await file.arrayBuffer());
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      if (typeof DecompressionStream === "undefined") {
        throw new Error("this browser cannot unpack gzip; gunzip the file first");
      }
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    }
    let data;
    try {
      data = JSON.parse(new TextDecoder().decode(bytes));
    } catch (error) {
      throw new Error("not JSON: " + error.message);
    }
    return checked(data);
  }

  /* The fields this page reads, with the path of the first one missing or of the wrong kind.
     load_episode_log in Python checks the rest. */
  function checked(data) {
    const need = (ok, path, what) => {
      if (!ok) throw new Error(`${path}: expected ${what}`);
    };
    const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
    need(isObject(data), "(top level)", "an episode log object");
    if (data.schema_version !== SCHEMA_VERSION) {
      throw new Error(
        `schema_version: this page reads version ${SCHEMA_VERSION}, the file is version ` +
          `${JSON.stringify(data.schema_version)}`,
      );
    }
    need(typeof data.world === "string", "world", "a string");
    for (const key of ["agents", "agent_variables", "global_variables", "cells", "turns"]) {
      need(Array.isArray(data[key]), key, "a list");
    }
    need(data.agents.length > 0 && data.turns.length > 0, "turns", "at least one turn");
    data.cells.forEach((cell, i) => {
      need(isObject(cell) && isObject(cell.variables), `cells[${i}]`, "a cell with variables");
    });
    data.turns.forEach((turn, i) => {
      need(isObject(turn), `turns[${i}]`, "an object");
      need(Number.isInteger(turn.turn), `turns[${i}].turn`, "an integer");
      need(isObject(turn.state), `turns[${i}].state`, "an object");
      need(isObject(turn.state.agents), `turns[${i}].state.agents`, "an object");
      need(isObject(turn.state.global_state), `turns[${i}].state.global_state`, "an object");
      need(isObject(turn.observations), `turns[${i}].observations`, "an object");
      for (const key of ["actions", "action_errors", "rewards", "infos"]) turn[key] ??= {};
      for (const key of ["terminated", "truncated"]) turn[key] ??= []; // the DTO's defaults
    });
    return data;
  }

  async function open(file) {
    showError("");
    try {
      const log = await readLog(file);
      load(log, file.name);
    } catch (error) {
      showError(`${file.name}: not an episode log this page can show: ${error.message}`);
    }
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message;
    box.hidden = !message;
  }

  function load(log, name) {
    page.log = log;
    page.name = name;
    page.cells = new Map(log.cells.map((cell) => [`${cell.observer}\u0000${cell.target}`, cell]));
    const slider = $("turn");
    slider.max = String(log.turns.length - 1);
    renderSummary();
    renderMatrix();
    $("episode").hidden = false;
    show(0);
  }

  function cellOf(observer, target) {
    return page.cells.get(`${observer}\u0000${target}`);
  }

  /* -- formatting values ------------------------------------------------------------------ */

  function number(value) {
    if (Number.isInteger(value)) return String(value);
    if (Math.abs(value) >= 1000) return value.toFixed(0);
    return String(Number(value.toPrecision(4)));
  }

  function text(value) {
    if (value === null || value === undefined) return "—";
    if (typeof value === "number") return number(value);
    if (typeof value === "boolean" || typeof value === "string") return String(value);
    if (Array.isArray(value)) {
      // A few numbers read as a point (tuples come back from JSON as lists); the rest as lists.
      const point = value.length <= 3 && value.every((item) => typeof item === "number");
      const inner = value.map(text).join(", ");
      return point ? `(${inner})` : `[${inner}]`;
    }
    return Object.entries(value)
      .map(([key, item]) => `${key}: ${typeof item === "object" && item ? `{${text(item)}}` : text(item)}`)
      .join(", ");
  }

  function short(value) {
    const full = text(value);
    return full.length <= MAX_TEXT ? full : full.slice(0, MAX_TEXT - 1) + "…";
  }

  function pretty(value) {
    return JSON.stringify(value, null, 1);
  }

  function percent(noise) {
    return `${Number((noise * 100).toPrecision(3))}%`;
  }

  function noiseText(noise) {
    if (!noise) return "";
    return page.log.distribution === "gaussian" ? `σ ${percent(noise)}` : `±${percent(noise)}`;
  }

  /* -- the page --------------------------------------------------------------------------- */

  function renderSummary() {
    const log = page.log;
    const first = log.turns[0].turn;
    const last = log.turns[log.turns.length - 1].turn;
    const parts = [
      el("strong", {}, log.world),
      ` · seed ${log.seed} · turns ${first}–${last} · ${log.agents.length} agents · `,
      log.complete ? "complete" : "unfinished",
      " · ",
      log.observability
        ? `observability on (${log.distribution} noise)`
        : "observability off: every agent saw the ground truth",
      el("span", { className: "file" }, ` · ${page.name}`),
    ];
    $("summary").replaceChildren(...parts);
  }

  function renderMatrix() {
    const log = page.log;
    const targets = [...log.agents, GLOBAL];
    const head = el("tr", {}, el("th", { className: "corner" }, "observer ╲ target"),
      targets.map((target) => el("th", { scope: "col" }, target)));
    const rows = log.agents.map((observer) =>
      el("tr", {}, el("th", { scope: "row" }, observer), targets.map((target) => {
        const cell = cellOf(observer, target);
        const level = cell ? cell.level : "unaware";
        const noise = cell ? cell.noise : 0;
        const hidden = cell
          ? Object.entries(cell.variables).filter(([, mark]) => mark === "hidden").map(([n]) => n)
          : [];
        const title = `${observer} sees ${target}: ${level}` +
          (noise ? `, noise ${noiseText(noise)}` : "") +
          (level !== "unaware" && hidden.length ? `\nhidden: ${hidden.join(", ")}` : "");
        return el("td", {
          className: `level-${level}`,
          title,
          dataset: { observer, target, level, noise: String(noise) },
          onclick: () => focusView(observer, target),
        },
        el("span", { className: "level" }, level),
        el("span", { className: "noise" }, noiseText(noise)),
        el("span", { className: "noise-bar", style: { width: `${Math.min(noise, 1) * 100}%` } }));
      })));
    $("matrix").replaceChildren(el("thead", {}, head), el("tbody", {}, rows));
  }

  function focusView(observer, target) {
    const section = document.querySelector(`section.target[data-target="${CSS.escape(target)}"]`);
    if (!section) return;
    section.scrollIntoView({ block: "start" });
    for (const node of section.querySelectorAll(`[data-observer="${CSS.escape(observer)}"]`)) {
      node.classList.remove("flash");
      void node.offsetWidth; // restart the animation
      node.classList.add("flash");
    }
  }

  function show(index) {
    const log = page.log;
    if (!log) return;
    page.index = Math.max(0, Math.min(index, log.turns.length - 1));
    const turn = log.turns[page.index];
    $("turn").value = String(page.index);
    $("turn-label").textContent =
      `turn ${turn.turn} (${page.index + 1} of ${log.turns.length})`;
    $("prev").disabled = page.index === 0;
    $("next").disabled = page.index === log.turns.length - 1;
    renderActions(turn);
    renderTargets(turn);
    const episode = $("episode");
    episode.dataset.index = String(page.index);
    episode.dataset.turn = String(turn.turn);
  }

  function renderActions(turn) {
    const log = page.log;
    const head = el("tr", {}, ["agent", "action", "reward", "outcome"].map((h) => el("th", {}, h)));
    const rows = log.agents.map((agent) => {
      const live = agent in turn.observations;
      const done = turn.terminated.includes(agent)
        ? " (terminated)"
        : turn.truncated.includes(agent) ? " (truncated)" : "";
      let action;
      if (agent in turn.action_errors) {
        action = el("td", { className: "refused", title: turn.action_errors[agent] },
          `refused: ${short(turn.action_errors[agent])}`);
      } else if (agent in turn.actions) {
        action = el("td", { dataset: { action: JSON.stringify(turn.actions[agent]) } },
          short(turn.actions[agent]));
      } else {
        action = el("td", { className: "none" }, live ? "— (the last turn)" : "— (out of the episode)");
      }
      const reward = agent in turn.rewards ? number(turn.rewards[agent]) : "";
      const info = turn.infos[agent] ? short(turn.infos[agent]) : "";
      return el("tr", { dataset: { agent } },
        el("th", { scope: "row" }, agent),
        action,
        el("td", { className: "reward", dataset: { reward } }, reward),
        el("td", { className: "outcome" }, info + done));
    });
    $("actions").replaceChildren(el("thead", {}, head), el("tbody", {}, rows));
  }

  function renderTargets(turn) {
    const log = page.log;
    const sections = [...log.agents, GLOBAL].map((target) => {
      const isGlobal = target === GLOBAL;
      const variables = isGlobal ? log.global_variables : log.agent_variables;
      const truth = isGlobal ? turn.state.global_state : turn.state.agents[target] || {};
      const head = el("tr", {},
        el("th", { className: "variable" }, "variable"),
        el("th", { className: "truth" }, "ground truth"),
        log.agents.map((observer) => observerHeader(turn, observer, target)));
      const rows = variables.map((variable) =>
        el("tr", {},
          el("th", { scope: "row", className: "variable" }, variable),
          el("td", {
            className: "truth",
            title: pretty(truth[variable]),
            dataset: { target, variable, value: JSON.stringify(truth[variable] ?? null) },
          }, short(truth[variable])),
          log.agents.map((observer) => viewCell(turn, observer, target, variable, truth[variable]))));
      const title = isGlobal ? "global state" : target;
      return el("section", { className: "target", dataset: { target } },
        el("h3", {}, title),
        el("div", { className: "scroll" },
          el("table", { className: "views" }, el("thead", {}, head), el("tbody", {}, rows))));
    });
    $("targets").replaceChildren(...sections);
  }

  function observerHeader(turn, observer, target) {
    const cell = cellOf(observer, target);
    const level = cell ? cell.level : "unaware";
    const noise = cell ? cell.noise : 0;
    const live = observer in turn.observations;
    return el("th", {
      className: `observer level-${level}`,
      dataset: { observer, level },
      title: `${observer}'s view of ${target}: ${level}` + (noise ? `, noise ${noiseText(noise)}` : ""),
    },
    el("span", { className: "name" }, observer),
    el("span", { className: "sub" }, live ? `${level} ${noiseText(noise)}` : "out of the episode"));
  }

  function seenValues(turn, observer, target) {
    const observed = turn.observations[observer];
    if (!observed) return undefined;
    if (target === GLOBAL) return observed.global_state || undefined;
    return observed.agents[target];
  }

  function viewCell(turn, observer, target, variable, truth) {
    const cell = cellOf(observer, target);
    const mark = cell ? cell.variables[variable] || "hidden" : "hidden";
    const values = seenValues(turn, observer, target);
    const dataset = { observer, target, variable };
    if (mark === "hidden") {
      dataset.state = "hidden";
      const why = !cell || cell.level === "unaware"
        ? `${observer} is unaware of ${target}`
        : `${variable} is internal: ${observer} sees ${target} from outside`;
      return el("td", { className: "view hidden", title: why, dataset }, "hidden");
    }
    if (!values || !(variable in values)) {
      dataset.state = "absent";
      const why = turn.observations[observer]
        ? `${target} is out of the episode` : `${observer} is out of the episode`;
      return el("td", { className: "view absent", title: why, dataset }, "—");
    }
    const value = values[variable];
    dataset.state = mark;
    dataset.value = JSON.stringify(value ?? null);
    if (mark === "exact") {
      return el("td", { className: "view exact", title: pretty(value), dataset }, short(value));
    }
    const differs = JSON.stringify(value) !== JSON.stringify(truth);
    dataset.true = JSON.stringify(truth ?? null);
    dataset.differs = String(differs);
    const noise = noiseText(cell.noise);
    return el("td", {
      className: `view noisy${differs ? " differs" : ""}`,
      title: `seen with noise ${noise}: ${pretty(value)}\ntrue value: ${pretty(truth)}`,
      dataset,
    },
    el("span", { className: "badge", "aria-label": "noisy" }, "≈"),
    el("span", { className: "seen" }, short(value)),
    el("span", { className: "true" }, differs ? `true ${short(truth)}` : "true: the same"));
  }

  /* -- controls --------------------------------------------------------------------------- */

  function onKey(event) {
    if (!page.log || event.altKey || event.ctrlKey || event.metaKey) return;
    // The slider steps by itself (its input event follows); text fields keep their keys.
    const target = event.target;
    if (target === $("turn") || (target.closest && target.closest(TYPING))) return;
    const moves = {
      ArrowLeft: page.index - 1,
      ArrowRight: page.index + 1,
      Home: 0,
      End: page.log.turns.length - 1,
    };
    if (event.key in moves) {
      event.preventDefault();
      show(moves[event.key]);
    }
  }

  function start() {
    $("log-file").addEventListener("change", (event) => {
      const file = event.target.files && event.target.files[0];
      if (file) open(file);
      event.target.value = ""; // choosing the same file again (re-recorded) reads it again
    });
    $("turn").addEventListener("input", (event) => show(Number(event.target.value)));
    $("prev").addEventListener("click", () => show(page.index - 1));
    $("next").addEventListener("click", () => show(page.index + 1));
    document.addEventListener("keydown", onKey);
    document.addEventListener("dragover", (event) => event.preventDefault());
    document.addEventListener("drop", (event) => {
      event.preventDefault();
      const file = event.dataTransfer && event.dataTransfer.files[0];
      if (file) open(file);
    });
    window.worldViewer = { show, get log() { return page.log; } };
  }

  start();
})();
