/* kvperf reports: draw the figures from their embedded JSON, make tables sortable.
   Sets <body data-plots-rendered="N"> when every figure has been drawn. */
(function () {
  "use strict";
  function drawAll() {
    var divs = document.querySelectorAll("div.plot[data-fig]");
    var jobs = [];
    divs.forEach(function (div) {
      var src = document.getElementById(div.getAttribute("data-fig"));
      var fig = JSON.parse(src.textContent);
      jobs.push(Plotly.newPlot(div, fig.data, fig.layout,
        {responsive: true, displaylogo: false, scrollZoom: false}));
    });
    return Promise.all(jobs).then(function () {
      document.body.setAttribute("data-plots-rendered", String(jobs.length));
    });
  }
  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("data-sort") !== "asc";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("data-sort"); });
        th.setAttribute("data-sort", asc ? "asc" : "desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var num = th.classList.contains("num");
        function key(r) {
          var t = r.cells[col] ? r.cells[col].textContent : "";
          if (!num) { return t; }
          var v = parseFloat(t.replace(/[\u202f\s]/g, "").replace("\u2212", "-"));
          return isNaN(v) ? -Infinity : v;
        }
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          var c = num ? x - y : String(x).localeCompare(String(y), undefined, {numeric: true});
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  // Large parts travel gzipped and base64-encoded (reports/assets.py,
  // reports/blocks.py): inflated here by the browser's DecompressionStream.
  function inflate(b64) {
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser cannot inflate the page's packed parts " +
        "(DecompressionStream: Chromium 80+, Firefox 113+, Safari 16.4+)"));
    }
    var bin = atob(b64.trim());
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }
  function loadPlotly() {
    if (typeof Plotly !== "undefined") { return Promise.resolve(); }
    var el = document.getElementById("kvperf-plotly-gz");
    if (!el) { return Promise.reject(new Error("no plotly.js in this page")); }
    return inflate(el.textContent).then(function (code) {
      var s = document.createElement("script");
      s.text = code;
      document.head.appendChild(s);
    });
  }
  function unpack(body) {
    return inflate(body.getAttribute("data-rows-gz")).then(function (text) {
      var t = JSON.parse(text);
      var frag = document.createDocumentFragment();
      t.rows.forEach(function (row, r) {
        var tr = document.createElement("tr");
        if (t.classes[r]) { tr.className = t.classes[r]; }
        row.forEach(function (cell, c) {
          var td = document.createElement("td");
          if (t.numeric[c]) { td.className = "num"; }
          td.textContent = cell;
          tr.appendChild(td);
        });
        frag.appendChild(tr);
      });
      body.appendChild(frag);
      body.removeAttribute("data-rows-gz");
    });
  }
  var tables = Array.prototype.map.call(document.querySelectorAll("tbody[data-rows-gz]"), unpack);
  Promise.all(tables).then(function () {
    document.querySelectorAll("table.sortable").forEach(sortable);
  });
  if (!document.querySelector("div.plot[data-fig]")) {
    Promise.all(tables).then(function () {
      document.body.setAttribute("data-plots-rendered", "0");
    });
    return;
  }
  Promise.all(tables).then(loadPlotly).then(drawAll).catch(function (err) {
    var note = document.createElement("p");
    note.className = "notice";
    note.textContent = "The charts could not be drawn: " + err.message;
    var main = document.querySelector("main");
    main.insertBefore(note, main.firstChild);
    document.body.setAttribute("data-plots-rendered", "0");
  });
})();
