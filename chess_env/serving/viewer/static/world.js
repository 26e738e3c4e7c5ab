/* The world page: one episode log of a multi-agent world, turn by turn.
 *
 * Reads multiagent.recording's EpisodeLog (schema version 1; JSON, or gzipped JSON unpacked
 * with the browser's DecompressionStream) from a file the user opens or drops; fetches nothing.
 * An eval run's episodes.jsonl opened together with its logs (OUT/logs/*.json.gz) lists the
 * run's episodes by key; each opens the log its record names (matched by file name).
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
 * - action rows tr[data-agent] with td[data-action] (JSON), td[data-reward];
 * - an eval run's episodes: #run-episodes tr[data-episode-key][data-log][data-available]
 *   ("true" when the log was opened with episodes.jsonl) with a button.open-episode;
 *   data-shown="true" on the episode shown;
 * - seats in the header: #players li[data-seat][data-player] (the log's players);
 * - the messages timeline, every message of the episode in turn order:
 *   #messages li[data-message-turn][data-sender][data-channel][data-recipients] (a JSON list of
 *   who received it), data-to on a direct message, data-current="true" on the shown turn's;
 *   .text holds the message; a click shows its turn;
 * - the decisions of the shown turn, one per LLM seat that decided:
 *   #decisions section[data-decision-agent][data-valid][data-requests][data-tokens-in]
 *   [data-tokens-out][data-latency] (seconds), .action[data-action] (JSON) and, each a collapsed
 *   <details>: details[data-part="prompt"] (the messages sent before the first answer, each a
 *   .turn-message[data-role]), details[data-part="answers"] with li[data-answer] (0, 1, ...),
 *   data-refused = the error kind of a refused answer ("" for the accepted one), its .reply
 *   and the .feedback sent back, and details[data-part="errors"] with li[data-error].
 *
 * Everything a log holds is inserted as text (textContent, never innerHTML): messages and
 * answers are LLM output.
 */
"use strict";

