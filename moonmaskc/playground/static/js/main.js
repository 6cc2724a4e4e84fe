// The Playground page: editing and compiling, stepping the decoder masked and unmasked, the
// experiment. All compiling, masking and sampling happens on the server (moonmaskc itself); this
// file only asks and shows.

import { api, ApiError } from "./api.js";
import { SourceEditor } from "./editor.js";
import { drawGraph } from "./graph.js";

const $ = (id) => document.getElementById(id);
const COMPILE_DELAY_MS = 350;
const PLAY_DELAY_MS = 120;
const TOKENS_LISTED = 200;

const app = {
  info: null,
  compiled: null,
  compileSeq: 0,
  controller: null,
  compileTimer: null,
  lanes: null,
  playing: false,
  busy: false,
  pendingSteps: 0,
  searchTimer: null,
  stateSeq: 0,
};

const editor = new SourceEditor($("source"), $("editor-backdrop"));

// Text helpers -----------------------------------------------------------------------------------

function visible(text) {
  const shown = printable(text).replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/\r/g, "␍");
  return shown === "" ? "∅" : shown;
}

// Control characters (other than newline and tab) as \xNN, so a token never hides.
function printable(text) {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

function formatMs(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
}

function setText(id, text) {
  $(id).textContent = text;
}

function kind() {
  return document.querySelector('input[name="kind"]:checked').value;
}

function setKind(value) {
  $(`kind-${value}`).checked = true;
  updateOptionFields();
}

function updateOptionFields() {
  const current = kind();
  $("whitespace-field").hidden = current !== "schema";
  $("depth-field").hidden = current === "regex";
}

function intValue(id, fallback) {
  const value = Number.parseInt($(id).value, 10);
  return Number.isFinite(value) ? value : fallback;
}

// Compiling --------------------------------------------------------------------------------------

function compileOptions() {
  const options = { max_states: intValue("max-states", app.info.limits.max_states) };
  if (kind() !== "regex") options.max_depth = intValue("max-depth", 3);
  if (kind() === "schema") options.whitespace = $("whitespace").value;
  return options;
}

function scheduleCompile() {
  clearTimeout(app.compileTimer);
  setText("compile-status", "editing…");
  app.compileTimer = setTimeout(compileNow, COMPILE_DELAY_MS);
}

async function compileNow() {
  clearTimeout(app.compileTimer);
  const seq = ++app.compileSeq;
  if (app.controller) app.controller.abort();
  const controller = new AbortController();
  app.controller = controller;
  stopPlaying();
  document.body.dataset.compile = "running";
  setText("compile-status", "compiling…");
  const body = {
    kind: kind(),
    source: editor.value,
    vocabulary: $("vocabulary").value,
    options: compileOptions(),
  };
  try {
    const summary = await api("/api/compile", body, { signal: controller.signal });
    if (seq !== app.compileSeq) return;
    showCompiled(summary);
  } catch (error) {
    if (error.name === "AbortError" || seq !== app.compileSeq) return;
    showCompileError(error instanceof ApiError ? error.detail : { message: String(error) });
  }
}

function showCompiled(summary) {
  app.compiled = summary;
  editor.clearError();
  $("error").hidden = true;
  setText("stat-states", summary.states.toLocaleString("en"));
  setText("stat-accepting", summary.accepting_states.toLocaleString("en"));
  setText("stat-classes", String(summary.byte_classes));
  setText("stat-time", formatMs(summary.compile_ms));
  const timings = Object.entries(summary.timings_ms).map(([key, value]) => `${key.replace(/_s$/, "")} ${formatMs(value)}`);
  $("stat-time").title = timings.join(", ");
  const vocabulary = summary.vocabulary ? `, vocabulary ${summary.vocabulary.name} (${summary.vocabulary.size.toLocaleString("en")} tokens)` : "";
  setText("compile-status", `compiled${summary.cached ? " (already built)" : ""}${vocabulary}${summary.empty ? "; the language is empty" : ""}`);
  setText("applied-options", Object.entries(summary.options).map(([key, value]) => `${key}=${value}`).join("  "));
  const warnings = summary.warnings || [];
  $("warnings").hidden = warnings.length === 0;
  setText("warnings", warnings.map((warning) => `warning: ${warning}`).join("\n"));
  setText("grammar", summary.grammar + (summary.grammar_truncated ? "\n… (truncated)" : ""));
  const download = $("download");
  download.href = `/api/artifact/${summary.id}`;
  download.setAttribute("download", `moonmaskc-${summary.kind}.npz`);
  download.setAttribute("aria-disabled", "false");
  setText("experiment-command", `moonmaskc sample moonmaskc-${summary.kind}.npz -n ${intValue("exp-count", 30)} --seed ${intValue("exp-seed", 42)} --max-tokens ${intValue("exp-max-tokens", 256)}`);
  document.body.dataset.compile = "ok";
  $("token-search").value = "";
  setDecoderEnabled(true);
  resetLanes();
}

function showCompileError(detail) {
  app.compiled = null;
  document.body.dataset.compile = "error";
  const where = detail.line ? ` (line ${detail.line}, column ${detail.column})` : "";
  setText("error-message", `${detail.type ? detail.type + " error: " : ""}${detail.message}${where}`);
  $("error").hidden = false;
  $("error-goto").hidden = detail.start === undefined;
  if (detail.start !== undefined) editor.setError(detail.start, detail.end);
  else editor.clearError();
  setText("compile-status", "not compiled: see the error below the editor");
  for (const id of ["stat-states", "stat-accepting", "stat-classes", "stat-time"]) setText(id, "–");
  $("download").setAttribute("aria-disabled", "true");
  $("download").href = "#";
  setDecoderEnabled(false);
  app.lanes = null;
  renderLanes();
  renderState(null);
}

function setDecoderEnabled(enabled) {
  for (const id of ["step", "play", "reset", "run-experiment", "token-search"]) $(id).disabled = !enabled;
}

// Presets ----------------------------------------------------------------------------------------

function loadPreset(key) {
  const preset = app.info.presets.find((item) => item.key === key);
  if (!preset) return;
  $("preset").value = key;
  setKind(preset.kind);
  editor.value = preset.source;
  if (preset.options.whitespace) $("whitespace").value = preset.options.whitespace;
  if (preset.options.max_depth !== undefined) $("max-depth").value = preset.options.max_depth;
  compileNow();
}

function onKindChange() {
  updateOptionFields();
  const unchanged = app.info.presets.find((item) => item.source === editor.value);
  const first = app.info.presets.find((item) => item.kind === kind());
  if (unchanged && first) loadPreset(first.key);
  else compileNow();
}

// The decoder lanes ------------------------------------------------------------------------------

function newLane(mode) {
  const start = app.compiled.start;
  return {
    mode,
    state: start,
    steps: [],
    path: [{ state: start, accepting: false, distance: 0, start: true, token: null }],
    done: start === 0,
    note: start === 0 ? "the language is empty: nothing to decode" : "ready",
  };
}

function resetLanes() {
  stopPlaying();
  app.pendingSteps = 0;
  if (!app.compiled) return;
  app.lanes = { masked: newLane("masked"), unmasked: newLane("unmasked") };
  renderLanes();
  refreshState();
}

function laneDone(lane) {
  return lane.done;
}

async function stepLane(lane, token) {
  const body = {
    id: app.compiled.id,
    state: lane.state,
    mode: lane.mode,
    seed: intValue("seed", 42),
    step: lane.steps.length,
    max_tokens: intValue("max-tokens", 256),
  };
  if (token !== undefined) body.token = token;
  const result = await api("/api/step", body);
  lane.steps.push(result);
  lane.state = result.state;
  lane.path.push({ state: result.state, accepting: result.accepting, distance: result.distance, start: false, token: result.text });
  const count = lane.steps.length;
  const cap = app.info.limits.unmasked_cap ?? 64;
  if (result.token === null) {
    lane.done = true;
    lane.note = "no token is allowed here";
  } else if (result.finished) {
    lane.done = true;
    lane.note = `finished: eos in an accepting state after ${count} tokens; the text is valid`;
  } else if (result.dead) {
    lane.done = true;
    lane.deadStep = count;
    lane.note = `fell into the dead state at step ${count}: ${JSON.stringify(result.text)} cannot continue the text`;
  } else if (lane.mode === "unmasked" && count >= cap) {
    lane.done = true;
    lane.note = `${count} tokens without eos: stopped at the cap, as moonmaskc sample does`;
  } else if (lane.mode === "masked" && count >= intValue("max-tokens", 256) * 4 + 64) {
    lane.done = true;
    lane.note = `${count} tokens without finishing: stopped at the hard cap`;
  } else {
    lane.note = `${count} token${count === 1 ? "" : "s"}, state ${result.state}${result.accepting ? " (accepting)" : ""}`;
  }
}

async function stepBoth() {
  if (!app.lanes) return;
  if (app.busy) {
    app.pendingSteps += 1; // a click while a step is on its way is kept, not lost
    return;
  }
  const lanes = Object.values(app.lanes).filter((lane) => !laneDone(lane));
  if (lanes.length === 0) {
    stopPlaying();
    return;
  }
  app.busy = true;
  try {
    await Promise.all(lanes.map((lane) => stepLane(lane)));
  } catch (error) {
    reportDecoderError(error);
  } finally {
    app.busy = false;
  }
  renderLanes();
  await refreshState();
  if (Object.values(app.lanes || {}).every(laneDone)) {
    stopPlaying();
    app.pendingSteps = 0;
  } else if (app.pendingSteps > 0) {
    app.pendingSteps -= 1;
    await stepBoth();
  }
}

async function chooseToken(token) {
  if (!app.lanes || app.busy) return;
  const lane = app.lanes.masked;
  if (lane.done) return;
  app.busy = true;
  try {
    await stepLane(lane, token);
  } catch (error) {
    reportDecoderError(error);
  } finally {
    app.busy = false;
  }
  renderLanes();
  await refreshState();
}

function reportDecoderError(error) {
  stopPlaying();
  const detail = error instanceof ApiError ? error.detail : { message: String(error) };
  if (detail.type === "not_found") {
    compileNow();
    return;
  }
  setText("status-masked", `error: ${detail.message}`);
}

function togglePlay() {
  if (app.playing) {
    stopPlaying();
    return;
  }
  if (!app.lanes) return;
  if (Object.values(app.lanes).every(laneDone)) resetLanes();
  app.playing = true;
  setText("play", "Pause");
  $("play").append(" ", Object.assign(document.createElement("kbd"), { textContent: "P" }));
  const loop = async () => {
    while (app.playing) {
      await stepBoth();
      await new Promise((resolve) => setTimeout(resolve, PLAY_DELAY_MS));
    }
  };
  loop();
}

function stopPlaying() {
  app.playing = false;
  const play = $("play");
  play.textContent = "Play ";
  play.append(Object.assign(document.createElement("kbd"), { textContent: "P" }));
}

function renderLanes() {
  for (const mode of ["masked", "unmasked"]) {
    const output = $(`output-${mode}`);
    output.replaceChildren();
    const lane = app.lanes ? app.lanes[mode] : null;
    $(`lane-${mode}`).dataset.done = lane && lane.done ? "true" : "false";
    $(`lane-${mode}`).dataset.steps = lane ? String(lane.steps.length) : "0";
    if (!lane) {
      setText(`status-${mode}`, "");
      continue;
    }
    lane.steps.forEach((step, index) => {
      const span = document.createElement("span");
      span.className = "tok";
      if (step.eos) {
        span.classList.add("eos");
        span.textContent = "⟨eos⟩";
      } else {
        span.textContent = printable(step.text);
      }
      if (step.dead) span.classList.add("dead");
      span.title = `step ${index + 1}: token ${step.token} ${JSON.stringify(step.text)} → state ${step.state}`;
      output.append(span);
    });
    const status = $(`status-${mode}`);
    status.textContent = lane.note;
    status.className = `lane-status${lane.deadStep ? " bad" : lane.done && !lane.deadStep && lane.note.startsWith("finished") ? " good" : ""}`;
  }
}

// The current state ------------------------------------------------------------------------------

async function refreshState() {
  if (!app.compiled || !app.lanes) return;
  const seq = ++app.stateSeq;
  const lane = app.lanes.masked;
  try {
    const description = await api("/api/state", {
      id: app.compiled.id,
      state: lane.state,
      query: $("token-search").value,
      limit: TOKENS_LISTED,
    });
    if (seq !== app.stateSeq) return;
    if (lane.path.length === 1) Object.assign(lane.path[0], description.neighbourhood.center);
    renderState(description);
  } catch (error) {
    if (seq === app.stateSeq) reportDecoderError(error);
  }
}

function renderState(description) {
  const list = $("token-list");
  list.replaceChildren();
  if (!description) {
    for (const id of ["state-id", "allowed-count", "distance", "accepting", "completion"]) setText(id, "–");
    setText("token-note", "");
    drawGraph($("graph"), null, []);
    return;
  }
  setText("state-id", `${description.state}${description.start ? " (start)" : ""}${description.dead ? " (dead)" : ""}`);
  setText("allowed-count", description.allowed_count.toLocaleString("en"));
  setText("distance", description.distance < 0 ? "none (dead)" : `${description.distance} byte${description.distance === 1 ? "" : "s"}`);
  setText("accepting", description.accepting ? "yes" : "no");
  setText("completion", description.shortest_completion === null ? "–" : JSON.stringify(description.shortest_completion));
  drawGraph($("graph"), description.neighbourhood, app.lanes.masked.path);
  const lane = app.lanes.masked;
  const query = $("token-search").value;
  let note = `${description.matching_count.toLocaleString("en")} ${query ? "matching" : "allowed"}`;
  if (description.matching_count > description.tokens.length) note += `, the first ${description.tokens.length} shown: search to narrow`;
  if (lane.done) note += lane.note.startsWith("finished") ? ". Finished: Reset to start again." : ". This lane is done: Reset to start again.";
  setText("token-note", note);
  for (const token of description.tokens) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = `token${token.eos ? " eos" : ""}`;
    button.dataset.token = String(token.id);
    button.textContent = token.eos ? `⟨eos⟩ ${token.text}` : visible(token.text);
    button.title = `token ${token.id}: ${JSON.stringify(token.text)}`;
    button.disabled = lane.done;
    button.addEventListener("click", () => chooseToken(token.id));
    item.append(button);
    list.append(item);
  }
}

