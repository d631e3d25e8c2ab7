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
  document.querySelectorAll("table.sortable").forEach(sortable);
  if (typeof Plotly !== "undefined") {
    drawAll();
  } else {
    // plotly.js is a separate file next to the page (reports/assets.py); say
    // so where the charts should be rather than leaving blank boxes.
    if (document.querySelector("div.plot[data-fig]")) {
      var note = document.createElement("p");
      note.className = "notice";
      note.textContent = "The charts need plotly.min.js in the same folder as this page " +
        "(it is written there with the page; copy it along when you move the page).";
      var main = document.querySelector("main");
      main.insertBefore(note, main.firstChild);
    }
    document.body.setAttribute("data-plots-rendered", "0");
  }
})();
