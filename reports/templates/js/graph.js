(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var island = document.getElementById("graph-data");
  var svg = document.getElementById("gv-svg");
  if (!island || !svg) { return; }
  var data = JSON.parse(island.textContent);
  var nojs = document.getElementById("gv-nojs");
  if (nojs) { nojs.hidden = true; }
  var GAP = 16, MIN_COL = 58, PAD = 14, ROW = 38, LEFT = 58, RIGHT = 16, TOP = 84,
    BOTTOM = 92, TOP_EDGES = 8, LABEL_CHARS = 14, PRUNABLE = { feature: 1, error: 1, bias: 1, constant: 1 };
  var body = document.getElementById("gv-panel-body");
  var slider = document.getElementById("gv-threshold");
  var sliderValue = document.getElementById("gv-threshold-value");
  var countEl = document.getElementById("gv-count");
  var nameBox = document.getElementById("gv-group-name");
  var groupList = document.getElementById("gv-group-list");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    return e;
  }
  function clear(e) { while (e.firstChild) { e.removeChild(e.firstChild); } }
  function fmt(x) {
    if (x === null || x === undefined || typeof x !== "number" || !isFinite(x)) {
      return "\u2014";
    }
    if (x === 0) { return "0"; }
    var a = Math.abs(x);
    var s = (a < 1e-3 || a >= 1e5) ? x.toExponential(2) : String(Number(x.toPrecision(4)));
    return s.replace("-", "\u2212");
  }
  function signed(x) { return (typeof x === "number" && x > 0 ? "+" : "") + fmt(x); }

  // ----------------------------------------------------------------- the graph
  var nodes = data.nodes;
  var byId = {};
  nodes.forEach(function (n) { byId[n.id] = n; n.ins = []; n.outs = []; n.visible = true; });
  var edges = [];
  data.edges.forEach(function (e) {
    var s = byId[e[0]], t = byId[e[1]];
    if (!s || !t) { return; }
    var edge = { source: s, target: t, weight: e[2], influence: e[3] || 0 };
    edges.push(edge);
    s.outs.push(edge);
    t.ins.push(edge);
  });
  function byInfluence(a, b) { return b.influence - a.influence; }
  nodes.forEach(function (n) { n.ins.sort(byInfluence); n.outs.sort(byInfluence); });

  function tokenText(p) {
    return p >= 0 && p < data.tokens.length ? data.tokens[p] : "";
  }
  function values(n) {
    var rows = [["kind", n.kind]];
    if (n.kind === "target") {
      rows.push(["target", n.name]);
      rows.push(["weight (probability)", fmt(n.weight)]);
      rows.push(["position", n.position + " (" + data.exact[n.position] + ")"]);
      return rows;
    }
    rows.push(["layer", n.kind === "embedding" ? "embedding" : String(n.layer)]);
    rows.push(["position", n.kind === "bias" ? "every position \u2265 1"
      : n.kind === "constant" ? "every position"
      : n.position + " (" + data.exact[n.position] + ")"]);
    if (n.kind === "feature") {
      rows.push(["feature", String(n.feature)]);
      rows.push(["activation", fmt(n.activation)]);
    }
    rows.push(["influence", fmt(n.influence)]);
    rows.push(["cumulative influence", fmt(n.cumulative)]);
    rows.push(["total effect", signed(n.effect)]);
    return rows;
  }
  function nodeTitle(n) {
    return n.label + "\n" + values(n).map(function (r) { return r[0] + ": " + r[1]; })
      .join("\n");
  }

  // ---------------------------------------------------------------- the layout
  // bias and constant nodes (every position) sit in a column of their own on the left
  function everywhere(n) { return n.kind === "bias" || n.kind === "constant"; }
  var hasBias = nodes.some(everywhere);
  var shift = hasBias ? 1 : 0;
  var nCols = data.tokens.length + shift;
  function colOf(n) { return everywhere(n) ? 0 : n.position + shift; }
  var cells = {};
  nodes.forEach(function (n) {
    var key = colOf(n) + "|" + n.layer;
    (cells[key] = cells[key] || []).push(n);
  });
  var widths = [];
  for (var c = 0; c < nCols; c += 1) { widths.push(MIN_COL); }
  Object.keys(cells).forEach(function (k) {
    var col = Number(k.split("|")[0]);
    widths[col] = Math.max(widths[col], cells[k].length * GAP + PAD);
  });
  var starts = [], acc = LEFT;
  widths.forEach(function (w) { starts.push(acc); acc += w; });
  var width = acc + RIGHT;
  var height = TOP + (data.nLayers + 2) * ROW + BOTTOM;
  function yOf(layer) { return TOP + (data.nLayers - layer) * ROW + ROW / 2; }
  function centre(col) { return starts[col] + widths[col] / 2; }
  Object.keys(cells).forEach(function (k) {
    var list = cells[k].sort(function (a, b) { return a.id - b.id; });
    var mid = centre(colOf(list[0]));
    list.forEach(function (n, j) {
      n.x = mid + (j - (list.length - 1) / 2) * GAP;
      n.y = yOf(n.layer);
    });
  });
  var maxInf = 0, maxW = 0;
  nodes.forEach(function (n) {
    if (n.kind !== "target" && n.influence > maxInf) { maxInf = n.influence; }
  });
  edges.forEach(function (e) { maxW = Math.max(maxW, e.influence); });
  nodes.forEach(function (n) {
    n.r = n.kind === "target" ? 7 : 3 + 4.5 * Math.sqrt(maxInf > 0 ? n.influence / maxInf : 0);
  });

  // ----------------------------------------------------------------- drawing
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  var canvas = svg.parentNode;
  var fitButton = document.getElementById("gv-fit");
  function setFit(on) {
    canvas.classList.toggle("gv-fitted", on);
    fitButton.setAttribute("aria-pressed", on ? "true" : "false");
    fitButton.textContent = on ? "actual size" : "fit to width";
  }
  fitButton.addEventListener("click", function () {
    setFit(!canvas.classList.contains("gv-fitted"));
  });
  setFit(width > canvas.clientWidth && canvas.clientWidth >= 0.55 * width);
  var axes = sv("g", { "class": "gv-axes" });
  for (var layer = -1; layer <= data.nLayers; layer += 1) {
    var y = yOf(layer);
    axes.appendChild(sv("line", { x1: LEFT - 4, x2: width - RIGHT, y1: y, y2: y,
      "class": "gv-grid" }));
    var lab = sv("text", { x: LEFT - 8, y: y + 4, "class": "gv-axis", "text-anchor": "end" });
    lab.textContent = layer < 0 ? "emb" : (layer === data.nLayers ? "target" : "L" + layer);
    axes.appendChild(lab);
  }
  var base = height - BOTTOM + 8;
  for (var col = 0; col < nCols; col += 1) {
    var x = centre(col);
    var t = sv("text", { x: x, y: base + 4, "class": "gv-axis gv-tok", "text-anchor": "end",
      transform: "rotate(-40 " + x + " " + (base + 4) + ")" });
    var p = col - shift;
    t.textContent = hasBias && col === 0 ? "biases" : tokenText(p);
    if (!(hasBias && col === 0)) {
      var tt = sv("title");
      tt.textContent = "position " + p + ": " + data.exact[p];
      t.appendChild(tt);
    }
    axes.appendChild(t);
    if (col > 0) {
      axes.appendChild(sv("line", { x1: starts[col], x2: starts[col], y1: TOP,
        y2: height - BOTTOM, "class": "gv-sep" }));
    }
  }
  nodes.forEach(function (n) {
    if (n.kind !== "target") { return; }
    var ty = n.y - n.r - 4;
    var name = n.name.replace(/^logit /, "");
    if (name.length > LABEL_CHARS) { name = name.slice(0, LABEL_CHARS - 1) + "…"; }
    var lt = sv("text", { x: n.x + 3, y: ty, "class": "gv-axis gv-tok", "text-anchor": "start",
      transform: "rotate(-60 " + (n.x + 3) + " " + ty + ")" });
    lt.textContent = name;
    var ttl = sv("title");
    ttl.textContent = n.name;
    lt.appendChild(ttl);
    axes.appendChild(lt);
  });
  svg.appendChild(axes);
  var edgeLayer = sv("g", { "class": "gv-edges" });
  edges.forEach(function (e) {
    var line = sv("line", { x1: e.source.x, y1: e.source.y, x2: e.target.x, y2: e.target.y,
      stroke: e.weight >= 0 ? data.positive : data.negative,
      "stroke-width": (0.6 + 3.4 * (maxW > 0 ? e.influence / maxW : 0)).toFixed(2),
      "class": "gv-edge " + (e.weight >= 0 ? "gv-pos" : "gv-neg") });
    var title = sv("title");
    title.textContent = e.source.label + " \u2192 " + e.target.label + "\nweight: "
      + signed(e.weight) + "\ninfluence: " + fmt(e.influence);
    line.appendChild(title);
    e.el = line;
    edgeLayer.appendChild(line);
  });
  svg.appendChild(edgeLayer);
  var nodeLayer = sv("g", { "class": "gv-nodes" });
  nodes.forEach(function (n) {
    var g = sv("g", { "class": "gv-node gv-" + n.kind, "data-id": n.id, tabindex: 0,
      role: "button" });
    g.setAttribute("aria-label", n.label);
    n.rings = sv("g", { "class": "gv-rings" });
    g.appendChild(n.rings);
    g.appendChild(sv("circle", { cx: n.x, cy: n.y, r: n.r.toFixed(2),
      fill: data.colours[n.kind] || "#888", "class": "gv-dot" }));
    var title = sv("title");
    title.textContent = nodeTitle(n);
    g.appendChild(title);
    g.addEventListener("click", function () { select(n.id); });
    g.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(n.id); }
    });
    n.el = g;
    nodeLayer.appendChild(g);
  });
  svg.appendChild(nodeLayer);

  // -------------------------------------------------------------- selection
  var selected = null;
  function select(id) {
    var n = byId[id];
    selected = n && n.visible ? n : null;
    nodes.forEach(function (m) { m.el.classList.toggle("gv-sel", m === selected); });
    svg.classList.toggle("gv-has-sel", selected !== null);
    edges.forEach(function (e) {
      e.el.classList.toggle("gv-hl", selected !== null
        && (e.source === selected || e.target === selected));
    });
    renderPanel();
  }

  function edgeList(title, list, other, id) {
    var shown = list.filter(function (e) { return other(e).visible; });
    var head = el("h4", null, title + " (" + Math.min(TOP_EDGES, shown.length) + " of "
      + shown.length + ", by influence)");
    var ol = el("ol", "gv-edge-list");
    ol.id = id;
    shown.slice(0, TOP_EDGES).forEach(function (e) {
      var o = other(e);
      var li = el("li");
      var b = el("button", "gv-link", o.label);
      b.type = "button";
      b.setAttribute("data-node", String(o.id));
      b.title = nodeTitle(o);
      b.addEventListener("click", function () { select(o.id); });
      li.appendChild(b);
      li.appendChild(el("span", "gv-w " + (e.weight >= 0 ? "gv-pos" : "gv-neg"),
        signed(e.weight)));
      ol.appendChild(li);
    });
    if (!shown.length) { ol.appendChild(el("li", "gv-empty", "none")); }
    return [head, ol];
  }

  function contextsOf(n) {
    var list = (n.key && data.contexts[n.key]) || [];
    if (!list.length) { return null; }
    var top = 0;
    list.forEach(function (c) {
      c.acts.forEach(function (a) { if (typeof a === "number" && a > top) { top = a; } });
    });
    var wrap = el("div", "gv-ctxs");
    wrap.appendChild(el("h4", null, "Top activating contexts"));
    list.forEach(function (c) {
      var row = el("div", "gv-ctx");
      var peak = -Infinity, at = -1;
      c.acts.forEach(function (a, j) {
        if (typeof a === "number" && a > peak) { peak = a; at = j; }
      });
      row.appendChild(el("span", "gv-act", fmt(at >= 0 ? peak : null)));
      c.tokens.forEach(function (tok, j) {
        var a = c.acts[j];
        var ratio = typeof a === "number" && top > 0 ? Math.max(0, Math.min(1, a / top)) : 0;
        var s = el("span", "gv-t" + (j === at ? " gv-max" : ""), tok);
        s.style.backgroundColor = "rgba(230, 97, 1, " + (0.85 * ratio).toFixed(3) + ")";
        s.title = c.exact[j] + " \u00b7 act " + fmt(a);
        row.appendChild(s);
      });
      wrap.appendChild(row);
    });
    return wrap;
  }

  function renderPanel() {
    clear(body);
    if (!selected) {
      body.appendChild(el("p", "gv-hint", "Click a node to see its values, explanation, "
        + "contexts and strongest edges."));
      return;
    }
    var n = selected;
    var h = el("h3", "gv-label", n.label);
    h.id = "gv-label";
    var sw = el("span", "gv-swatch");
    sw.style.backgroundColor = data.colours[n.kind] || "#888";
    h.insertBefore(sw, h.firstChild);
    body.appendChild(h);
    var dl = el("dl", "gv-values");
    values(n).forEach(function (r) {
      var d = el("div");
      d.appendChild(el("dt", null, r[0]));
      d.appendChild(el("dd", null, r[1]));
      dl.appendChild(d);
    });
    body.appendChild(dl);
    var expl = n.key ? data.explanations[n.key] : null;
    if (expl) {
      var p = el("p", "gv-expl");
      p.id = "gv-expl";
      p.appendChild(el("span", "gv-lbl", "explanation"));
      p.appendChild(document.createTextNode(" " + expl));
      body.appendChild(p);
    }
    var pin = el("button", "gv-pin", pinText(n));
    pin.type = "button";
    pin.id = "gv-pin";
    pin.addEventListener("click", function () { togglePin(n); });
    body.appendChild(pin);
    var ctx = contextsOf(n);
    if (ctx) { body.appendChild(ctx); }
    edgeList("Inputs", n.ins, function (e) { return e.source; }, "gv-inputs")
      .forEach(function (x) { body.appendChild(x); });
    edgeList("Outputs", n.outs, function (e) { return e.target; }, "gv-outputs")
      .forEach(function (x) { body.appendChild(x); });
  }

  // ---------------------------------------------------------- the threshold
  function applyThreshold() {
    var v = Number(slider.value);
    var shown = 0;
    nodes.forEach(function (n) {
      n.visible = !PRUNABLE[n.kind] || n.cumulative <= v + 1e-9;
      n.el.classList.toggle("gv-hidden", !n.visible);
      if (n.visible) { shown += 1; }
    });
    edges.forEach(function (e) {
      e.el.classList.toggle("gv-hidden", !(e.source.visible && e.target.visible));
    });
    sliderValue.textContent = v.toFixed(2);
    countEl.textContent = shown + " of " + nodes.length + " nodes shown";
    if (selected && !selected.visible) { select(null); } else { renderPanel(); }
  }
  slider.addEventListener("input", applyThreshold);

  // ---------------------------------------------------------- supernodes
  var groups = [];
  var current = -1;
  function colourOf(i) { return data.groupColours[i % data.groupColours.length]; }
  function newGroup(name) {
    groups.push({ name: name || "group " + (groups.length + 1), nodes: [] });
    current = groups.length - 1;
    nameBox.value = groups[current].name;
    renderGroups();
  }
  function pinText(n) {
    if (current < 0) { return "pin to a new group"; }
    var g = groups[current];
    return (g.nodes.indexOf(n.id) >= 0 ? "unpin from " : "pin to ") + "\u201c" + g.name
      + "\u201d";
  }
  function togglePin(n) {
    if (current < 0) { newGroup(nameBox.value.trim()); }
    var g = groups[current];
    var at = g.nodes.indexOf(n.id);
    if (at >= 0) { g.nodes.splice(at, 1); } else { g.nodes.push(n.id); }
    renderGroups();
    renderPanel();
  }
  function renderRings() {
    nodes.forEach(function (n) { clear(n.rings); });
    groups.forEach(function (g, i) {
      g.nodes.forEach(function (id) {
        var n = byId[id];
        var k = n.rings.childNodes.length;
        n.rings.appendChild(sv("circle", { cx: n.x, cy: n.y, r: (n.r + 3 + 3 * k).toFixed(2),
          fill: "none", stroke: colourOf(i), "stroke-width": 2, "class": "gv-ring",
          "data-group": i }));
      });
    });
  }
  function renderGroups() {
    clear(groupList);
    groups.forEach(function (g, i) {
      var li = el("li", i === current ? "gv-current" : null);
      var b = el("button", "gv-group", g.name + " (" + g.nodes.length + ")");
      b.type = "button";
      var sw = el("span", "gv-swatch");
      sw.style.backgroundColor = colourOf(i);
      b.insertBefore(sw, b.firstChild);
      b.addEventListener("click", function () {
        current = i;
        nameBox.value = g.name;
        renderGroups();
        renderPanel();
      });
      li.appendChild(b);
      groupList.appendChild(li);
    });
    renderRings();
  }
  nameBox.addEventListener("input", function () {
    if (current < 0) { newGroup(nameBox.value); return; }
    groups[current].name = nameBox.value;
    renderGroups();
    if (selected) { document.getElementById("gv-pin").textContent = pinText(selected); }
  });
  document.getElementById("gv-new-group").addEventListener("click", function () {
    newGroup("");
    renderPanel();
    nameBox.focus();
  });
  document.getElementById("gv-save-groups").addEventListener("click", function () {
    var out = { prompt: data.prompt, groups: groups.map(function (g) {
      return { name: g.name, nodes: g.nodes.slice() };
    }) };
    var blob = new Blob([JSON.stringify(out, null, 2)], { type: "application/json" });
    var url = URL.createObjectURL(blob);
    var a = document.createElement("a");
    a.href = url;
    a.download = "graph-groups.json";
    document.body.appendChild(a);
    a.click();
    document.body.removeChild(a);
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  });

  applyThreshold();
  renderGroups();
})();
