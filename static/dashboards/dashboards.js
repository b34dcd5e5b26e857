/* Utility dashboards: draw every .dash-chart from its json_script figure with the vendored plotly.js
   (static/vendor, no CDN); poll a running evaluation and reload when it is finished.

   The charts in view are drawn first, the others one per task afterwards (a chart scrolled into view
   jumps the queue), so a page of 40+ charts shows its first screen without waiting for the rest. */
(function () {
  "use strict";
  var charts = Array.prototype.slice.call(document.querySelectorAll(".dash-chart"));

  function draw(el) {
    if (el.dataset.drawn) { return; }
    el.dataset.drawn = "1";
    var fig = JSON.parse(document.getElementById(el.dataset.source).textContent);
    Plotly.newPlot(el, fig.data, fig.layout, {displaylogo: false, responsive: true});
  }

  function inView(el) {
    var r = el.getBoundingClientRect();
    return r.bottom > 0 && r.top < (window.innerHeight || document.documentElement.clientHeight);
  }

  function drawAll() {
    var first = charts.filter(inView), queue = charts.filter(function (el) { return !inView(el); });
    first.forEach(draw);
    function pump() {
      var el = queue.shift();
      if (!el) { return; }
      draw(el);
      window.setTimeout(pump, 0);
    }
    if ("IntersectionObserver" in window) {
      var seen = new IntersectionObserver(function (entries) {
        entries.forEach(function (e) {
          if (!e.isIntersecting) { return; }
          seen.unobserve(e.target);
          var i = queue.indexOf(e.target);
          if (i > 0) { queue.splice(i, 1); queue.unshift(e.target); }
        });
      });
      queue.forEach(function (el) { seen.observe(el); });
    }
    window.setTimeout(pump, 0);
  }

  if (charts.length && typeof Plotly !== "undefined") { drawAll(); }

  var box = document.getElementById("eval-progress");
  if (!box) { return; }
  var bar = box.querySelector(".progress span"), stage = box.querySelector(".stage");
  function poll() {
    fetch(box.dataset.statusUrl, {credentials: "same-origin"}).then(function (r) { return r.json(); })
      .then(function (s) {
        if (s.finished) { window.location.reload(); return; }
        bar.style.width = s.progress + "%"; stage.textContent = s.stage;
        window.setTimeout(poll, 1500);
      }).catch(function () { window.setTimeout(poll, 5000); });
  }
  window.setTimeout(poll, 1500);
})();