// The experiment ---------------------------------------------------------------------------------

async function runExperiment() {
  if (!app.compiled) return;
  const count = intValue("exp-count", 30);
  const seed = intValue("exp-seed", 42);
  const maxTokens = intValue("exp-max-tokens", 256);
  setText("experiment-status", `sampling ${count} masked and ${count} unmasked…`);
  $("experiment-result").replaceChildren();
  $("run-experiment").disabled = true;
  try {
    const result = await api("/api/sample", { id: app.compiled.id, count, seed, max_tokens: maxTokens });
    renderExperiment(result);
    setText("experiment-status", `done: ${count} samples per strategy, seed ${seed}, checked with ${result.judge}`);
  } catch (error) {
    setText("experiment-status", `error: ${error instanceof ApiError ? error.detail.message : error}`);
  } finally {
    $("run-experiment").disabled = !app.compiled;
  }
}

function cell(tag, text, className) {
  const node = document.createElement(tag);
  node.textContent = text;
  if (className) node.className = className;
  return node;
}

function renderExperiment(result) {
  const container = $("experiment-result");
  const table = document.createElement("table");
  table.className = "results";
  table.id = "experiment-table";
  const head = document.createElement("tr");
  for (const name of ["strategy", "valid", "finished", "mean tokens", "mean states visited"]) head.append(cell("th", name));
  table.append(head);
  for (const name of ["masked", "unmasked"]) {
    const report = result[name];
    const row = document.createElement("tr");
    row.dataset.strategy = name;
    row.append(
      cell("th", name === "masked" ? "masked" : `unmasked (cap ${result.unmasked_cap} tokens)`),
      cell("td", `${report.valid}/${result.count}`, `valid ${report.valid === result.count ? "good" : report.valid === 0 ? "bad" : ""}`),
      cell("td", `${report.finished}/${result.count}`, "finished"),
      cell("td", report.mean_tokens.toFixed(1)),
      cell("td", report.mean_states.toFixed(1)),
    );
    table.append(row);
  }
  container.append(table);
  const samples = document.createElement("div");
  samples.className = "samples";
  for (const name of ["masked", "unmasked"]) {
    const block = document.createElement("div");
    block.append(cell("h3", `${name}: the first samples`));
    const list = document.createElement("ol");
    for (const sample of result[name].samples) {
      const item = document.createElement("li");
      item.append(cell("span", sample.valid ? "valid" : "invalid", sample.valid ? "badge good" : "badge bad"));
      item.append(cell("code", sample.text === "" ? "∅" : sample.text));
      list.append(item);
    }
    block.append(list);
    samples.append(block);
  }
  container.append(samples);
}

