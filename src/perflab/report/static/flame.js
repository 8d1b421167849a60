// The study report's differential flame graph (report/pathlength_diff.py): drawn from the
// data block beside each graph, in the page, with nothing fetched. A frame's width is its
// instructions per command in the new configuration (or the base's: the toggle), its colour the
// change from base to new (red: grew, blue: shrank, the deeper the larger the change against
// the frame's own size). A click zooms to a frame (its ancestors stay above, full width; a click
// on one zooms out to it); "#flame=NAME" in the address zooms to the largest frame of that name.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var ROW = 17, WIDTH = 1200, CHAR = 6.6;

  function number(x) {
    var rounded = Math.abs(x) >= 100 ? Math.round(x) : Math.round(x * 10) / 10;
    return rounded.toLocaleString("en-US");
  }

  function colour(a, b) {
    var m = Math.max(a, b);
    var r = m > 0 ? (b - a) / m : 0;
    if (Math.abs(r) < 0.005) { return "rgb(228,224,214)"; }
    var t = Math.min(1, 0.25 + 0.75 * Math.abs(r));
    var fade = Math.round(235 - 160 * t);
    return r > 0 ? "rgb(240," + fade + "," + fade + ")" : "rgb(" + fade + "," + fade + ",240)";
  }

  function graph(holder, data) {
    var nodes = data.nodes.map(function (n, i) {
      return {index: i, parent: n[0], label: data.labels[n[1]], a: n[2], b: n[3], children: []};
    });
    nodes.forEach(function (n) { if (n.parent >= 0) { nodes[n.parent].children.push(n); } });
    nodes.forEach(function (n) {
      n.depth = n.parent >= 0 ? nodes[n.parent].depth + 1 : 0;
      n.children.sort(function (x, y) { return (y.a + y.b) - (x.a + x.b); });
    });
    var state = {zoom: nodes[0], side: "b"};
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "flame");
    svg.setAttribute("role", "img");
    var controls = document.createElement("p");
    controls.className = "flame-controls";
    var reset = document.createElement("button");
    reset.type = "button";
    reset.textContent = "Zoom out";
    var toggle = document.createElement("button");
    toggle.type = "button";
    var status = document.createElement("span");
    status.className = "note";
    controls.appendChild(reset);
    controls.appendChild(document.createTextNode(" "));
    controls.appendChild(toggle);
    controls.appendChild(document.createTextNode(" "));
    controls.appendChild(status);
    holder.textContent = "";
    holder.appendChild(controls);
    holder.appendChild(svg);

    function value(n) { return state.side === "b" ? n.b : n.a; }

    function frame(n, x, width, y, faded) {
      var g = document.createElementNS(SVG, "g");
      g.setAttribute("class", "frame" + (faded ? " ancestor" : ""));
      g.setAttribute("data-name", n.label[0]);
      var rect = document.createElementNS(SVG, "rect");
      rect.setAttribute("x", x.toFixed(2));
      rect.setAttribute("y", y);
      rect.setAttribute("width", Math.max(width - 0.5, 0.5).toFixed(2));
      rect.setAttribute("height", ROW - 1);
      rect.setAttribute("fill", colour(n.a, n.b));
      if (faded) { rect.setAttribute("opacity", "0.6"); }
      var title = document.createElementNS(SVG, "title");
      var change = n.b - n.a;
      var relative = n.a > 0 ? " (" + (change >= 0 ? "+" : "") + (100 * change / n.a).toFixed(1) + "%)" : "";
      title.textContent = n.label[0] + (n.label[1] ? " -- " + n.label[1] + " (" + n.label[2] + ")" : "") +
        "\n" + data.base + ": " + number(n.a) + "\n" + data.new + ": " + number(n.b) +
        "\nchange: " + (change >= 0 ? "+" : "") + number(change) + relative;
      g.appendChild(title);
      g.appendChild(rect);
      if (width > 3 * CHAR) {
        var text = document.createElementNS(SVG, "text");
        text.setAttribute("x", (x + 3).toFixed(2));
        text.setAttribute("y", y + ROW - 5);
        var chars = Math.floor((width - 6) / CHAR);
        var name = n.label[0];
        text.textContent = name.length > chars ? name.slice(0, Math.max(chars - 2, 1)) + ".." : name;
        g.appendChild(text);
      }
      g.addEventListener("click", function () { zoom(n); });
      svg.appendChild(g);
    }

    function draw() {
      while (svg.firstChild) { svg.removeChild(svg.firstChild); }
      var chain = [];
      for (var up = state.zoom; up.parent >= 0; up = nodes[up.parent]) { chain.unshift(nodes[up.parent]); }
      chain.forEach(function (n, i) { frame(n, 0, WIDTH, i * ROW, true); });
      var top = chain.length, deepest = top;
      var base = value(state.zoom);
      function place(n, x, width, depth) {
        if (width < 0.3) { return; }
        frame(n, x, width, depth * ROW, false);
        deepest = Math.max(deepest, depth);
        var offset = x;
        n.children.forEach(function (c) {
          var w = base > 0 ? WIDTH * value(c) / base : 0;
          place(c, offset, w, depth + 1);
          offset += w;
        });
      }
      place(state.zoom, 0, base > 0 ? WIDTH : 0, top);
      var height = (deepest + 1) * ROW + 2;
      svg.setAttribute("viewBox", "0 0 " + WIDTH + " " + height);
      svg.setAttribute("width", WIDTH);
      svg.setAttribute("height", height);
      holder.setAttribute("data-zoom", state.zoom.label[0]);
      holder.setAttribute("data-side", state.side === "b" ? "new" : "base");
      holder.setAttribute("data-frames", svg.querySelectorAll("g.frame").length);
      toggle.textContent = "Widths: " + (state.side === "b" ? data.new : data.base) + " (switch)";
      status.textContent = state.zoom.parent >= 0 ? "zoomed to " + state.zoom.label[0] : "";
    }

    function zoom(n) { state.zoom = n; draw(); }
    reset.addEventListener("click", function () { zoom(nodes[0]); });
    toggle.addEventListener("click", function () { state.side = state.side === "b" ? "a" : "b"; draw(); });

    var wanted = /(?:^#|&)flame=([^&]+)/.exec(window.location.hash);
    if (wanted) {
      var name = decodeURIComponent(wanted[1]);
      var best = null;
      nodes.forEach(function (n) {
        if (n.label[0] === name && (best === null || n.a + n.b > best.a + best.b)) { best = n; }
      });
      if (best !== null) { state.zoom = best; }
    }
    draw();
  }

  var blocks = document.querySelectorAll("script.flame-data");
  for (var i = 0; i < blocks.length; i++) {
    var holder = document.getElementById(blocks[i].getAttribute("data-target"));
    if (holder) { graph(holder, JSON.parse(blocks[i].textContent)); }
  }
}());