(function () {
  const SCHEMA_VERSION = 1;
  const GLOBAL = "global";
  const MAX_TEXT = 90;
  const TYPING = "textarea, select, [contenteditable], input:not([type=file]):not([type=button])";
  const page = { log: null, name: "", index: 0, cells: new Map(), runFiles: new Map() };
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
      data = JSON.parse(new TextDecoder().decode(bytes), exactSeed);
    } catch (error) {
      throw new Error("not JSON: " + error.message);
    }
    return checked(data);
  }

  /* Eval seeds are 64-bit: past 2^53 a number loses digits, so such a seed keeps its digits as
     a string (where the browser gives the reviver the source text). */
  function exactSeed(key, value, context) {
    const exact = key === "seed" && typeof value === "number" && !Number.isSafeInteger(value);
    return exact && context && context.source ? context.source : value;
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
      for (const key of ["terminated", "truncated", "messages"]) turn[key] ??= []; // the DTO's defaults
      turn.decisions ??= {};
      need(Array.isArray(turn.messages), `turns[${i}].messages`, "a list");
      turn.messages.forEach((message, j) => {
        const where = `turns[${i}].messages[${j}]`;
        need(isObject(message), where, "an object");
        need(Number.isInteger(message.turn), `${where}.turn`, "an integer");
        for (const key of ["sender", "channel", "text"]) {
          need(typeof message[key] === "string", `${where}.${key}`, "a string");
        }
        message.recipients ??= [];
        need(Array.isArray(message.recipients), `${where}.recipients`, "a list");
      });
      need(isObject(turn.decisions), `turns[${i}].decisions`, "an object");
      for (const [agent, step] of Object.entries(turn.decisions)) {
        const where = `turns[${i}].decisions[${agent}]`;
        need(isObject(step), where, "a decision object");
        for (const key of ["messages", "replies"]) {
          need(Array.isArray(step[key]), `${where}.${key}`, "a list");
        }
        for (const key of ["errors", "error_kinds"]) step[key] ??= [];
      }
    });
    data.players ??= {};
    need(isObject(data.players), "players", "an object");
    return data;
  }

  async function open(file) {
    showError("");
    try {
      const log = await readLog(file);
      load(log, file.name);
      for (const [row, logFile] of page.runFiles) row.dataset.shown = String(logFile === file);
    } catch (error) {
      showError(`${file.name}: not an episode log this page can show: ${error.message}`);
    }
  }

  /* One file: an episode log. Several: an eval run's episodes.jsonl and (some of) its logs. */
  async function openFiles(files) {
    showError("");
    const chosen = [...files];
    const index = chosen.filter((file) => file.name.endsWith(".jsonl"));
    if (index.length === 0 && chosen.length === 1) {
      await open(chosen[0]);
    } else if (index.length !== 1) {
      showError(
        `${chosen.length} files with ${index.length} .jsonl among them: open one episode log, ` +
          "or one eval run's episodes.jsonl with its logs",
      );
    } else {
      try {
        const records = await readRun(index[0]);
        const logs = new Map(chosen.filter((file) => file !== index[0]).map((f) => [f.name, f]));
        renderRun(index[0].name, records, logs);
      } catch (error) {
        showError(`${index[0].name}: not an eval run's episodes.jsonl: ${error.message}`);
      }
    }
  }

  /* The records of episodes.jsonl (multiagent.evaluation.records.EpisodeRecord, one a line). */
  async function readRun(file) {
    const lines = (await file.text()).split("\n");
    const records = [];
    lines.forEach((line, i) => {
      if (!line.trim()) return;
      let record;
      try {
        record = JSON.parse(line);
      } catch (error) {
        throw new Error(`line ${i + 1}: not JSON: ${error.message}`);
      }
      const ok = record !== null && typeof record === "object" && !Array.isArray(record);
      if (!ok) throw new Error(`line ${i + 1}: expected an episode record object`);
      for (const key of ["key", "log"]) {
        if (typeof record[key] !== "string") {
          throw new Error(`line ${i + 1}: ${key}: expected a string`);
        }
      }
      records.push(record);
    });
    if (records.length === 0) throw new Error("no episode records");
    return records;
  }

  function renderRun(name, records, logs) {
    page.runFiles = new Map();
    const head = el("tr", {}, ["key", "scenario", "condition", "focal", "episode", "turns", "end",
      "focal reward", "log"].map((h) => el("th", {}, h)));
    const rows = records.map((record) => {
      const fileName = record.log.split("/").pop();
      const file = logs.get(fileName);
      const seats = Array.isArray(record.seats) ? record.seats : [];
      const focalReward = seats.filter((seat) => seat.focal)
        .reduce((sum, seat) => sum + Number(seat.reward || 0), 0);
      const row = el("tr", {
        dataset: { episodeKey: record.key, log: record.log, available: String(Boolean(file)) },
      },
      el("td", { className: "key" }, record.key),
      [record.scenario, record.condition, record.focal, record.episode, record.turns, record.end]
        .map((value) => el("td", {}, value ?? "")),
      el("td", { className: "reward" }, number(focalReward)),
      el("td", {}, file
        ? el("button", { type: "button", className: "open-episode", onclick: () => open(file) },
          "open")
        : el("span", { className: "missing", title: `open ${fileName} with episodes.jsonl` },
          `${fileName} not opened`)));
      row.dataset.shown = "false";
      if (file) page.runFiles.set(row, file);
      return row;
    });
    $("run-episodes").replaceChildren(el("thead", {}, head), el("tbody", {}, rows));
    $("run-name").textContent = `${name}: ${records.length} episodes, ${logs.size} logs opened`;
    $("run").hidden = false;
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
    renderPlayers();
    renderMatrix();
    renderMessages();
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

  function renderPlayers() {
    const players = page.log.players;
    const seats = page.log.agents.filter((agent) => agent in players);
    $("players").replaceChildren(...seats.map((seat) =>
      el("li", { dataset: { seat, player: players[seat] } },
        el("strong", {}, seat), " ← ", el("code", {}, players[seat]))));
    $("players").hidden = seats.length === 0;
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
    markCurrentMessages(turn);
    renderDecisions(turn);
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

  /* -- messages and decisions ------------------------------------------------------------- */

  function indexOfTurn(turn) {
    return page.log.turns.findIndex((record) => record.turn === turn);
  }

  function renderMessages() {
    const sent = page.log.turns.flatMap((turn) => turn.messages);
    const items = sent.map((message) => {
      const heard = message.recipients.length ? message.recipients.join(", ") : "no one";
      const whom = message.to ? `${message.to}` : `all who hear: ${heard}`;
      const showTurn = () => show(indexOfTurn(message.turn));
      const dataset = {
        messageTurn: String(message.turn),
        sender: message.sender,
        channel: message.channel,
        recipients: JSON.stringify(message.recipients),
      };
      if (message.to) dataset.to = message.to;
      const item = el("li", {
        tabindex: "0",
        role: "button",
        title: `turn ${message.turn}: show it`,
        dataset,
        onclick: showTurn,
      },
      el("span", { className: "when" }, `turn ${message.turn}`),
      el("span", { className: "who" }, el("strong", {}, message.sender), " → ", whom,
        message.to && !message.recipients.includes(message.to) ? " (not delivered)" : ""),
      el("span", { className: `channel${message.to ? " direct" : ""}` }, message.channel),
      el("span", { className: "text" }, message.text));
      item.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          showTurn();
        }
      });
      return item;
    });
    $("messages").replaceChildren(...items);
    $("messages").hidden = items.length === 0;
    $("no-messages").hidden = items.length > 0;
  }

  function markCurrentMessages(turn) {
    const list = $("messages");
    let first = null;
    for (const item of list.children) {
      const current = item.dataset.messageTurn === String(turn.turn);
      item.classList.toggle("current", current);
      item.dataset.current = String(current);
      if (current) item.setAttribute("aria-current", "true");
      else item.removeAttribute("aria-current");
      if (current && !first) first = item;
    }
    // Scroll the list (not the page) to the turn's first message.
    if (first) list.scrollTop = first.offsetTop; // the list is the offset parent (world.css)
  }

  function renderDecisions(turn) {
    const agents = page.log.agents.filter((agent) => agent in turn.decisions);
    const sections = agents.map((agent) => decision(agent, turn.decisions[agent], turn));
    $("decisions").replaceChildren(...(sections.length
      ? sections
      : [el("p", { className: "empty" }, "No LLM decision on this turn.")]));
  }

  function content(message) {
    if (typeof message.content === "string" && message.content) return message.content;
    const rest = { ...message };
    delete rest.role;
    return pretty(rest);
  }

  function collapsed(part, title, ...children) {
    return el("details", { dataset: { part } }, el("summary", {}, title), ...children);
  }

  function decision(agent, step, turn) {
    const firstAnswer = step.messages.findIndex((message) => message.role === "assistant");
    const prompt = firstAnswer < 0 ? step.messages : step.messages.slice(0, firstAnswer);
    // The user messages after the first answer are the feedback on each refused answer, in order.
    const feedback = firstAnswer < 0
      ? []
      : step.messages.slice(firstAnswer).filter((message) => message.role === "user");
    const tokens = (n) => (n === null || n === undefined ? "?" : String(n));
    const latency = Number(step.latency_seconds || 0);
    const facts = [
      `${step.requests ?? 0} request${step.requests === 1 ? "" : "s"}`,
      `tokens ${tokens(step.tokens_in)} in / ${tokens(step.tokens_out)} out`,
      `${number(latency)} s`,
    ];
    if (step.endpoint_retries) facts.push(`${step.endpoint_retries} endpoint retries`);
    if (step.from_cache) facts.push("from the replay cache");
    if (step.timed_out) facts.push("timed out");
    if (step.failure_reason) facts.push(`failure: ${step.failure_reason}`);
    const answers = step.replies.map((reply, i) => {
      const kind = i < step.error_kinds.length ? step.error_kinds[i] : "";
      return el("li", { className: kind ? "refused" : "accepted", dataset: { answer: String(i), refused: kind } },
        el("div", { className: "verdict" }, kind ? `refused: ${kind}` : (step.valid ? "accepted" : "answer")),
        el("pre", { className: "reply" }, content(reply)),
        feedback[i] ? el("div", { className: "role" }, "feedback sent back") : null,
        feedback[i] ? el("pre", { className: "feedback" }, content(feedback[i])) : null);
    });
    const worldRefused = turn.action_errors[agent];
    return el("section", {
      className: `decision ${step.valid ? "valid" : "invalid"}`,
      dataset: {
        decisionAgent: agent,
        valid: String(Boolean(step.valid)),
        requests: String(step.requests ?? 0),
        tokensIn: tokens(step.tokens_in),
        tokensOut: tokens(step.tokens_out),
        latency: String(latency),
      },
    },
    el("h3", {}, agent, " ",
      el("span", { className: "validity" }, step.valid ? "valid" : "invalid"),
      page.log.players[agent] ? el("small", { className: "player" }, page.log.players[agent]) : null),
    el("div", { className: "action", dataset: { action: JSON.stringify(step.action ?? null) } },
      "action ", el("code", {}, JSON.stringify(step.action ?? null))),
    worldRefused ? el("div", { className: "world-refused" }, `the world refused it: ${worldRefused}`) : null,
    el("div", { className: "facts" }, facts.join(" · ")),
    collapsed("prompt", `prompt (${prompt.length} message${prompt.length === 1 ? "" : "s"})`,
      prompt.map((message) => el("div", { className: "turn-message", dataset: { role: message.role ?? "" } },
        el("div", { className: "role" }, message.role ?? "?"),
        el("pre", {}, content(message))))),
    collapsed("answers", `answers (${answers.length}, ${step.error_kinds.length} refused)`,
      el("ol", { className: "answers" }, answers)),
    step.errors.length
      ? collapsed("errors", `errors (${step.errors.length})`,
        el("ul", { className: "errors" }, step.errors.map((error, i) =>
          el("li", { dataset: { error: String(i) } }, error))))
      : null);
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
      const files = event.target.files;
      if (files && files.length) openFiles(files);
      event.target.value = ""; // choosing the same file again (re-recorded) reads it again
    });
    $("turn").addEventListener("input", (event) => show(Number(event.target.value)));
    $("prev").addEventListener("click", () => show(page.index - 1));
    $("next").addEventListener("click", () => show(page.index + 1));
    document.addEventListener("keydown", onKey);
    document.addEventListener("dragover", (event) => event.preventDefault());
    document.addEventListener("drop", (event) => {
      event.preventDefault();
      const files = event.dataTransfer && event.dataTransfer.files;
      if (files && files.length) openFiles(files);
    });
    window.worldViewer = { show, get log() { return page.log; } };
  }

  start();
})();