// Wiring -----------------------------------------------------------------------------------------

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLElement && target.closest("input, textarea, select, [contenteditable]")) return;
  const key = event.key.toLowerCase();
  if (key === "s") stepBoth();
  else if (key === "p") togglePlay();
  else if (key === "r") resetLanes();
  else return;
  event.preventDefault();
}

async function start() {
  try {
    app.info = await api("/api/info");
  } catch (error) {
    setText("compile-status", `error: ${error instanceof ApiError ? error.detail.message : error}`);
    return;
  }
  const info = app.info;
  setText("version", `moonmaskc ${info.version}`);
  for (const preset of info.presets) {
    $("preset").append(new Option(preset.label, preset.key));
  }
  $("preset").append(new Option("(edited)", "", false, false));
  for (const vocabulary of info.vocabularies) {
    $("vocabulary").append(new Option(vocabulary.label, vocabulary.key));
  }
  $("vocabulary").value = info.default_vocabulary;
  $("max-states").value = info.limits.max_states;
  $("max-states").max = info.limits.max_states;
  $("max-depth").max = info.limits.max_depth;
  $("exp-count").max = info.limits.max_samples;
  setText("unmasked-cap", String(info.limits.unmasked_cap ?? 64));

  editor.onInput(() => {
    $("preset").value = info.presets.some((item) => item.source === editor.value) ? $("preset").value : "";
    scheduleCompile();
  });
  $("preset").addEventListener("change", () => $("preset").value && loadPreset($("preset").value));
  for (const radio of document.querySelectorAll('input[name="kind"]')) radio.addEventListener("change", onKindChange);
  for (const id of ["vocabulary", "whitespace", "max-depth", "max-states"]) $(id).addEventListener("change", compileNow);
  $("error-goto").addEventListener("click", () => editor.gotoError());
  $("step").addEventListener("click", stepBoth);
  $("play").addEventListener("click", togglePlay);
  $("reset").addEventListener("click", resetLanes);
  $("seed").addEventListener("change", resetLanes);
  $("run-experiment").addEventListener("click", runExperiment);
  $("exp-count").addEventListener("change", () => {
    const count = intValue("exp-count", 30);
    setText("run-experiment", `Run ${count} + ${count}`);
  });
  $("download").addEventListener("click", (event) => {
    if ($("download").getAttribute("aria-disabled") === "true") event.preventDefault();
  });
  $("token-search").addEventListener("input", () => {
    clearTimeout(app.searchTimer);
    app.searchTimer = setTimeout(refreshState, 200);
  });
  document.addEventListener("keydown", onKey);
  setDecoderEnabled(false);
  renderState(null);
  loadPreset(info.presets[0].key);
}

start();
