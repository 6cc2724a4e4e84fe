// Draws the automaton around the current state as SVG: the path walked so far (token by token) on
// top, then the states one byte behind (left) and one byte ahead (right) of the current state.

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 760;
const RADIUS = 17;
const PATH_Y = 40;
const PATH_SHOWN = 8;
const ROW = 46;

function element(name, attributes = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function clip(text, size) {
  return text.length > size ? text.slice(0, size - 1) + "…" : text;
}

function stateNode(svg, x, y, node, { current = false, small = false } = {}) {
  const group = element("g", {
    class: `state${node.accepting ? " accepting" : ""}${current ? " current" : ""}${node.state === 0 ? " dead" : ""}`,
    "data-state": node.state,
  });
  const radius = small ? RADIUS - 4 : RADIUS;
  group.append(element("title", {}, `state ${node.state}${node.accepting ? ", accepting" : ""}` +
    `${node.start ? ", start" : ""}, distance ${node.distance}`));
  group.append(element("circle", { cx: x, cy: y, r: radius }));
  if (node.accepting) group.append(element("circle", { cx: x, cy: y, r: radius - 4, class: "inner" }));
  group.append(element("text", { x, y: y + 4, class: "state-label" }, String(node.state)));
  if (!small) group.append(element("text", { x, y: y + radius + 12, class: "distance" }, `d=${node.distance}`));
  svg.append(group);
}

function edge(svg, x1, y1, x2, y2, label, fullLabel, { highlight = false } = {}) {
  const dx = x2 - x1;
  const dy = y2 - y1;
  const length = Math.hypot(dx, dy) || 1;
  const ux = dx / length;
  const uy = dy / length;
  const group = element("g", { class: `edge${highlight ? " highlight" : ""}` });
  group.append(element("title", {}, fullLabel));
  group.append(element("line", {
    x1: x1 + ux * RADIUS, y1: y1 + uy * RADIUS, x2: x2 - ux * (RADIUS + 3), y2: y2 - uy * (RADIUS + 3),
    "marker-end": "url(#arrow)",
  }));
  const lx = x1 + dx * 0.5;
  const ly = y1 + dy * 0.5 - 5;
  group.append(element("text", { x: lx, y: ly, class: "edge-label" }, label));
  svg.append(group);
}

function selfLoop(svg, x, y, label, fullLabel) {
  const group = element("g", { class: "edge" });
  group.append(element("title", {}, fullLabel));
  group.append(element("path", {
    d: `M ${x - 9} ${y - RADIUS + 2} C ${x - 30} ${y - 62}, ${x + 30} ${y - 62}, ${x + 9} ${y - RADIUS + 2}`,
    fill: "none", "marker-end": "url(#arrow)",
  }));
  group.append(element("text", { x, y: y - 52, class: "edge-label" }, label));
  svg.append(group);
}

function defs(svg) {
  const marker = element("marker", {
    id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse",
  });
  marker.append(element("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }));
  const container = element("defs");
  container.append(marker);
  svg.append(container);
}

// path: [{state, accepting, distance, start, token}] (token: the text of the token that led there).
export function drawGraph(svg, neighbourhood, path) {
  svg.replaceChildren();
  defs(svg);
  if (!neighbourhood) {
    svg.setAttribute("viewBox", `0 0 ${WIDTH} 60`);
    svg.append(element("text", { x: WIDTH / 2, y: 34, class: "empty" }, "compile a constraint to see its automaton"));
    return;
  }
  // The path, token by token.
  svg.append(element("text", { x: 8, y: 14, class: "caption" }, "path walked (one arrow per token)"));
  const shown = path.slice(-PATH_SHOWN);
  const hidden = path.length - shown.length;
  const step = shown.length > 1 ? Math.min(96, (WIDTH - 80) / (shown.length - 1)) : 0;
  const x0 = hidden > 0 ? 70 : 40;
  if (hidden > 0) svg.append(element("text", { x: 28, y: PATH_Y + 4, class: "more" }, `+${hidden}`));
  shown.forEach((node, index) => {
    const x = x0 + index * step;
    if (index > 0) {
      const tokenText = node.token ?? "";
      edge(svg, x - step, PATH_Y, x, PATH_Y, clip(JSON.stringify(tokenText).slice(1, -1), 11), tokenText, { highlight: true });
    }
    stateNode(svg, x, PATH_Y, node, { current: index === shown.length - 1, small: true });
  });

  // The neighbourhood.
  const top = PATH_Y + 60;
  svg.append(element("text", { x: 8, y: top - 8, class: "caption" }, "one byte behind"));
  svg.append(element("text", { x: WIDTH - 8, y: top - 8, class: "caption end" }, "one byte ahead"));
  const center = neighbourhood.center;
  const loops = neighbourhood.ahead.filter((node) => node.state === center.state);
  const ahead = neighbourhood.ahead.filter((node) => node.state !== center.state);
  const behind = neighbourhood.behind.filter((node) => node.state !== center.state);
  const rows = Math.max(ahead.length, behind.length, 1);
  const height = Math.max(rows * ROW, loops.length ? 90 : ROW);
  const cy = top + 30 + Math.max(0, (height - ROW) / 2) + (loops.length ? 24 : 0);
  const cx = WIDTH / 2;
  const column = (count, index) => top + 30 + (loops.length ? 24 : 0) + (height - count * ROW) / 2 + index * ROW;
  const previous = path.length > 1 ? path[path.length - 2].state : null;
  behind.forEach((node, index) => {
    const y = column(behind.length, index);
    edge(svg, 110, y, cx, cy, node.label, node.full_label, { highlight: node.state === previous });
    stateNode(svg, 90, y, node);
  });
  ahead.forEach((node, index) => {
    const y = column(ahead.length, index);
    edge(svg, cx, cy, WIDTH - 110, y, node.label, node.full_label);
    stateNode(svg, WIDTH - 90, y, node);
  });
  for (const loop of loops) selfLoop(svg, cx, cy, loop.label, loop.full_label);
  stateNode(svg, cx, cy, center, { current: true });
  if (center.start) svg.append(element("text", { x: cx, y: cy - RADIUS - 6 - (loops.length ? 52 : 0), class: "tag" }, "start"));
  if (center.state === 0) {
    svg.append(element("text", { x: cx, y: cy + RADIUS + 30, class: "tag dead-tag" }, "dead state: nothing can follow"));
  } else if (!ahead.length && !loops.length) {
    svg.append(element("text", { x: cx, y: cy + RADIUS + 30, class: "tag" }, "no byte may follow: only eos"));
  }
  const bottom = top + 30 + height + (loops.length ? 24 : 0);
  if (neighbourhood.more_behind) {
    svg.append(element("text", { x: 90, y: bottom + 4, class: "more" }, `+${neighbourhood.more_behind} more`));
  }
  if (neighbourhood.more_ahead) {
    svg.append(element("text", { x: WIDTH - 90, y: bottom + 4, class: "more" }, `+${neighbourhood.more_ahead} more`));
  }
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${bottom + 16}`);
}
